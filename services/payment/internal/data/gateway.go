package data

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm/clause"

	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
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

// StatementLine is one capture or refund as the gateway recorded it.
type StatementLine struct {
	Ref       string    `json:"ref"`
	PaymentID string    `json:"payment_id"`
	OrderID   string    `json:"order_id"`
	Kind      string    `json:"kind"` // capture, refund
	Amount    int64     `json:"amount"`
	CreatedAt time.Time `json:"created_at"`
}

// Gateway simulates an external payment gateway. It writes its ledger
// outside the caller's transaction (its own autocommit statements), as a
// real gateway would: a capture survives our rollback, which is exactly
// the "captured at the gateway but unknown to us" discrepancy
// reconciliation looks for. Captures and refunds are idempotent per
// payment (reference = payment id + kind) unless a fault is switched on.
type Gateway struct {
	data  *Data
	fault *conf.Fault
	log   *slog.Logger
}

// NewGateway returns the simulated gateway with the fault switches of f.
func NewGateway(d *Data, f *conf.Fault, l *slog.Logger) *Gateway {
	return &Gateway{data: d, fault: f, log: l}
}

func (g *Gateway) record(ctx context.Context, p *biz.Payment, kind, ref string) error {
	row := gatewayRow{Ref: ref, PaymentID: p.ID, OrderID: p.OrderID, Kind: kind, Amount: p.Amount, CreatedAt: time.Now().UTC()}
	// g.data.db, not DB(ctx): the gateway is not part of our transaction.
	if err := g.data.db.WithContext(ctx).Clauses(clause.Insert{Modifier: "IGNORE"}).Create(&row).Error; err != nil {
		return fmt.Errorf("gateway: %s %s: %w", kind, p.ID, err)
	}
	return nil
}

// Capture implements biz.Gateway.
func (g *Gateway) Capture(ctx context.Context, p *biz.Payment) error {
	if err := g.record(ctx, p, "capture", p.ID+":capture"); err != nil {
		return err
	}
	if g.fault.GetGatewayDuplicateCallback() {
		g.log.WarnContext(ctx, "FAULT: gateway duplicate capture callback", "payment_id", p.ID)
		if err := g.record(ctx, p, "capture", p.ID+":capture:dup"); err != nil {
			return err
		}
	}
	if g.fault.GetGatewayTimeoutAfterCapture() {
		g.log.WarnContext(ctx, "FAULT: gateway timeout after capture", "payment_id", p.ID)
		return biz.ErrGatewayTimeout
	}
	return nil
}

// Refund implements biz.Gateway.
func (g *Gateway) Refund(ctx context.Context, p *biz.Payment) error {
	return g.record(ctx, p, "refund", p.ID+":refund")
}

// Statement lists the gateway's ledger lines after id after, oldest
// first, up to limit.
func (g *Gateway) Statement(ctx context.Context, after int64, limit int) ([]StatementLine, error) {
	var rows []gatewayRow
	if err := g.data.db.WithContext(ctx).Where("id > ?", after).Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("gateway: statement: %w", err)
	}
	out := make([]StatementLine, len(rows))
	for i, r := range rows {
		out[i] = StatementLine{Ref: r.Ref, PaymentID: r.PaymentID, OrderID: r.OrderID, Kind: r.Kind, Amount: r.Amount, CreatedAt: r.CreatedAt.UTC()}
	}
	return out, nil
}
