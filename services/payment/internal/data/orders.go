package data

import (
	"context"
	"fmt"
	"time"

	"github.com/go-kratos/kratos/v2/errors"
	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"
	"google.golang.org/grpc"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

// OrderReader is biz.OrderReader on the order service's gRPC API
// (order.grpc_addr). The connection is dialled lazily by gRPC, so the
// payment service starts while the order service is down; reconciliation
// runs then fail and are resumed later.
type OrderReader struct {
	client  orderv1.OrderClient
	timeout time.Duration
}

// NewOrderReader dials the order service. cleanup closes the connection.
func NewOrderReader(c *conf.Order) (biz.OrderReader, func(), error) {
	addr := c.GetGrpcAddr()
	if addr == "" {
		addr = "127.0.0.1:9000"
	}
	conn, err := kgrpc.DialInsecure(context.Background(), kgrpc.WithEndpoint(addr))
	if err != nil {
		return nil, nil, fmt.Errorf("data: dial order service %s: %w", addr, err)
	}
	return NewOrderReaderConn(conn, c.GetTimeout().AsDuration()), func() { _ = conn.Close() }, nil
}

// NewOrderReaderConn returns an OrderReader on an existing connection.
func NewOrderReaderConn(conn grpc.ClientConnInterface, timeout time.Duration) *OrderReader {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &OrderReader{client: orderv1.NewOrderClient(conn), timeout: timeout}
}

// OrderStatus implements biz.OrderReader.
func (r *OrderReader) OrderStatus(ctx context.Context, orderID string) (biz.OrderStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	out, err := r.client.GetOrder(ctx, &orderv1.GetOrderRequest{Id: orderID})
	if errors.IsNotFound(err) {
		return biz.OrderMissing, nil
	}
	if err != nil {
		return "", fmt.Errorf("data: GetOrder %s: %w", orderID, err)
	}
	switch out.GetOrder().GetStatus() {
	case orderv1.OrderStatus_ORDER_STATUS_CREATED:
		return biz.OrderCreated, nil
	case orderv1.OrderStatus_ORDER_STATUS_RESERVED:
		return biz.OrderReserved, nil
	case orderv1.OrderStatus_ORDER_STATUS_PAID:
		return biz.OrderPaid, nil
	case orderv1.OrderStatus_ORDER_STATUS_CANCELLED:
		return biz.OrderCancelled, nil
	}
	return biz.OrderStatus(out.GetOrder().GetStatus().String()), nil
}
