// Package server builds the payment service's transports: gRPC, HTTP
// (the API routes, /v1/reconcile, /v1/faults, /metrics, /healthz and
// /readyz), the consumer of order events (refunds), the reconciliation
// schedule and the cleanup of the pattern tables, each a Kratos
// transport.Server.
package server

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/google/wire"
	"github.com/prometheus/client_golang/prometheus"

	v1 "github.com/tidemq/tide/api/payment/v1"
	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/cleanup"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/data"
	"github.com/tidemq/tide/services/payment/internal/service"
)

// ProviderSet is server providers.
var ProviderSet = wire.NewSet(NewGRPCServer, NewHTTPServer, NewConsumerServer, NewReconciler, NewReadiness, NewCleanup)

// NewGRPCServer returns the gRPC server (grpc.health.v1 is registered by
// Kratos itself).
func NewGRPCServer(c *conf.Server, s *service.PaymentService, in *api.Input) *grpc.Server {
	srv := in.NewGRPCServer(c.GetGrpc())
	v1.RegisterPaymentServer(srv, s)
	return srv
}

// NewReadiness returns the /readyz check: the database, Redis and a
// NameServer answer.
func NewReadiness(d *data.Data, m *conf.Messaging) api.Ready {
	return api.AllReady(d.Ping, api.Dials("name server", data.SplitAddrs(m.GetNameServers())))
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

// NewCleanup returns the periodic cleanup of the service's old
// tide_tx_fence and mq_dedup rows (kit/cleanup; retention, interval and
// why the retention has a floor are in conf.Cleanup). Its counter
// tide_cleanup_deleted_rows_total{table} goes to reg.
func NewCleanup(c *conf.Cleanup, d *data.Data, reg prometheus.Registerer, l *slog.Logger) (*cleanup.Service, error) {
	return cleanup.NewService(d.Gorm(), "payment-cleanup", c, cleanup.Options{FenceTable: txmsg.DefaultTable,
		DedupTable: idempotent.DefaultTable, Logger: l.With("module", "payment/cleanup"), Registerer: reg})
}
