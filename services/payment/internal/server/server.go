// Package server builds the payment service's transports: gRPC, HTTP
// (the API routes, /v1/reconcile, /v1/faults, /metrics, /healthz and
// /readyz), the consumer of order events (refunds), the reconciliation
// schedule, each a Kratos transport.Server. It depends on service alone:
// what the data layer provides comes in through service's types and
// cmd/payment's wiring.
package server

import (
	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/google/wire"
	"google.golang.org/grpc"

	v1 "github.com/tidemq/tide/api/payment/v1"
	"github.com/tidemq/tide/services/kit/api"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
	"github.com/tidemq/tide/services/payment/internal/service"
)

// ProviderSet is server providers: the gRPC server, the HTTP server, the
// consumer server and the reconciliation schedule (kit
// rechttp.NewReconciler, every reconcile.interval: the injector binds
// *conf.Reconcile to rechttp.Schedule).
var ProviderSet = wire.NewSet(NewGRPCServer, NewHTTPServer, NewConsumerServer, rechttp.NewReconciler)

// NewGRPCServer returns the gRPC server of the Payment API
// (kit/api.GRPCServer: c's listener, the input contract of in);
// Kratos registers grpc.health.v1 on it itself.
func NewGRPCServer(c *kitconf.Server, s *service.PaymentService, in *api.Input) *kgrpc.Server {
	return api.GRPCServer(c, in, func(r grpc.ServiceRegistrar) { v1.RegisterPaymentServer(r, s) })
}
