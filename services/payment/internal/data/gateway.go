package data

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm/clause"

	"github.com/tidemq/tide/services/kit/store"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/fault"
)

// gatewayRow is one line of the simulated gateway's statement.
type gatewayRow struct {
	ID        int64 `gorm:"primaryKey"`
	Ref       string
	PaymentID string
	OrderID   string
	Kind      string
	Amount    int64
	CreatedAt time.Time
}

func (gatewayRow) TableName() string { return "gateway_ledger" }

func (r *gatewayRow) line() biz.StatementLine {
	return biz.StatementLine{ID: r.ID, Ref: r.Ref, PaymentID: r.PaymentID, OrderID: r.OrderID, Kind: r.Kind, Amount: r.Amount,
		CreatedAt: r.CreatedAt.UTC()}
}

// Gateway simulates an external payment gateway. It writes its ledger
// outside the caller's transaction (its own autocommit statements), as a
// real gateway would: a capture survives our rollback, which is exactly
// the "captured at the gateway but unknown to us" discrepancy
// reconciliation looks for. Lines are idempotent per reference (capture
// = payment id + ":capture"), unless a fault adds a duplicate. Safe for
// concurrent use.
type Gateway struct {
	data   *Data
	faults *fault.Set
	log    *slog.Logger
}

// NewGateway returns the simulated gateway, honouring the
// gateway_duplicate_callback and gateway_timeout_after_capture faults.
func NewGateway(d *Data, faults *fault.Set, l *slog.Logger) *Gateway {
	return &Gateway{data: d, faults: faults, log: l}
}

func (g *Gateway) record(ctx context.Context, paymentID, orderID string, amount int64, kind, ref string) error {
	row := gatewayRow{Ref: ref, PaymentID: paymentID, OrderID: orderID, Kind: kind, Amount: amount, CreatedAt: time.Now().UTC()}
	// g.data.db, not DB(ctx): the gateway is not part of our transaction.
	if err := g.data.db.WithContext(context.WithoutCancel(ctx)).Clauses(clause.Insert{Modifier: "IGNORE"}).Create(&row).Error; err != nil {
		return fmt.Errorf("gateway: %s %s: %w", kind, ref, err)
	}
	return nil
}

// Capture implements biz.Gateway.
func (g *Gateway) Capture(ctx context.Context, p *biz.Payment) error {
	ref := biz.CaptureRef(p.ID)
	if err := g.record(ctx, p.ID, p.OrderID, p.Amount, biz.LineCapture, ref); err != nil {
		return err
	}
	if g.faults.Fire(fault.GatewayDuplicateCallback) {
		g.log.WarnContext(ctx, "FAULT: gateway duplicate capture callback", "payment_id", p.ID, "order_id", p.OrderID)
		if err := g.record(ctx, p.ID, p.OrderID, p.Amount, biz.LineCapture, ref+":dup"); err != nil {
			return err
		}
	}
	if g.faults.Fire(fault.GatewayTimeoutAfterCapture) {
		g.log.WarnContext(ctx, "FAULT: gateway timeout after capture", "payment_id", p.ID, "order_id", p.OrderID)
		return biz.ErrGatewayTimeout
	}
	return nil
}

// Refund implements biz.Gateway.
func (g *Gateway) Refund(ctx context.Context, p *biz.Payment) error {
	return g.record(ctx, p.ID, p.OrderID, p.Amount, biz.LineRefund, biz.RefundRef(p.ID))
}

// RefundCapture implements biz.Statement.
func (g *Gateway) RefundCapture(ctx context.Context, l *biz.StatementLine) error {
	g.log.InfoContext(ctx, "gateway: refunding capture", "ref", l.Ref, "payment_id", l.PaymentID, "order_id", l.OrderID)
	return g.record(ctx, l.PaymentID, l.OrderID, l.Amount, biz.LineRefund, biz.CaptureRefundRef(l.Ref))
}

func lines(rows []gatewayRow) []biz.StatementLine {
	out := make([]biz.StatementLine, len(rows))
	for i := range rows {
		out[i] = rows[i].line()
	}
	return out
}

// Statement lists the gateway's ledger lines with id > after, oldest
// first, up to limit.
func (g *Gateway) Statement(ctx context.Context, after int64, limit int) ([]biz.StatementLine, error) {
	var rows []gatewayRow
	if err := g.data.db.WithContext(ctx).Where("id > ?", after).Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("gateway: statement: %w", err)
	}
	return lines(rows), nil
}

// CapturesAfter implements biz.Statement.
func (g *Gateway) CapturesAfter(ctx context.Context, after int64, limit int) ([]biz.StatementLine, error) {
	var rows []gatewayRow
	if err := g.data.db.WithContext(ctx).Where("id > ? AND kind = ?", after, biz.LineCapture).Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("gateway: captures: %w", err)
	}
	return lines(rows), nil
}

// LinesFor implements biz.Statement.
func (g *Gateway) LinesFor(ctx context.Context, paymentIDs []string) ([]biz.StatementLine, error) {
	if len(paymentIDs) == 0 {
		return nil, nil
	}
	var rows []gatewayRow
	if err := g.data.db.WithContext(ctx).Where("payment_id IN ?", paymentIDs).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("gateway: lines: %w", err)
	}
	return lines(rows), nil
}

// Line implements biz.Statement.
func (g *Gateway) Line(ctx context.Context, ref string) (*biz.StatementLine, error) {
	var row gatewayRow
	found, err := store.Take(g.data.db.WithContext(ctx).Where("ref = ?", ref), &row)
	if err != nil {
		return nil, fmt.Errorf("gateway: line %s: %w", ref, err)
	}
	if !found {
		return nil, nil
	}
	l := row.line()
	return &l, nil
}
