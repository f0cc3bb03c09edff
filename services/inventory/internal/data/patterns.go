package data

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/kit/cleanup"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/consume"
)

// NewDedup returns the consumer's dedup (service.InventoryService): its
// records in mq_dedup and, in the same transaction, pkg/mqclient/ordered's
// Guard (Lenient, scope "<group>/order-events"): an event's version must
// follow the order's last applied one; an older version is stale and
// dropped, a gap is applied and recorded. The handler finds the
// transaction in its ctx (WithTx).
func NewDedup(d *Data, c *conf.Messaging, reg prometheus.Registerer, l *slog.Logger) (consume.Dedup, error) {
	group := c.GetConsumerGroup()
	if group == "" {
		group = eventv1.GroupInventory
	}
	guard, err := ordered.New(d.db, group+"/order-events", ordered.WithPolicy(ordered.Lenient),
		ordered.WithLogger(l.With("module", "inventory/consumer")), ordered.WithRegisterer(reg))
	if err != nil {
		return nil, err
	}
	return consume.TxDedup{DB: d.db, Redis: d.rdb, WithTx: WithTx, Effect: func(next idempotent.Effect) idempotent.Effect {
		return guard.Effect(func(ctx context.Context, tx *gorm.DB, ev ordered.Event) error { return next(ctx, tx, ev.Msg) })
	}}, nil
}

// NewCleanup returns the periodic cleanup of the service's mq_dedup rows
// (kit/cleanup.ForService; retention, interval and why the retention has a floor
// are in kitconf.Cleanup). Its counter tide_cleanup_deleted_rows_total{table}
// goes to reg.
func NewCleanup(c *kitconf.Cleanup, d *Data, reg prometheus.Registerer, l *slog.Logger) (*cleanup.Service, error) {
	return cleanup.ForService("inventory", d.db, c, false, reg, l)
}
