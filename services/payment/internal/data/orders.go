package data

import (
	"context"
	"fmt"
	"time"

	"github.com/go-kratos/kratos/v2/errors"
	"google.golang.org/grpc"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

// OrderReader is biz.OrderReader on the order service's gRPC API
// (order.grpc_addr). The connection is dialled lazily by gRPC, so the
// payment service starts while the order service is down; payments are
// then refused with ORDER_SERVICE_UNAVAILABLE, and reconciliation runs
// fail and are resumed later.
type OrderReader struct {
	client  orderv1.OrderClient
	timeout time.Duration
}

// NewOrderReader dials the order service. cleanup closes the connection.
func NewOrderReader(c *conf.Order) (biz.OrderReader, func(), error) {
	conn, cleanup, err := api.Dial("order", c.GetGrpcAddr(), "127.0.0.1:9000")
	if err != nil {
		return nil, nil, fmt.Errorf("data: %w", err)
	}
	return NewOrderReaderConn(conn, c.GetTimeout().AsDuration()), cleanup, nil
}

// NewOrderReaderConn returns an OrderReader on an existing connection.
func NewOrderReaderConn(conn grpc.ClientConnInterface, timeout time.Duration) *OrderReader {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &OrderReader{client: orderv1.NewOrderClient(conn), timeout: timeout}
}

// Order implements biz.OrderReader: GetOrder's user, total and status; a
// NotFound answer is biz.OrderMissing, any other failure an error.
func (r *OrderReader) Order(ctx context.Context, orderID string) (*biz.Order, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	out, err := r.client.GetOrder(ctx, &orderv1.GetOrderRequest{Id: orderID})
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
