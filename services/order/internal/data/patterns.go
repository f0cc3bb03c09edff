package data

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"github.com/tidemq/tide/services/kit/cleanup"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/consume"
)

// NewDedup returns the consumers' dedup (service.EventService): a
// Redis-only pkg/mqclient/idempotent, since the durable record of an
// event is order_timeline's unique key, written with its effect.
func NewDedup(d *Data) consume.Dedup { return consume.TxDedup{Redis: d.rdb} }

// NewCleanup returns the periodic cleanup of the service's old
// tide_tx_fence and mq_dedup rows (kit/cleanup; retention, interval and
// why the retention has a floor are in kitconf.Cleanup). Its counter
// tide_cleanup_deleted_rows_total{table} goes to reg.
func NewCleanup(c *kitconf.Cleanup, d *Data, reg prometheus.Registerer, l *slog.Logger) (*cleanup.Service, error) {
	return cleanup.NewService(d.db, "order-cleanup", c, cleanup.Options{FenceTable: txmsg.DefaultTable,
		DedupTable: idempotent.DefaultTable, Logger: l.With("module", "order/cleanup"), Registerer: reg})
}
