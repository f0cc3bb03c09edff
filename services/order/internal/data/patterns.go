package data

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/services/kit/cleanup"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/consume"
)

// NewDedup returns the consumers' dedup (service.EventService): a
// Redis-only pkg/mqclient/idempotent, since the durable record of an
// event is order_timeline's unique key, written with its effect.
func NewDedup(d *Data) consume.Dedup { return consume.TxDedup{Redis: d.rdb} }

// NewCleanup returns the periodic cleanup of the service's old
// tide_tx_fence and mq_dedup rows (kit/cleanup.ForService; retention,
// interval and why the retention has a floor are in kitconf.Cleanup). Its
// counter tide_cleanup_deleted_rows_total{table} goes to reg.
func NewCleanup(c *kitconf.Cleanup, d *Data, reg prometheus.Registerer, l *slog.Logger) (*cleanup.Service, error) {
	return cleanup.ForService("order", d.db, c, true, reg, l)
}
