package data

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/payment/internal/biz"
)

// fakeOrders answers GetOrder with one order in status.
type fakeOrders struct {
	orderv1.OrderClient
	status orderv1.OrderStatus
}

func (f fakeOrders) GetOrder(context.Context, *orderv1.GetOrderRequest, ...grpc.CallOption) (*orderv1.GetOrderReply, error) {
	return &orderv1.GetOrderReply{Order: &orderv1.OrderInfo{UserId: "u-1", TotalAmount: 500, Status: f.status}}, nil
}

// Each order status of the API reads as its biz.OrderStatus; one without
// a biz status (UNSPECIFIED, a newer one) keeps its API name.
func TestOrderReaderStatus(t *testing.T) {
	for _, tt := range []struct {
		api  orderv1.OrderStatus
		want biz.OrderStatus
	}{
		{orderv1.OrderStatus_ORDER_STATUS_CREATED, biz.OrderCreated},
		{orderv1.OrderStatus_ORDER_STATUS_RESERVED, biz.OrderReserved},
		{orderv1.OrderStatus_ORDER_STATUS_PAID, biz.OrderPaid},
		{orderv1.OrderStatus_ORDER_STATUS_CANCELLED, biz.OrderCancelled},
		{orderv1.OrderStatus_ORDER_STATUS_UNSPECIFIED, "ORDER_STATUS_UNSPECIFIED"},
		{orderv1.OrderStatus(99), "99"},
	} {
		r := &OrderReader{orders: &api.Client[orderv1.OrderClient]{API: fakeOrders{status: tt.api}, Timeout: time.Minute}}
		o, err := r.Order(context.Background(), "o-1")
		if err != nil {
			t.Fatal(err)
		}
		if o.Status != tt.want || o.ID != "o-1" || o.UserID != "u-1" || o.Total != 500 {
			t.Errorf("%v: read %+v, want status %q", tt.api, o, tt.want)
		}
	}
}
