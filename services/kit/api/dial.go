package api

import (
	"context"
	"fmt"

	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"
	"google.golang.org/grpc"
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
