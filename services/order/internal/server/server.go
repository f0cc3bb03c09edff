// Package server builds the order service's Kratos servers: gRPC, HTTP
// (the API routes, /healthz and /readyz), the event consumers and the
// overdue-order sweeper. Each is a transport.Server that kratos.App
// starts and stops. It depends on service alone: what the data layer
// provides comes in through service's types and cmd/order's wiring.
package server

import (
	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/google/wire"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/kit/api"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/order/internal/service"
)

// ProviderSet is server providers.
var ProviderSet = wire.NewSet(NewGRPCServer, NewHTTPServer, NewConsumer, NewSweeper)

// NewGRPCServer returns the gRPC server of the Order API; requests are
// checked against service.Schemas (InvalidArgument naming the field).
// Kratos also registers grpc.health.v1 on it.
func NewGRPCServer(c *kitconf.Server, order *service.OrderService, in *api.Input) *grpc.Server {
	srv := in.NewGRPCServer(c.GetGrpc())
	orderv1.RegisterOrderServer(srv, order)
	return srv
}
