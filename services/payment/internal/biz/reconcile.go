package biz

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidemq/tide/services/kit/reconcile"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

// StatementLine is one capture or refund as the gateway recorded it.
type StatementLine struct {
	ID        int64     `json:"id"`
	Ref       string    `json:"ref"`
	PaymentID string    `json:"payment_id"`
	OrderID   string    `json:"order_id"`
	Kind      string    `json:"kind"` // LineCapture, LineRefund
	Amount    int64     `json:"amount"`
	CreatedAt time.Time `json:"created_at"`
}

// Statement line kinds.
const (
	LineCapture = "capture"
	LineRefund  = "refund"
)

// CaptureRef is the reference of a payment's one legitimate capture;
// RefundRef that of its refund; CaptureRefundRef that of the refund of
// any other capture line (reconciliation's repair).
func CaptureRef(paymentID string) string        { return paymentID + ":capture" }
func RefundRef(paymentID string) string         { return paymentID + ":refund" }
func CaptureRefundRef(captureRef string) string { return captureRef + "#refund" }

// Statement reads the gateway's statement and refunds stray captures.
type Statement interface {
	// CapturesAfter returns capture lines with id > after, by id.
	CapturesAfter(ctx context.Context, after int64, limit int) ([]StatementLine, error)
	// LinesFor returns every line of these payments.
	LinesFor(ctx context.Context, paymentIDs []string) ([]StatementLine, error)
	// Line returns the line with this reference, or nil.
	Line(ctx context.Context, ref string) (*StatementLine, error)
	// RefundCapture refunds one capture line (reference
	// CaptureRefundRef(ref)); idempotent per reference.
	RefundCapture(ctx context.Context, l *StatementLine) error
}

// Ledger pages through our payments for reconciliation.
type Ledger interface {
	// PaymentsAfter returns payments with id > after, by id.
	PaymentsAfter(ctx context.Context, after string, limit int) ([]*Payment, error)
	// PaymentsByID returns the payments among ids that exist.
	PaymentsByID(ctx context.Context, ids []string) (map[string]*Payment, error)
}

// Classes of the payments job besides reconcile's own.
const (
	// OrderMissingClass: a payment for an order the order service does
	// not know.
	OrderMissingClass reconcile.Class = "order_missing"
	// UserMismatch: a payment by another user than the order's.
	UserMismatch reconcile.Class = "user_mismatch"
)

// Repair actions of the payments job.
const (
	ActionReemitPaid    = "reemit-paid"    // PaymentSucceeded again (order missed it)
	ActionRefund        = "refund"         // refund our payment (order cancelled)
	ActionRefundCapture = "refund-capture" // refund a stray gateway capture
)

// PaymentsJob reconciles our payments with the order service's orders and
// the gateway's statement (services/kit/reconcile.Job). Pages: our
// payments by id ("p:<id>" cursors), then the gateway's captures by line
// id ("g:<id>"). Discrepancies:
//
//   - payment SUCCEEDED for an order the order service does not know
//     (order_missing), by another user than the order's (user_mismatch),
//     or whose amount or capture is not the order's total
//     (amount_mismatch): refund;
//   - payment SUCCEEDED, order not PAID: status_mismatch; re-emit
//     PaymentSucceeded (order CREATED/RESERVED) or refund (order
//     CANCELLED);
//   - payment SUCCEEDED without its capture, or REFUNDED without its
//     refund line: missing_provider (left open);
//   - a capture whose payment we do not have: missing_ours; a second
//     capture of one payment: duplicate; both refunded at the gateway.
//
// Items changed within Grace of the run's AsOf are in flight.
type PaymentsJob struct {
	UC        *PaymentUsecase
	Ledger    Ledger
	Statement Statement
	Orders    OrderReader
	Grace     time.Duration
}

// JobPayments is the job's name.
const JobPayments = "payments"

// Name implements reconcile.Job.
func (j *PaymentsJob) Name() string { return JobPayments }

// Check implements reconcile.Job.
func (j *PaymentsJob) Check(ctx context.Context, s reconcile.Scan) (reconcile.Page, error) {
	cut := s.AsOf.Add(-j.Grace)
	switch {
	case s.Cursor == "" || strings.HasPrefix(s.Cursor, "p:"):
		return j.checkPayments(ctx, strings.TrimPrefix(s.Cursor, "p:"), s.Limit, cut)
	case strings.HasPrefix(s.Cursor, "g:"):
		after, err := strconv.ParseInt(strings.TrimPrefix(s.Cursor, "g:"), 10, 64)
		if err != nil {
			return reconcile.Page{}, fmt.Errorf("%w: cursor %q", reconcile.ErrInvalidJob, s.Cursor)
		}
		return j.checkCaptures(ctx, after, s.Limit, cut)
	}
	return reconcile.Page{}, fmt.Errorf("%w: cursor %q", reconcile.ErrInvalidJob, s.Cursor)
}

func (j *PaymentsJob) checkPayments(ctx context.Context, after string, limit int, cut time.Time) (reconcile.Page, error) {
	ps, err := j.Ledger.PaymentsAfter(ctx, after, limit)
	if err != nil {
		return reconcile.Page{}, err
	}
	page := reconcile.Page{Checked: len(ps), Next: "g:0"}
	if len(ps) == limit {
		page.Next = "p:" + ps[len(ps)-1].ID
	}
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	lines, err := j.Statement.LinesFor(ctx, ids)
	if err != nil {
		return reconcile.Page{}, err
	}
	refs := map[string]StatementLine{}
	for _, l := range lines {
		refs[l.Ref] = l
	}
	for _, p := range ps {
		key := "payment:" + p.ID
		if p.UpdatedAt.After(cut) {
			page.Discrepancies = append(page.Discrepancies, reconcile.Discrepancy{Key: key, Class: reconcile.InFlight})
			continue
		}
		ev := map[string]any{"payment": p}
		switch p.Status {
		case StatusRefunded:
			if _, ok := refs[RefundRef(p.ID)]; !ok {
				page.Discrepancies = append(page.Discrepancies, reconcile.Discrepancy{Key: key, Class: reconcile.MissingProvider,
					Evidence: with(ev, "gateway", "no refund line "+RefundRef(p.ID))})
			}
			continue
		case StatusSucceeded:
		default:
			continue
		}
		capture, ok := refs[CaptureRef(p.ID)]
		if !ok {
			page.Discrepancies = append(page.Discrepancies, reconcile.Discrepancy{Key: key, Class: reconcile.MissingProvider,
				Evidence: with(ev, "gateway", "no capture line "+CaptureRef(p.ID))})
			continue
		}
		ev["capture"] = capture
		o, err := j.Orders.Order(ctx, p.OrderID)
		if err != nil {
			return reconcile.Page{}, fmt.Errorf("biz: order %s: %w", p.OrderID, err)
		}
		ev["order"] = o
		if d, ok := checkAgainstOrder(key, p, capture, o, ev); ok {
			page.Discrepancies = append(page.Discrepancies, d)
		}
	}
	return page, nil
}

// checkAgainstOrder compares a SUCCEEDED payment and its capture with
// its order. The money checks come first: a payment that does not match
// its order is refunded whatever the order's status (an order that
// refused it stays unpaid and is cancelled at its deadline; one that
// accepted it, from an older version or a bug, keeps its status and the
// refund is in its timeline).
func checkAgainstOrder(key string, p *Payment, capture StatementLine, o *Order, ev map[string]any) (reconcile.Discrepancy, bool) {
	d := reconcile.Discrepancy{Key: key, Evidence: ev}
	switch {
	case o.Status == OrderMissing:
		d.Class, d.Action = OrderMissingClass, ActionRefund
	case o.UserID != p.UserID:
		d.Class, d.Action = UserMismatch, ActionRefund
	case o.Total != p.Amount || o.Total != capture.Amount:
		d.Class, d.Action = reconcile.AmountMismatch, ActionRefund
	case o.Status == OrderPaid:
		return d, false
	case o.Status == OrderCreated || o.Status == OrderReserved:
		d.Class, d.Action = reconcile.StatusMismatch, ActionReemitPaid
	case o.Status == OrderCancelled:
		d.Class, d.Action = reconcile.StatusMismatch, ActionRefund
	default:
		d.Class = reconcile.StatusMismatch // an unknown status: left open for a human
	}
	return d, true
}

func (j *PaymentsJob) checkCaptures(ctx context.Context, after int64, limit int, cut time.Time) (reconcile.Page, error) {
	caps, err := j.Statement.CapturesAfter(ctx, after, limit)
	if err != nil {
		return reconcile.Page{}, err
	}
	page := reconcile.Page{Checked: len(caps)}
	if len(caps) == limit {
		page.Next = "g:" + strconv.FormatInt(caps[len(caps)-1].ID, 10)
	}
	var ids []string
	for _, c := range caps {
		ids = append(ids, c.PaymentID)
	}
	ours, err := j.Ledger.PaymentsByID(ctx, ids)
	if err != nil {
		return reconcile.Page{}, err
	}
	lines, err := j.Statement.LinesFor(ctx, ids)
	if err != nil {
		return reconcile.Page{}, err
	}
	refs := map[string]bool{}
	for _, l := range lines {
		refs[l.Ref] = true
	}
	for _, c := range caps {
		key := "capture:" + c.Ref
		if c.CreatedAt.After(cut) {
			page.Discrepancies = append(page.Discrepancies, reconcile.Discrepancy{Key: key, Class: reconcile.InFlight})
			continue
		}
		p, known := ours[c.PaymentID]
		if refs[CaptureRefundRef(c.Ref)] || (known && c.Ref == CaptureRef(p.ID)) {
			continue // the payment's own capture, or a stray one already refunded
		}
		if !known && refs[RefundRef(c.PaymentID)] {
			continue
		}
		ev := map[string]any{"capture": c}
		class := reconcile.MissingOurs
		if known {
			class = reconcile.Duplicate
			ev["payment"] = p
			ev["legitimate_capture"] = CaptureRef(p.ID)
		} else {
			ev["payment"] = "none with id " + c.PaymentID
		}
		page.Discrepancies = append(page.Discrepancies, reconcile.Discrepancy{Key: key, Class: class, Evidence: ev, Action: ActionRefundCapture})
	}
	return page, nil
}

// refundReason is the reason recorded with a reconciliation refund.
func refundReason(c reconcile.Class) string {
	switch c {
	case OrderMissingClass:
		return "reconcile: order does not exist"
	case UserMismatch:
		return "reconcile: paid by another user than the order's"
	case reconcile.AmountMismatch:
		return "reconcile: amount differs from the order's total"
	}
	return "reconcile: order cancelled"
}

func with(m map[string]any, k string, v any) map[string]any {
	m[k] = v
	return m
}

// Repair implements reconcile.Job: every action is idempotent (the
// conditional refund, the consumer's dedup of a re-emitted event, the
// gateway's unique reference), so the runner's at-least-once calls make
// one effect.
func (j *PaymentsJob) Repair(ctx context.Context, d reconcile.Discrepancy, idempotencyKey string) error {
	switch d.Action {
	case ActionReemitPaid:
		return j.UC.ReemitSucceeded(ctx, strings.TrimPrefix(d.Key, "payment:"))
	case ActionRefund:
		_, err := j.UC.RefundPayment(ctx, strings.TrimPrefix(d.Key, "payment:"), refundReason(d.Class))
		return err
	case ActionRefundCapture:
		l, err := j.Statement.Line(ctx, strings.TrimPrefix(d.Key, "capture:"))
		if err != nil {
			return err
		}
		if l == nil {
			return fmt.Errorf("biz: no gateway line %s", d.Key)
		}
		return j.Statement.RefundCapture(ctx, l)
	}
	return fmt.Errorf("biz: unknown repair action %q (%s)", d.Action, idempotencyKey)
}

// BrokerCheck is the job that reports broker state nobody else looks at
// (half messages past their timeout, dead letters); data implements it
// over the broker's admin API.
type BrokerCheck interface {
	reconcile.Job
}

// NewPaymentsJob returns the payments job with c's grace window.
func NewPaymentsJob(c *conf.Reconcile, uc *PaymentUsecase, ledger Ledger, statement Statement, orders OrderReader) *PaymentsJob {
	return &PaymentsJob{UC: uc, Ledger: ledger, Statement: statement, Orders: orders, Grace: c.GetGrace().AsDuration()}
}
