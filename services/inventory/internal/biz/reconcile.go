package biz

import (
	"context"
	"fmt"
	"time"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/kit/reconcile"
)

// Discrepancy classes of the reservations job.
const (
	// ClassOrphan: a RESERVED reservation whose order does not exist.
	ClassOrphan reconcile.Class = "reservation_without_order"
	// ClassCancelled: a RESERVED reservation of a CANCELLED order (its
	// OrderCancelled was lost or dead-lettered).
	ClassCancelled reconcile.Class = "reservation_of_cancelled_order"
	// ClassPaid: a RESERVED reservation of a PAID order (OrderPaid lost):
	// reported, not repaired (a sale needs the payment's event).
	ClassPaid reconcile.Class = "reservation_of_paid_order"
)

// ActionRelease is the repair of orphan and cancelled reservations.
const ActionRelease = "release"

// JobReservations is the reservations job's name.
const JobReservations = "reservations"

// Reserved is a RESERVED reservation as the reconciliation job sees it.
type Reserved struct {
	OrderID   string
	UpdatedAt time.Time
}

// ReservedLister pages through RESERVED reservations by order id.
type ReservedLister interface {
	ReservedAfter(ctx context.Context, after string, limit int) ([]Reserved, error)
}

// OrderLookup reads an order's status from the order service; found is
// false when the order does not exist.
type OrderLookup interface {
	OrderStatus(ctx context.Context, id string) (status orderv1.OrderStatus, found bool, err error)
}

// RepairLog runs a repair at most once per idempotency key: fn runs in a
// transaction (carried by the ctx it gets) with the key's record, and a
// key already done with the same fingerprint returns nil without fn.
type RepairLog interface {
	Once(ctx context.Context, key string, fingerprint [][]byte, fn func(ctx context.Context) ([]byte, error)) error
}

// ReservationsJob compares inventory's RESERVED reservations with the
// order service's orders (an independent source: its own database, read
// through its gRPC API). A reservation is live only while its order is
// CREATED or RESERVED. One without an order, or of a cancelled order, is
// released through the same idempotent flow as an OrderCancelled event:
// the Release command (stock back, StockReleased in the outbox) runs in
// one transaction with an idempotent dedup record keyed by the repair's
// idempotency key. Reservations changed within the grace window are in
// flight.
type ReservationsJob struct {
	Reservations ReservedLister
	Orders       OrderLookup
	UC           *StockUsecase
	Repairs      RepairLog
	Grace        time.Duration
}

// DefaultGrace is the grace window when reconcile.min_age is unset.
const DefaultGrace = 30 * time.Second

// NewReservationsJob returns the job with rc's grace window (min_age).
func NewReservationsJob(rc *conf.Reconcile, res ReservedLister, orders OrderLookup, uc *StockUsecase, repairs RepairLog) *ReservationsJob {
	grace := DefaultGrace
	if rc.GetMinAge() != nil {
		grace = rc.GetMinAge().AsDuration()
	}
	return &ReservationsJob{Reservations: res, Orders: orders, UC: uc, Repairs: repairs, Grace: grace}
}

// Name implements reconcile.Job.
func (j *ReservationsJob) Name() string { return JobReservations }

// Check implements reconcile.Job: one page of RESERVED reservations.
func (j *ReservationsJob) Check(ctx context.Context, s reconcile.Scan) (reconcile.Page, error) {
	rows, err := j.Reservations.ReservedAfter(ctx, s.Cursor, s.Limit)
	if err != nil {
		return reconcile.Page{}, err
	}
	page := reconcile.Page{Checked: len(rows)}
	if len(rows) == s.Limit && len(rows) > 0 {
		page.Next = rows[len(rows)-1].OrderID
	}
	for _, r := range rows {
		if r.UpdatedAt.After(s.AsOf.Add(-j.Grace)) {
			page.Discrepancies = append(page.Discrepancies, reconcile.Discrepancy{Key: r.OrderID, Class: reconcile.InFlight})
			continue
		}
		d, err := j.check(ctx, r)
		if err != nil {
			return reconcile.Page{}, err
		}
		if d != nil {
			page.Discrepancies = append(page.Discrepancies, *d)
		}
	}
	return page, nil
}

// check classifies one settled reservation by its order's status.
func (j *ReservationsJob) check(ctx context.Context, r Reserved) (*reconcile.Discrepancy, error) {
	st, found, err := j.Orders.OrderStatus(ctx, r.OrderID)
	if err != nil {
		return nil, fmt.Errorf("order %s: %w", r.OrderID, err)
	}
	ev := map[string]any{"reservation": map[string]any{"order_id": r.OrderID, "status": StatusReserved,
		"updated_at": r.UpdatedAt}, "order_found": found}
	if found {
		ev["order_status"] = st.String()
	}
	switch {
	case !found:
		return &reconcile.Discrepancy{Key: r.OrderID, Class: ClassOrphan, Evidence: ev, Action: ActionRelease}, nil
	case st == orderv1.OrderStatus_ORDER_STATUS_CANCELLED:
		return &reconcile.Discrepancy{Key: r.OrderID, Class: ClassCancelled, Evidence: ev, Action: ActionRelease}, nil
	case st == orderv1.OrderStatus_ORDER_STATUS_PAID:
		return &reconcile.Discrepancy{Key: r.OrderID, Class: ClassPaid, Evidence: ev}, nil
	}
	return nil, nil
}

// Repair implements reconcile.Job: Release once per idempotency key.
func (j *ReservationsJob) Repair(ctx context.Context, d reconcile.Discrepancy, key string) error {
	if d.Action != ActionRelease {
		return fmt.Errorf("reservations: no repair %q", d.Action)
	}
	return j.Repairs.Once(ctx, key, [][]byte{[]byte(d.Key), []byte(d.Action)}, func(ctx context.Context) ([]byte, error) {
		out, err := j.UC.Release(ctx, d.Key)
		if err != nil {
			return nil, err
		}
		return []byte(out.String()), nil
	})
}
