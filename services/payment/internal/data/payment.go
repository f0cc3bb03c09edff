package data

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/tidemq/tide/services/kit/store"
	"github.com/tidemq/tide/services/payment/internal/biz"
)

type paymentRow struct {
	ID             string `gorm:"primaryKey"`
	OrderID        string
	UserID         string
	Amount         int64
	Status         string
	IdempotencyKey string
	Reason         string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

func (paymentRow) TableName() string { return "payments" }

func (r *paymentRow) biz() *biz.Payment {
	return &biz.Payment{ID: r.ID, OrderID: r.OrderID, UserID: r.UserID, Amount: r.Amount, Status: biz.Status(r.Status),
		IdempotencyKey: r.IdempotencyKey, Reason: r.Reason, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

type cancelledOrderRow struct {
	OrderID   string `gorm:"primaryKey"`
	Reason    string
	CreatedAt time.Time
}

func (cancelledOrderRow) TableName() string { return "cancelled_orders" }

// isDuplicate reports a MySQL duplicate-key error (1062), and on which key.
func isDuplicate(err error) (string, bool) {
	var me *gomysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 {
		return me.Message, true
	}
	return "", false
}

// ErrNoTransaction: a repository method that only makes sense inside a
// transaction (LockOrder) was called without one in its context.
var ErrNoTransaction = errors.New("data: no transaction in context")

type paymentRepo struct{ data *Data }

// NewPaymentRepo returns the gorm PaymentRepo.
func NewPaymentRepo(d *Data) biz.PaymentRepo { return &paymentRepo{data: d} }

func (r *paymentRepo) Create(ctx context.Context, p *biz.Payment) error {
	row := paymentRow{ID: p.ID, OrderID: p.OrderID, UserID: p.UserID, Amount: p.Amount, Status: string(p.Status),
		IdempotencyKey: p.IdempotencyKey, Reason: p.Reason, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	err := r.data.DB(ctx).Create(&row).Error
	if msg, ok := isDuplicate(err); ok {
		if strings.Contains(msg, "payments_order") {
			return biz.ErrOrderAlreadyPaid.WithMetadata(map[string]string{"order_id": p.OrderID})
		}
		return biz.ErrPaymentExists.WithMetadata(map[string]string{"payment_id": p.ID})
	}
	if err != nil {
		return fmt.Errorf("data: create payment: %w", err)
	}
	return nil
}

func (r *paymentRepo) take(db *gorm.DB, what string) (*biz.Payment, error) {
	var row paymentRow
	found, err := store.Take(db, &row)
	if err != nil {
		return nil, fmt.Errorf("data: get payment %s: %w", what, err)
	}
	if !found {
		return nil, biz.ErrPaymentNotFound.WithMetadata(map[string]string{"payment": what})
	}
	return row.biz(), nil
}

func (r *paymentRepo) Get(ctx context.Context, id string) (*biz.Payment, error) {
	return r.take(r.data.DB(ctx).Where("id = ?", id), id)
}

func (r *paymentRepo) GetByOrder(ctx context.Context, orderID string) (*biz.Payment, error) {
	p, err := r.take(r.data.DB(ctx).Where("order_id = ?", orderID), orderID)
	if errors.Is(err, biz.ErrPaymentNotFound) {
		return nil, nil
	}
	return p, err
}

func (r *paymentRepo) SetStatus(ctx context.Context, id string, from, to biz.Status, reason string) (bool, error) {
	res := r.data.DB(ctx).Model(&paymentRow{}).Where("id = ? AND status = ?", id, string(from)).
		Updates(map[string]any{"status": string(to), "reason": reason, "updated_at": time.Now().UTC()})
	if res.Error != nil {
		return false, fmt.Errorf("data: payment %s %s->%s: %w", id, from, to, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// LockOrder upserts the order's order_locks row: the new row's insert
// lock, or the exclusive lock that ON DUPLICATE KEY UPDATE takes on an
// existing row, is held until the transaction in ctx ends, so a second
// transaction locking the same order blocks until then (bounded by
// innodb_lock_wait_timeout and ctx). Waiters ask for the exclusive lock
// straight away (no shared-then-exclusive upgrade, the INSERT IGNORE
// pattern's deadlock). Without a transaction in ctx the lock would be
// released at once: ErrNoTransaction.
func (r *paymentRepo) LockOrder(ctx context.Context, orderID string) error {
	if _, ok := ctx.Value(txKey{}).(*gorm.DB); !ok {
		return fmt.Errorf("lock order %s: %w", orderID, ErrNoTransaction)
	}
	err := r.data.DB(ctx).Exec("INSERT INTO order_locks (order_id, locked_at) VALUES (?, ?) "+
		"ON DUPLICATE KEY UPDATE locked_at = VALUES(locked_at)", orderID, time.Now().UTC()).Error
	if err != nil {
		return fmt.Errorf("data: lock order %s: %w", orderID, err)
	}
	return nil
}

func (r *paymentRepo) MarkOrderCancelled(ctx context.Context, orderID, reason string) error {
	row := cancelledOrderRow{OrderID: orderID, Reason: reason, CreatedAt: time.Now().UTC()}
	if err := r.data.DB(ctx).Clauses(clause.Insert{Modifier: "IGNORE"}).Create(&row).Error; err != nil {
		return fmt.Errorf("data: mark order %s cancelled: %w", orderID, err)
	}
	return nil
}

func (r *paymentRepo) OrderCancelled(ctx context.Context, orderID string) (bool, error) {
	var n int64
	err := r.data.DB(ctx).Raw("SELECT COUNT(*) FROM cancelled_orders WHERE order_id = ? FOR UPDATE", orderID).Scan(&n).Error
	if err != nil {
		return false, fmt.Errorf("data: order %s cancelled: %w", orderID, err)
	}
	return n > 0, nil
}

// Ledger is biz.Ledger on the payments table.
type Ledger struct{ data *Data }

// NewLedger returns the reconciliation's view of our payments.
func NewLedger(d *Data) biz.Ledger { return &Ledger{data: d} }

// PaymentsAfter implements biz.Ledger.
func (l *Ledger) PaymentsAfter(ctx context.Context, after string, limit int) ([]*biz.Payment, error) {
	var rows []paymentRow
	if err := l.data.DB(ctx).Where("id > ?", after).Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("data: payments after %q: %w", after, err)
	}
	out := make([]*biz.Payment, len(rows))
	for i := range rows {
		out[i] = rows[i].biz()
	}
	return out, nil
}

// PaymentsByID implements biz.Ledger.
func (l *Ledger) PaymentsByID(ctx context.Context, ids []string) (map[string]*biz.Payment, error) {
	out := map[string]*biz.Payment{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []paymentRow
	if err := l.data.DB(ctx).Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("data: payments by id: %w", err)
	}
	for i := range rows {
		out[rows[i].ID] = rows[i].biz()
	}
	return out, nil
}
