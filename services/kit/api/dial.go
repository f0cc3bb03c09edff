package api

import (
	"context"
	"fmt"
	"time"

	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"
	"google.golang.org/grpc"

	kitconf "github.com/tidemq/tide/services/kit/conf"
)

// Dial returns a client connection to another service's gRPC API at
// addr (def when addr is empty), without TLS. gRPC connects lazily, so a
// service starts while the other is down; calls fail until it answers.
// The cleanup closes the connection.
func Dial(service, addr, def string) (*grpc.ClientConn, func(), error) {
	if addr == "" {
		addr = def
	}
	conn, err := kgrpc.DialInsecure(context.Background(), kgrpc.WithEndpoint(addr))
	if err != nil {
		return nil, nil, fmt.Errorf("dial %s service %s: %w", service, addr, err)
	}
	return conn, func() { _ = conn.Close() }, nil
}

// Client is a client of another service's gRPC API: API is the generated
// client (C, such as inventoryv1.InventoryClient), and each call is
// bounded by Timeout (Bound). Safe for concurrent use.
type Client[C any] struct {
	API     C
	Timeout time.Duration
}

// DialClient dials service's gRPC API (Dial: at p's address, def when it
// is empty; lazily) and returns newClient on the connection, with p's
// timeout, defTimeout when it is not positive. p is the service's config
// section naming the other service (kit/conf's Peer; nil takes the
// defaults). cleanup closes the connection. Errors start with "data: "
// (the callers are data layers).
func DialClient[C any](service string, p *kitconf.Peer, def string, defTimeout time.Duration,
	newClient func(grpc.ClientConnInterface) C) (*Client[C], func(), error) {
	conn, cleanup, err := Dial(service, p.GetGrpcAddr(), def)
	if err != nil {
		return nil, nil, fmt.Errorf("data: %w", err)
	}
	timeout := p.GetTimeout().AsDuration()
	if timeout <= 0 {
		timeout = defTimeout
	}
	return &Client[C]{API: newClient(conn), Timeout: timeout}, cleanup, nil
}

// Bound returns ctx bounded by c's Timeout, for one call.
func (c *Client[C]) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.Timeout)
}
