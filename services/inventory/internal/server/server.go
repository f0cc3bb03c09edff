// Package server builds the inventory service's transports: gRPC, HTTP
// (the API routes, /healthz and /readyz), the ordered consumer of order
// events and the outbox relay and the reconciliation schedule, each a
// Kratos transport.Server. It depends on service alone: what the data
// layer provides comes in through service's types and cmd/inventory's
// wiring.
package server

import (
	"github.com/google/wire"
	"google.golang.org/grpc"

	v1 "github.com/tidemq/tide/api/inventory/v1"
	"github.com/tidemq/tide/services/inventory/internal/service"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
)

// ProviderSet is server providers: the gRPC server (kit/api.GRPCServer
// with NewGRPCAPI), the HTTP server, the consumer server and the
// reconciliation schedule (kit rechttp.NewReconciler, every
// reconcile.interval: the injector binds *conf.Reconcile to
// rechttp.Schedule).
var ProviderSet = wire.NewSet(api.GRPCServer, NewGRPCAPI, NewHTTPServer, NewConsumerServer, rechttp.NewReconciler)

// NewGRPCAPI registers the Inventory API on the gRPC server (Kratos
// registers grpc.health.v1 itself).
func NewGRPCAPI(s *service.InventoryService) api.RegisterGRPC {
	return func(r grpc.ServiceRegistrar) { v1.RegisterInventoryServer(r, s) }
}
