package data

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"github.com/tidemq/tide/services/kit/cleanup"
	"github.com/tidemq/tide/services/kit/consume"
	"github.com/tidemq/tide/services/order/internal/conf"
)

// NewDedup returns the consumers' dedup (service.EventService): a
// Redis-only pkg/mqclient/idempotent, since the durable record of an
// event is order_timeline's unique key, written with its effect.
func NewDedup(d *Data) consume.Dedup { return consume.TxDedup{Redis: d.rdb} }

// NewCleanup returns the periodic cleanup of the service's old
// tide_tx_fence and mq_dedup rows (kit/cleanup; retention, interval and
// why the retention has a floor are in conf.Cleanup). Its counter
// tide_cleanup_deleted_rows_total{table} goes to reg.
func NewCleanup(c *conf.Cleanup, d *Data, reg prometheus.Registerer, l *slog.Logger) (*cleanup.Service, error) {
	return cleanup.NewService(d.db, "order-cleanup", c, cleanup.Options{FenceTable: txmsg.DefaultTable,
		DedupTable: idempotent.DefaultTable, Logger: l.With("module", "order/cleanup"), Registerer: reg})
}
