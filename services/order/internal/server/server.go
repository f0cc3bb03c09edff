// Package server builds the order service's Kratos servers: gRPC, HTTP
// (the API routes, /healthz and /readyz), the event consumers and the
// overdue-order sweeper. Each is a transport.Server that kratos.App
// starts and stops. It depends on service alone: what the data layer
// provides comes in through service's types and cmd/order's wiring.
package server

import (
	"github.com/google/wire"
	"google.golang.org/grpc"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/order/internal/service"
)

// ProviderSet is server providers: the gRPC server (kit/api.GRPCServer
// with NewGRPCAPI), the HTTP server, the consumers and the sweeper.
var ProviderSet = wire.NewSet(api.GRPCServer, NewGRPCAPI, NewHTTPServer, NewConsumer, NewSweeper)

// NewGRPCAPI registers the Order API on the gRPC server; requests are
// checked against service.Schemas (InvalidArgument naming the field).
// Kratos also registers grpc.health.v1 on it.
func NewGRPCAPI(order *service.OrderService) api.RegisterGRPC {
	return func(r grpc.ServiceRegistrar) { orderv1.RegisterOrderServer(r, order) }
}
