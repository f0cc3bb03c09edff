// Package server builds the order service's Kratos servers: gRPC, HTTP
// (the API routes, /healthz and /readyz), the event consumers, the
// overdue-order sweeper and the cleanup of the pattern tables. Each is a
// transport.Server that kratos.App starts and stops.
package server

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/google/wire"
	"github.com/prometheus/client_golang/prometheus"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/cleanup"
	"github.com/tidemq/tide/services/order/internal/conf"
	"github.com/tidemq/tide/services/order/internal/data"
	"github.com/tidemq/tide/services/order/internal/service"
)

// ProviderSet is server providers.
var ProviderSet = wire.NewSet(NewGRPCServer, NewHTTPServer, NewConsumer, NewSweeper, NewReadiness, NewCleanup)

// NewGRPCServer returns the gRPC server of the Order API; requests are
// checked against service.Schemas (InvalidArgument naming the field).
// Kratos also registers grpc.health.v1 on it.
func NewGRPCServer(c *conf.Server, order *service.OrderService, in *api.Input) *grpc.Server {
	srv := in.NewGRPCServer(c.GetGrpc())
	orderv1.RegisterOrderServer(srv, order)
	return srv
}

// NewReadiness returns the /readyz check: the database and Redis answer
// (d) and the consumers are running (they started, so the broker's
// NameServers answered).
func NewReadiness(d *data.Data, c *Consumer) api.Ready {
	return api.AllReady(d.Ready, api.Started("consumers", c.Running))
}

// NewCleanup returns the periodic cleanup of the service's old
// tide_tx_fence and mq_dedup rows (kit/cleanup; retention, interval and
// why the retention has a floor are in conf.Cleanup). Its counter
// tide_cleanup_deleted_rows_total{table} goes to reg.
func NewCleanup(c *conf.Cleanup, d *data.Data, reg *prometheus.Registry) (*cleanup.Service, error) {
	return cleanup.NewService(d.Gorm(), "order-cleanup", c, cleanup.Options{FenceTable: txmsg.DefaultTable,
		DedupTable: idempotent.DefaultTable, Logger: slog.Default().With("module", "order/cleanup"), Registerer: reg})
}
