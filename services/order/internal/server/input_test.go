package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/api/apitest"
)

// TestServerRefusesBadInput: every client mistake on the Order API gets a
// 4xx in the one error shape naming the field and why, never a 5xx.
func TestServerRefusesBadInput(t *testing.T) {
	s := startStack(t, time.Hour)
	item := func(q string) string {
		return `{"user_id":"u1","items":[{"product_id":"p1","quantity":` + q + `,"unit_price":"150"}]}`
	}
	long := strings.Repeat("u", 65)
	apitest.Run(t, s.httpBase, []apitest.Case{
		{Name: "valid", Path: "/v1/orders", Body: item("1")},
		{Name: "no content type is JSON", Path: "/v1/orders", Body: item("1"), NoContentType: true},
		{Name: "oversized body", Path: "/v1/orders", Body: apitest.Big("user_id", 5<<20), Code: 413, Reason: api.ReasonBodyTooLarge},
		{Name: "oversized chunked body", Path: "/v1/orders", Body: apitest.Big("user_id", 1<<20), Chunked: true, Code: 413, Reason: api.ReasonBodyTooLarge},
		{Name: "form content type", Path: "/v1/orders", Body: item("1"), ContentType: "application/x-www-form-urlencoded", Code: 415, Reason: api.ReasonUnsupportedMediaType},
		{Name: "text content type", Path: "/v1/orders", Body: item("1"), ContentType: "text/plain", Code: 415, Reason: api.ReasonUnsupportedMediaType},
		{Name: "malformed JSON", Path: "/v1/orders", Body: `{"user_id":`, Code: 400, Reason: api.ReasonMalformedBody},
		{Name: "not an object", Path: "/v1/orders", Body: `"order"`, Code: 400, Reason: api.ReasonMalformedBody},
		{Name: "unknown field", Path: "/v1/orders", Body: `{"user":"u1"}`, Code: 400, Reason: api.ReasonInvalidArgument, Field: "user"},
		{Name: "user_id 65 bytes", Path: "/v1/orders", Body: `{"user_id":"` + long + `","items":[{"product_id":"p1","quantity":1}]}`, Code: 400, Reason: api.ReasonInvalidArgument, Field: "user_id"},
		{Name: "product_id 65 bytes", Path: "/v1/orders", Body: `{"user_id":"u1","items":[{"product_id":"` + long + `","quantity":1}]}`, Code: 400, Reason: api.ReasonInvalidArgument, Field: "items[0].product_id"},
		{Name: "no user", Path: "/v1/orders", Body: `{"items":[{"product_id":"p1","quantity":1}]}`, Code: 400, Reason: api.ReasonInvalidArgument, Field: "user_id"},
		{Name: "no items", Path: "/v1/orders", Body: `{"user_id":"u1","items":[]}`, Code: 400, Reason: api.ReasonInvalidArgument, Field: "items"},
		{Name: "101 items", Path: "/v1/orders", Body: `{"user_id":"u1","items":[` + strings.Repeat(`{"product_id":"p1","quantity":1},`, 100) + `{"product_id":"p1","quantity":1}]}`, Code: 400, Reason: api.ReasonInvalidArgument, Field: "items"},
		{Name: "quantity 0", Path: "/v1/orders", Body: item("0"), Code: 400, Reason: api.ReasonInvalidArgument, Field: "items[0].quantity"},
		{Name: "quantity -1", Path: "/v1/orders", Body: item("-1"), Code: 400, Reason: api.ReasonInvalidArgument, Field: "items[0].quantity"},
		{Name: "quantity 1e6", Path: "/v1/orders", Body: item("1e6"), Code: 400, Reason: api.ReasonInvalidArgument, Field: "items[0].quantity"},
		{Name: "quantity 99999999999", Path: "/v1/orders", Body: item("99999999999"), Code: 400, Reason: api.ReasonInvalidArgument, Field: "items[0].quantity"},
		{Name: "quantity 1.5", Path: "/v1/orders", Body: item("1.5"), Code: 400, Reason: api.ReasonInvalidArgument, Field: "items[0].quantity"},
		{Name: "quantity text", Path: "/v1/orders", Body: item(`"many"`), Code: 400, Reason: api.ReasonInvalidArgument, Field: "items[0].quantity"},
		{Name: "negative price", Path: "/v1/orders", Body: `{"user_id":"u1","items":[{"product_id":"p1","quantity":1,"unit_price":-1}]}`, Code: 400, Reason: api.ReasonInvalidArgument, Field: "items[0].unit_price"},
		{Name: "price over int64", Path: "/v1/orders", Body: `{"user_id":"u1","items":[{"product_id":"p1","quantity":1,"unit_price":"99999999999999999999"}]}`, Code: 400, Reason: api.ReasonInvalidArgument, Field: "items[0].unit_price"},
		{Name: "GET id 65 bytes", Method: "GET", Path: "/v1/orders/" + long, Code: 400, Reason: api.ReasonInvalidArgument, Field: "id"},
		{Name: "GET unknown", Method: "GET", Path: "/v1/orders/no-such-order", Code: 404, Reason: "ORDER_NOT_FOUND"},
		{Name: "price other than the catalog's", Path: "/v1/orders", Body: `{"user_id":"u1","items":[{"product_id":"p1","quantity":1,"unit_price":"10"}]}`, Code: 400, Reason: "PRICE_MISMATCH"},
		{Name: "product not in the catalog", Path: "/v1/orders", Body: `{"user_id":"u1","items":[{"product_id":"p-none","quantity":1}]}`, Code: 404, Reason: "PRODUCT_NOT_FOUND"},
	})

	t.Run("gRPC", func(t *testing.T) {
		ctx := context.Background()
		tests := []struct {
			name  string
			req   *orderv1.CreateOrderRequest
			field string
		}{
			{"user_id 65 bytes", &orderv1.CreateOrderRequest{UserId: long, Items: []*orderv1.OrderItem{{ProductId: "p1", Quantity: 1}}}, "user_id"},
			{"quantity 0", &orderv1.CreateOrderRequest{UserId: "u1", Items: []*orderv1.OrderItem{{ProductId: "p1"}}}, "items[0].quantity"},
			{"quantity -1", &orderv1.CreateOrderRequest{UserId: "u1", Items: []*orderv1.OrderItem{{ProductId: "p1", Quantity: -1}}}, "items[0].quantity"},
			{"quantity 1e6", &orderv1.CreateOrderRequest{UserId: "u1", Items: []*orderv1.OrderItem{{ProductId: "p1", Quantity: 1e6}}}, "items[0].quantity"},
			{"no items", &orderv1.CreateOrderRequest{UserId: "u1"}, "items"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := s.grpc.CreateOrder(ctx, tt.req)
				apitest.InvalidGRPC(t, err, tt.field)
			})
		}
		_, err := s.grpc.GetOrder(ctx, &orderv1.GetOrderRequest{Id: long})
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("GetOrder long id: %v", err)
		}
		// Over the 64 KiB body limit: refused by gRPC itself, the
		// server keeps serving.
		_, err = s.grpc.CreateOrder(ctx, &orderv1.CreateOrderRequest{UserId: strings.Repeat("u", api.DefaultMaxBody+1),
			Items: []*orderv1.OrderItem{{ProductId: "p1", Quantity: 1}}})
		apitest.OversizedGRPC(t, err)
		if _, err := s.grpc.GetOrder(ctx, &orderv1.GetOrderRequest{Id: "no-such-order"}); status.Code(err) != codes.NotFound {
			t.Fatalf("GetOrder after the oversized request: %v, want NotFound", err)
		}
	})
}
