package service

import (
	"log/slog"

	"github.com/tidemq/tide/services/kit/reconcile"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
	"github.com/tidemq/tide/services/payment/internal/biz"
)

// NewReconcileJobs returns the service's reconciliation jobs ("payments",
// "broker") on runner, as services/kit/reconcile/rechttp serves them on
// /v1/reconcile/.
func NewReconcileJobs(runner *reconcile.Runner, payments *biz.PaymentsJob, broker biz.BrokerCheck, l *slog.Logger) *rechttp.Jobs {
	return rechttp.New(runner, l, payments, broker)
}
