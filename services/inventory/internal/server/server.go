// Package server builds the inventory service's transports: gRPC, HTTP
// (the API routes, /healthz and /readyz), the ordered consumer of order
// events and the outbox relay, the reconciliation schedule and the
// cleanup of the pattern tables, each a Kratos transport.Server.
package server

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/google/wire"
	"github.com/prometheus/client_golang/prometheus"

	v1 "github.com/tidemq/tide/api/inventory/v1"
	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/inventory/internal/data"
	"github.com/tidemq/tide/services/inventory/internal/service"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/cleanup"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
)

// ProviderSet is server providers.
var ProviderSet = wire.NewSet(NewGRPCServer, NewHTTPServer, NewConsumerServer, NewReconciler, NewReadiness, NewCleanup)

// NewGRPCServer returns the gRPC server (grpc.health.v1 is registered by
// Kratos itself).
func NewGRPCServer(c *conf.Server, s *service.InventoryService, in *api.Input) *grpc.Server {
	srv := in.NewGRPCServer(c.GetGrpc())
	v1.RegisterInventoryServer(srv, s)
	return srv
}

// NewReadiness returns the /readyz check: the database and Redis answer
// and the consumer runs (it started, so the NameServers answered).
func NewReadiness(d *data.Data, c *ConsumerServer) api.Ready {
	return api.AllReady(d.Ping, api.Started("consumer", c.Running))
}

// Reconciler runs the reconciliation jobs every reconcile.interval (0:
// on demand only, through /v1/reconcile/); a Kratos server.
type Reconciler struct{ *kratosmq.Task }

// NewReconciler schedules jobs as rc says.
func NewReconciler(rc *conf.Reconcile, jobs *rechttp.Jobs) (*Reconciler, error) {
	t, err := jobs.Server("reconcile", rc.GetInterval().AsDuration())
	return &Reconciler{t}, err
}

// NewCleanup returns the periodic cleanup of the service's mq_dedup rows
// (kit/cleanup; retention, interval and why the retention has a floor
// are in conf.Cleanup). Its counter tide_cleanup_deleted_rows_total{table}
// goes to reg.
func NewCleanup(c *conf.Cleanup, d *data.Data, reg prometheus.Registerer, l *slog.Logger) (*cleanup.Service, error) {
	return cleanup.NewService(d.Gorm(), "inventory-cleanup", c, cleanup.Options{DedupTable: idempotent.DefaultTable,
		Logger: l.With("module", "inventory/cleanup"), Registerer: reg})
}
