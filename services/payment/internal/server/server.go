// Package server builds the payment service's transports: gRPC, HTTP
// (the API routes, /v1/reconcile, /v1/faults, /metrics, /healthz and
// /readyz), the consumer of order events (refunds), the reconciliation
// schedule, each a Kratos transport.Server. It depends on service alone:
// what the data layer provides comes in through service's types and
// cmd/payment's wiring.
package server

import (
	"github.com/google/wire"
	"google.golang.org/grpc"

	v1 "github.com/tidemq/tide/api/payment/v1"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
	"github.com/tidemq/tide/services/payment/internal/service"
)

// ProviderSet is server providers: the gRPC server (kit/api.GRPCServer
// with NewGRPCAPI), the HTTP server, the consumer server and the
// reconciliation schedule (kit rechttp.NewReconciler, every
// reconcile.interval: the injector binds *conf.Reconcile to
// rechttp.Schedule).
var ProviderSet = wire.NewSet(api.GRPCServer, NewGRPCAPI, NewHTTPServer, NewConsumerServer, rechttp.NewReconciler)

// NewGRPCAPI registers the Payment API on the gRPC server (Kratos
// registers grpc.health.v1 itself).
func NewGRPCAPI(s *service.PaymentService) api.RegisterGRPC {
	return func(r grpc.ServiceRegistrar) { v1.RegisterPaymentServer(r, s) }
}
