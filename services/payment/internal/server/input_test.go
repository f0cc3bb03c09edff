package server

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v1 "github.com/tidemq/tide/api/payment/v1"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/api/apitest"
)

// TestServerRefusesBadInput: every client mistake on the Payment API gets
// a 4xx in the one error shape naming the field and why, never a 5xx, and
// debits nothing.
func TestServerRefusesBadInput(t *testing.T) {
	s := startStack(t)
	before := balance(t, s, "u-bob")
	key := func(k string) map[string]string { return map[string]string{"Idempotency-Key": k} }
	pay := func(amount string) string {
		return `{"order_id":"in-1","user_id":"u-bob","amount":` + amount + `}`
	}
	long := strings.Repeat("x", 65)
	apitest.Run(t, s.httpURL, []apitest.Case{
		{Name: "oversized body", Path: "/v1/payments", Body: apitest.Big("order_id", 5<<20), Header: key("in-big"), Code: 413, Reason: api.ReasonBodyTooLarge},
		{Name: "oversized chunked body", Path: "/v1/payments", Body: apitest.Big("order_id", 1<<20), Chunked: true, Header: key("in-big2"), Code: 413, Reason: api.ReasonBodyTooLarge},
		{Name: "form content type", Path: "/v1/payments", Body: pay("1"), ContentType: "application/x-www-form-urlencoded", Header: key("in-ct"), Code: 415, Reason: api.ReasonUnsupportedMediaType},
		{Name: "malformed JSON", Path: "/v1/payments", Body: `{"order_id":"in-1",`, Header: key("in-bad"), Code: 400, Reason: api.ReasonMalformedBody},
		{Name: "unknown field", Path: "/v1/payments", Body: `{"order":"in-1"}`, Header: key("in-unk"), Code: 400, Reason: api.ReasonInvalidArgument, Field: "order"},
		{Name: "order_id 65 bytes", Path: "/v1/payments", Body: `{"order_id":"` + long + `","user_id":"u-bob","amount":1}`, Header: key("in-o"), Code: 400, Reason: api.ReasonInvalidArgument, Field: "order_id"},
		{Name: "user_id 65 bytes", Path: "/v1/payments", Body: `{"order_id":"in-1","user_id":"` + long + `","amount":1}`, Header: key("in-u"), Code: 400, Reason: api.ReasonInvalidArgument, Field: "user_id"},
		{Name: "amount 0", Path: "/v1/payments", Body: pay("0"), Header: key("in-a0"), Code: 400, Reason: api.ReasonInvalidArgument, Field: "amount"},
		{Name: "amount -1", Path: "/v1/payments", Body: pay("-1"), Header: key("in-a1"), Code: 400, Reason: api.ReasonInvalidArgument, Field: "amount"},
		{Name: "amount 1.5", Path: "/v1/payments", Body: pay("1.5"), Header: key("in-a2"), Code: 400, Reason: api.ReasonInvalidArgument, Field: "amount"},
		{Name: "amount over int64", Path: "/v1/payments", Body: pay(`"99999999999999999999"`), Header: key("in-a3"), Code: 400, Reason: api.ReasonInvalidArgument, Field: "amount"},
		{Name: "amount over the limit", Path: "/v1/payments", Body: pay("1e18"), Header: key("in-a4"), Code: 400, Reason: api.ReasonInvalidArgument, Field: "amount"},
		{Name: "amount as text", Path: "/v1/payments", Body: pay(`"ten"`), Header: key("in-a5"), Code: 400, Reason: api.ReasonInvalidArgument, Field: "amount"},
		{Name: "key header 129 bytes", Path: "/v1/payments", Body: pay("1"), Header: key(strings.Repeat("k", 129)), Code: 400, Reason: api.ReasonInvalidArgument, Field: "Idempotency-Key"},
		{Name: "key field 129 bytes", Path: "/v1/payments", Body: `{"order_id":"in-1","user_id":"u-bob","amount":1,"idempotency_key":"` + strings.Repeat("k", 129) + `"}`, Code: 400, Reason: api.ReasonInvalidArgument, Field: "idempotency_key"},
		{Name: "no key", Path: "/v1/payments", Body: pay("1"), Code: 400, Reason: "IDEMPOTENCY_KEY_REQUIRED"},
		{Name: "GET id 65 bytes", Method: "GET", Path: "/v1/payments/" + long, Code: 400, Reason: api.ReasonInvalidArgument, Field: "id"},
		{Name: "GET unknown", Method: "GET", Path: "/v1/payments/pay_nope", Code: 404, Reason: "PAYMENT_NOT_FOUND"},
		{Name: "statement after -1", Method: "GET", Path: "/v1/gateway/statement?after=-1", Code: 400, Reason: api.ReasonInvalidArgument, Field: "after"},
		{Name: "statement after text", Method: "GET", Path: "/v1/gateway/statement?after=x", Code: 400, Reason: api.ReasonInvalidArgument, Field: "after"},
		{Name: "runs limit 0", Method: "GET", Path: "/v1/reconcile/runs?job=payments&limit=0", Code: 400, Reason: api.ReasonInvalidArgument, Field: "limit"},
		{Name: "runs limit 99999999999", Method: "GET", Path: "/v1/reconcile/runs?job=payments&limit=99999999999", Code: 400, Reason: api.ReasonInvalidArgument, Field: "limit"},
		{Name: "reconcile form content type", Path: "/v1/reconcile/payments", Body: `{"dry_run":true}`, ContentType: "application/x-www-form-urlencoded", Code: 415, Reason: api.ReasonUnsupportedMediaType},
		{Name: "reconcile malformed JSON", Path: "/v1/reconcile/payments", Body: `{"dry_run":`, Code: 400, Reason: api.ReasonMalformedBody},
		{Name: "reconcile unknown field", Path: "/v1/reconcile/payments", Body: `{"dryrun":true}`, Code: 400, Reason: api.ReasonInvalidArgument, Field: "dryrun"},
		{Name: "reconcile wrong type", Path: "/v1/reconcile/payments", Body: `{"dry_run":"yes"}`, Code: 400, Reason: api.ReasonInvalidArgument, Field: "dry_run"},
		{Name: "reconcile unknown job", Path: "/v1/reconcile/nope", Body: `{}`, Code: 404, Reason: "UNKNOWN_JOB"},
		{Name: "reconcile oversized body", Path: "/v1/reconcile/payments", Body: apitest.Big("dry_run", 1<<20), Chunked: true, Code: 413, Reason: api.ReasonBodyTooLarge},
	})
	if after := balance(t, s, "u-bob"); after != before {
		t.Fatalf("u-bob's balance moved from %d to %d", before, after)
	}

	t.Run("gRPC", func(t *testing.T) {
		c := v1.NewPaymentClient(apitest.DialGRPC(t, s.grpcAddr))
		tests := []struct {
			name  string
			req   *v1.CreatePaymentRequest
			field string
		}{
			{"order_id 65 bytes", &v1.CreatePaymentRequest{OrderId: long, UserId: "u-bob", Amount: 1, IdempotencyKey: "g1"}, "order_id"},
			{"amount 0", &v1.CreatePaymentRequest{OrderId: "in-1", UserId: "u-bob", IdempotencyKey: "g2"}, "amount"},
			{"amount -1", &v1.CreatePaymentRequest{OrderId: "in-1", UserId: "u-bob", Amount: -1, IdempotencyKey: "g3"}, "amount"},
			{"amount 1e18", &v1.CreatePaymentRequest{OrderId: "in-1", UserId: "u-bob", Amount: 1e18, IdempotencyKey: "g4"}, "amount"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := c.CreatePayment(context.Background(), tt.req)
				apitest.InvalidGRPC(t, err, tt.field)
			})
		}
		// Over the 64 KiB body limit: refused by gRPC itself, the
		// server keeps serving.
		_, err := c.CreatePayment(context.Background(), &v1.CreatePaymentRequest{OrderId: "in-1", UserId: "u-bob", Amount: 1,
			IdempotencyKey: strings.Repeat("k", api.DefaultMaxBody+1)})
		apitest.OversizedGRPC(t, err)
		if _, err := c.GetPayment(context.Background(), &v1.GetPaymentRequest{Id: "pay_nope"}); status.Code(err) != codes.NotFound {
			t.Fatalf("GetPayment after the oversized request: %v, want NotFound", err)
		}
	})
}
