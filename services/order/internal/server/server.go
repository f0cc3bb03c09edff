// Package server builds the order service's Kratos servers: gRPC, HTTP
// (the API routes, /healthz and /readyz), the event consumers and the
// overdue-order sweeper. Each is a transport.Server that kratos.App
// starts and stops. It depends on service alone: what the data layer
// provides comes in through service's types and cmd/order's wiring.
package server

import (
	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/google/wire"
	"google.golang.org/grpc"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/kit/api"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/order/internal/service"
)

// ProviderSet is server providers: the gRPC server, the HTTP server, the consumers and the sweeper.
var ProviderSet = wire.NewSet(NewGRPCServer, NewHTTPServer, NewConsumer, NewSweeper)

// NewGRPCServer returns the gRPC server of the Order API
// (kit/api.GRPCServer: c's listener, the input contract of in);
// Kratos registers grpc.health.v1 on it itself.
func NewGRPCServer(c *kitconf.Server, order *service.OrderService, in *api.Input) *kgrpc.Server {
	return api.GRPCServer(c, in, func(r grpc.ServiceRegistrar) { orderv1.RegisterOrderServer(r, order) })
}
