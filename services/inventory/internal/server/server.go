// Package server builds the inventory service's transports: gRPC, HTTP
// (the API routes, /healthz and /readyz), the ordered consumer of order
// events and the outbox relay and the reconciliation schedule, each a
// Kratos transport.Server. It depends on service alone: what the data
// layer provides comes in through service's types and cmd/inventory's
// wiring.
package server

import (
	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/google/wire"

	v1 "github.com/tidemq/tide/api/inventory/v1"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/inventory/internal/service"
	"github.com/tidemq/tide/services/kit/api"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
)

// ProviderSet is server providers.
var ProviderSet = wire.NewSet(NewGRPCServer, NewHTTPServer, NewConsumerServer, NewReconciler)

// NewGRPCServer returns the gRPC server (grpc.health.v1 is registered by
// Kratos itself).
func NewGRPCServer(c *kitconf.Server, s *service.InventoryService, in *api.Input) *grpc.Server {
	srv := in.NewGRPCServer(c.GetGrpc())
	v1.RegisterInventoryServer(srv, s)
	return srv
}

// Reconciler runs the reconciliation jobs every reconcile.interval (0:
// on demand only, through /v1/reconcile/); a Kratos server.
type Reconciler struct{ *kratosmq.Task }

// NewReconciler schedules jobs as rc says.
func NewReconciler(rc *conf.Reconcile, jobs *rechttp.Jobs) (*Reconciler, error) {
	t, err := jobs.Server("reconcile", rc.GetInterval().AsDuration())
	return &Reconciler{t}, err
}
