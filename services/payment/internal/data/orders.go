package data

import (
	"context"
	"fmt"
	"time"

	"github.com/go-kratos/kratos/v2/errors"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/kit/api"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/payment/internal/biz"
)

// OrderReader is biz.OrderReader on the order service's gRPC API
// (order.grpc_addr), each call bounded by order.timeout (default 5s). The
// connection is dialled lazily by gRPC, so the payment service starts
// while the order service is down; payments are then refused with
// ORDER_SERVICE_UNAVAILABLE, and reconciliation runs fail and are resumed
// later.
type OrderReader struct {
	orders *api.Client[orderv1.OrderClient]
}

// NewOrderReader dials the order service (kit/api.DialClient). cleanup
// closes the connection.
func NewOrderReader(c *kitconf.Peer) (biz.OrderReader, func(), error) {
	orders, cleanup, err := api.DialClient("order", c, "127.0.0.1:9000", 5*time.Second, orderv1.NewOrderClient)
	if err != nil {
		return nil, nil, err
	}
	return &OrderReader{orders: orders}, cleanup, nil
}

// Order implements biz.OrderReader: GetOrder's user, total and status; a
// NotFound answer is biz.OrderMissing, any other failure an error.
func (r *OrderReader) Order(ctx context.Context, orderID string) (*biz.Order, error) {
	ctx, cancel := r.orders.Bound(ctx)
	defer cancel()
	out, err := r.orders.API.GetOrder(ctx, &orderv1.GetOrderRequest{Id: orderID})
	if errors.IsNotFound(err) {
		return &biz.Order{ID: orderID, Status: biz.OrderMissing}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("data: GetOrder %s: %w", orderID, err)
	}
	o := out.GetOrder()
	st, ok := orderStatuses.Domain(o.GetStatus())
	if !ok {
		st = biz.OrderStatus(o.GetStatus().String()) // UNSPECIFIED, or one newer than this service
	}
	return &biz.Order{ID: orderID, UserID: o.GetUserId(), Total: o.GetTotalAmount(), Status: st}, nil
}

// orderStatuses maps the order service's OrderStatus to biz's.
var orderStatuses = api.NewEnum(map[biz.OrderStatus]orderv1.OrderStatus{
	biz.OrderCreated:   orderv1.OrderStatus_ORDER_STATUS_CREATED,
	biz.OrderReserved:  orderv1.OrderStatus_ORDER_STATUS_RESERVED,
	biz.OrderPaid:      orderv1.OrderStatus_ORDER_STATUS_PAID,
	biz.OrderCancelled: orderv1.OrderStatus_ORDER_STATUS_CANCELLED,
})
