package service

import (
	"log/slog"

	"github.com/tidemq/tide/services/inventory/internal/biz"
	"github.com/tidemq/tide/services/kit/reconcile"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
)

// NewReconcileJobs returns the service's reconciliation jobs (the
// reservations job) on runner, as services/kit/reconcile/rechttp serves
// them on /v1/reconcile/.
func NewReconcileJobs(runner *reconcile.Runner, job *biz.ReservationsJob, l *slog.Logger) *rechttp.Jobs {
	return rechttp.New(runner, l.With("module", "inventory/reconcile"), job)
}
