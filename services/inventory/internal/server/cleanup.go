package server

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/inventory/internal/data"
	"github.com/tidemq/tide/services/kit/cleanup"
)

// Cleanup deletes the service's old mq_dedup rows
// every cleanup.interval (kit/cleanup; retention, interval and why the
// retention has a floor are in conf.Cleanup). It is a Kratos
// transport.Server; Cleaner runs a pass on demand.
type Cleanup struct {
	*kratosmq.Task
	Cleaner *cleanup.Cleaner
}

// NewCleanup returns the cleanup of the service's database; it fails on a
// retention below cleanup.MinRetention. Its counter
// tide_cleanup_deleted_rows_total{table} goes to reg.
func NewCleanup(c *conf.Cleanup, d *data.Data, reg *prometheus.Registry, l *slog.Logger) (*Cleanup, error) {
	cl, err := cleanup.New(d.Gorm(), cleanup.Options{DedupTable: idempotent.DefaultTable,
		Retention: c.GetRetention().AsDuration(), Interval: c.GetInterval().AsDuration(), Disabled: c.GetDisabled(),
		Logger: l.With("module", "inventory/cleanup"), Registerer: reg})
	if err != nil {
		return nil, err
	}
	return &Cleanup{Task: cl.Server("inventory-cleanup"), Cleaner: cl}, nil
}
