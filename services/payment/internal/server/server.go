// Package server builds the payment service's transports: gRPC, HTTP
// (the API routes, /v1/reconcile, /v1/faults, /metrics, /healthz and
// /readyz), the consumer of order events (refunds), the reconciliation
// schedule, each a Kratos transport.Server. It depends on service alone:
// what the data layer provides comes in through service's types and
// cmd/payment's wiring.
package server

import (
	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/google/wire"

	v1 "github.com/tidemq/tide/api/payment/v1"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/services/kit/api"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/service"
)

// ProviderSet is server providers.
var ProviderSet = wire.NewSet(NewGRPCServer, NewHTTPServer, NewConsumerServer, NewReconciler)

// NewGRPCServer returns the gRPC server (grpc.health.v1 is registered by
// Kratos itself).
func NewGRPCServer(c *kitconf.Server, s *service.PaymentService, in *api.Input) *grpc.Server {
	srv := in.NewGRPCServer(c.GetGrpc())
	v1.RegisterPaymentServer(srv, s)
	return srv
}

// Reconciler runs the reconciliation jobs every reconcile.interval (0:
// on demand only, through /v1/reconcile/); a Kratos server. One run of a
// job at a time across instances (Redis lease); every run, discrepancy
// and repair is in the audit tables.
type Reconciler struct{ *kratosmq.Task }

// NewReconciler schedules jobs as c says.
func NewReconciler(c *conf.Reconcile, jobs *rechttp.Jobs) (*Reconciler, error) {
	t, err := jobs.Server("reconcile", c.GetInterval().AsDuration())
	return &Reconciler{t}, err
}
