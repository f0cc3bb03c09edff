package data

import (
	"context"
	"fmt"
	"time"

	"github.com/go-kratos/kratos/v2/errors"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
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
func NewOrderReader(c *conf.Order) (biz.OrderReader, func(), error) {
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
	res := &biz.Order{ID: orderID, UserID: o.GetUserId(), Total: o.GetTotalAmount()}
	switch o.GetStatus() {
	case orderv1.OrderStatus_ORDER_STATUS_CREATED:
		res.Status = biz.OrderCreated
	case orderv1.OrderStatus_ORDER_STATUS_RESERVED:
		res.Status = biz.OrderReserved
	case orderv1.OrderStatus_ORDER_STATUS_PAID:
		res.Status = biz.OrderPaid
	case orderv1.OrderStatus_ORDER_STATUS_CANCELLED:
		res.Status = biz.OrderCancelled
	default:
		res.Status = biz.OrderStatus(o.GetStatus().String())
	}
	return res, nil
}
