package data

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/services/kit/cleanup"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/consume"
)

// NewDedup returns the consumer's dedup (service.PaymentService): its
// records in mq_dedup, committed in the transaction the handler finds in
// its ctx (WithTx).
func NewDedup(d *Data) consume.Dedup { return consume.TxDedup{DB: d.db, Redis: d.rdb, WithTx: WithTx} }

// NewCleanup returns the periodic cleanup of the service's old
// tide_tx_fence and mq_dedup rows (kit/cleanup.ForService; retention,
// interval and why the retention has a floor are in kitconf.Cleanup). Its
// counter tide_cleanup_deleted_rows_total{table} goes to reg.
func NewCleanup(c *kitconf.Cleanup, d *Data, reg prometheus.Registerer, l *slog.Logger) (*cleanup.Service, error) {
	return cleanup.ForService("payment", d.db, c, true, reg, l)
}
