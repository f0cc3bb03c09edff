package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v1 "github.com/tidemq/tide/api/inventory/v1"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/api/apitest"
)

// TestServerRefusesBadInput: every client mistake on the Inventory API
// gets a 4xx in the one error shape naming the field and why, never a
// 5xx.
func TestServerRefusesBadInput(t *testing.T) {
	s := startStack(t, false)
	long := strings.Repeat("p", 65)
	cases := []apitest.Case{
		{Name: "page_size 0 is the default page", Method: "GET", Path: "/v1/products?page_size=0"},
		{Name: "page_size 100", Method: "GET", Path: "/v1/products?page_size=100"},
		{Name: "page_size -1", Method: "GET", Path: "/v1/products?page_size=-1", Code: 400, Reason: api.ReasonInvalidArgument, Field: "page_size"},
		{Name: "page_size 1e6", Method: "GET", Path: "/v1/products?page_size=1e6", Code: 400, Reason: api.ReasonInvalidArgument, Field: "page_size"},
		{Name: "page_size 99999999999", Method: "GET", Path: "/v1/products?page_size=99999999999", Code: 400, Reason: api.ReasonInvalidArgument, Field: "page_size"},
		{Name: "page_size text", Method: "GET", Path: "/v1/products?page_size=ten", Code: 400, Reason: api.ReasonInvalidArgument, Field: "page_size"},
		{Name: "page_size twice", Method: "GET", Path: "/v1/products?page_size=1&page_size=2", Code: 400, Reason: api.ReasonInvalidArgument, Field: "page_size"},
		{Name: "page_token 65 bytes", Method: "GET", Path: "/v1/products?page_token=" + long, Code: 400, Reason: api.ReasonInvalidArgument, Field: "page_token"},
		{Name: "id 65 bytes", Method: "GET", Path: "/v1/products/" + long, Code: 400, Reason: api.ReasonInvalidArgument, Field: "id"},
		{Name: "unknown product", Method: "GET", Path: "/v1/products/nope", Code: 404, Reason: "PRODUCT_NOT_FOUND"},
		{Name: "oversized body", Path: "/v1/reconcile/reservations", Body: apitest.Big("dry_run", 5<<20), Code: 413, Reason: api.ReasonBodyTooLarge},
		{Name: "reconcile oversized chunked body", Path: "/v1/reconcile/reservations", Body: apitest.Big("dry_run", 1<<20), Chunked: true, Code: 413, Reason: api.ReasonBodyTooLarge},
		{Name: "reconcile form content type", Path: "/v1/reconcile/reservations", Body: `{"dry_run":true}`, ContentType: "application/x-www-form-urlencoded", Code: 415, Reason: api.ReasonUnsupportedMediaType},
		{Name: "reconcile malformed JSON", Path: "/v1/reconcile/reservations", Body: `{"dry_run":`, Code: 400, Reason: api.ReasonMalformedBody},
		{Name: "reconcile unknown field", Path: "/v1/reconcile/reservations", Body: `{"dry":true}`, Code: 400, Reason: api.ReasonInvalidArgument, Field: "dry"},
		{Name: "reconcile unknown job", Path: "/v1/reconcile/nope", Body: `{}`, Code: 404, Reason: "UNKNOWN_JOB"},
	}
	apitest.Run(t, s.httpURL, cases)

	t.Run("gRPC", func(t *testing.T) {
		c := v1.NewInventoryClient(apitest.DialGRPC(t, s.grpcAddr))
		_, err := c.GetProduct(context.Background(), &v1.GetProductRequest{Id: long})
		apitest.InvalidGRPC(t, err, "id")
		for _, size := range []int32{-1, 101, 1e6} {
			t.Run(fmt.Sprint("page_size ", size), func(t *testing.T) {
				_, err := c.ListProducts(context.Background(), &v1.ListProductsRequest{PageSize: size})
				apitest.InvalidGRPC(t, err, "page_size")
			})
		}
		// Over the 64 KiB body limit: refused by gRPC itself, the
		// server keeps serving.
		_, err = c.GetProduct(context.Background(), &v1.GetProductRequest{Id: strings.Repeat("p", api.DefaultMaxBody+1)})
		apitest.OversizedGRPC(t, err)
		if _, err := c.GetProduct(context.Background(), &v1.GetProductRequest{Id: "nope"}); status.Code(err) != codes.NotFound {
			t.Fatalf("GetProduct after the oversized request: %v, want NotFound", err)
		}
	})
}
