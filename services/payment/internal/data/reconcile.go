package data

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/services/kit/reconcile"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

// NewRunner returns the reconciliation runner: lease in Redis
// (payment:reconcile:), runs, discrepancies and audit in the payment
// database. With reconcile.repair false discrepancies are only reported.
func NewRunner(c *conf.Reconcile, d *Data, reg prometheus.Registerer, l *slog.Logger) (*reconcile.Runner, error) {
	var opts []reconcile.Option
	if c.GetRepair() {
		opts = append(opts, reconcile.WithRepair(reconcile.StatusMismatch, reconcile.MissingOurs, reconcile.Duplicate,
			reconcile.AmountMismatch, biz.OrderMissingClass, biz.UserMismatch))
	}
	opts = append(opts, reconcile.WithLogger(l), reconcile.WithRegisterer(reg), reconcile.WithLeasePrefix("payment:reconcile:"))
	return reconcile.New(d.db, d.rdb, opts...)
}
