package server

import (
	"context"
	"strings"
	"testing"
	"time"

	kerrors "github.com/go-kratos/kratos/v2/errors"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/order/internal/biz"
)

// Orders are priced from the inventory catalog over gRPC: without
// unit_price the catalog's price is taken, a unit_price that is not the
// catalog's is refused (400 PRICE_MISMATCH: the client cannot set the
// price), an unknown product is 404 PRODUCT_NOT_FOUND, and an inventory
// service that does not answer is 503 INVENTORY_UNAVAILABLE; a refused
// order publishes nothing.
func TestServerPricesFromCatalog(t *testing.T) {
	s := startStack(t, time.Hour)
	created, code, body := s.httpCreate(t, `{"user_id":"u-price","items":[{"product_id":"p1","quantity":2},{"product_id":"p2","quantity":3,"unit_price":"100"}]}`)
	if code != 200 {
		t.Fatalf("POST: %d %s", code, body)
	}
	o := created.GetOrder()
	if o.GetTotalAmount() != 600 || o.GetItems()[0].GetUnitPrice() != 150 || o.GetItems()[1].GetUnitPrice() != 100 {
		t.Fatalf("order %v, want total 600 from the catalog's prices", o)
	}
	if !strings.Contains(body, `"unitPrice":"150"`) {
		t.Fatalf("reply does not show the catalog's price: %s", body)
	}
	waitFor(t, "OrderCreated", func() bool { return len(s.tags(o.GetId())) == 1 })

	tests := []struct {
		name, body string
		down       bool
		code       int
		reason     string
	}{
		{"client sets the price", `{"user_id":"u-price","items":[{"product_id":"p1","quantity":1,"unit_price":"1"}]}`, false, 400, biz.ReasonPriceMismatch},
		{"unknown product", `{"user_id":"u-price","items":[{"product_id":"p1","quantity":1},{"product_id":"p-nope","quantity":1}]}`, false, 404, biz.ReasonProductNotFound},
		{"inventory down", `{"user_id":"u-price","items":[{"product_id":"p1","quantity":1}]}`, true, 503, biz.ReasonInventoryDown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.inventory.down.Store(tt.down)
			defer s.inventory.down.Store(false)
			_, code, body := s.httpCreate(t, tt.body)
			if code != tt.code || !strings.Contains(body, `"reason":"`+tt.reason+`"`) {
				t.Fatalf("%d %s, want %d %s", code, body, tt.code, tt.reason)
			}
		})
	}
	if _, err := s.grpc.CreateOrder(context.Background(), &orderv1.CreateOrderRequest{UserId: "u-price",
		Items: []*orderv1.OrderItem{{ProductId: "p2", Quantity: 1, UnitPrice: new(int64(99))}}}); kerrors.Reason(err) != biz.ReasonPriceMismatch {
		t.Fatalf("gRPC price mismatch: %v", err)
	}
	// Only the accepted order went out on order-events.
	s.mu.Lock()
	n := len(s.events)
	s.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d order events, want 1 (refused orders publish nothing)", n)
	}
}
