package data

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/tidemq/tide/services/kit/store"
	"github.com/tidemq/tide/services/order/internal/biz"
)

// orderRow is a row of orders.
type orderRow struct {
	ID           string `gorm:"primaryKey"`
	UserID       string
	Status       string
	Items        string // JSON array of itemJSON
	Total        int64
	Seq          int64
	CancelAt     time.Time
	CancelReason string
	CancelTimer  string
	PaymentID    string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

func (orderRow) TableName() string { return "orders" }

type itemJSON struct {
	ProductID string `json:"product_id"`
	Quantity  int32  `json:"quantity"`
	UnitPrice int64  `json:"unit_price"`
}

// timelineRow is a row of order_timeline.
type timelineRow struct {
	ID      int64 `gorm:"primaryKey;autoIncrement"`
	OrderID string
	Event   string
	Topic   string
	Seq     int64
	Status  string
	Detail  string
	At      time.Time
}

func (timelineRow) TableName() string { return "order_timeline" }

type orderRepo struct {
	data *Data
	log  *slog.Logger
}

// NewOrderRepo returns the gorm implementation of biz.OrderRepo.
func NewOrderRepo(data *Data, l *slog.Logger) biz.OrderRepo {
	return &orderRepo{data: data, log: l.With("module", "order/data")}
}

func toRow(o *biz.Order) (*orderRow, error) {
	items := make([]itemJSON, len(o.Items))
	for i, it := range o.Items {
		items[i] = itemJSON{ProductID: it.ProductID, Quantity: it.Quantity, UnitPrice: it.UnitPrice}
	}
	b, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	return &orderRow{ID: o.ID, UserID: o.UserID, Status: string(o.Status), Items: string(b), Total: o.Total, Seq: o.Seq,
		CancelAt: o.CancelAt.UTC(), CancelReason: o.CancelReason, CancelTimer: o.CancelTimer, PaymentID: o.PaymentID,
		CreatedAt: o.CreatedAt.UTC(), UpdatedAt: o.UpdatedAt.UTC()}, nil
}

func (r *orderRow) toBiz() (*biz.Order, error) {
	var items []itemJSON
	if err := json.Unmarshal([]byte(r.Items), &items); err != nil {
		return nil, fmt.Errorf("order %s: items: %w", r.ID, err)
	}
	o := &biz.Order{ID: r.ID, UserID: r.UserID, Status: biz.Status(r.Status), Total: r.Total, Seq: r.Seq,
		CancelAt: r.CancelAt.UTC(), CancelReason: r.CancelReason, CancelTimer: r.CancelTimer, PaymentID: r.PaymentID,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	for _, it := range items {
		o.Items = append(o.Items, biz.Item{ProductID: it.ProductID, Quantity: it.Quantity, UnitPrice: it.UnitPrice})
	}
	return o, nil
}

func (r *orderRepo) Create(ctx context.Context, o *biz.Order) error {
	row, err := toRow(o)
	if err != nil {
		return err
	}
	if err := r.data.DB(ctx).Create(row).Error; err != nil {
		return fmt.Errorf("insert order %s: %w", o.ID, err)
	}
	return nil
}

func (r *orderRepo) find(db *gorm.DB, id string) (*biz.Order, error) {
	var row orderRow
	found, err := store.Take(db.Where("id = ?", id), &row)
	if err != nil {
		return nil, fmt.Errorf("select order %s: %w", id, err)
	}
	if !found {
		return nil, biz.ErrOrderNotFound
	}
	return row.toBiz()
}

func (r *orderRepo) Get(ctx context.Context, id string) (*biz.Order, error) {
	return r.find(r.data.DB(ctx), id)
}

func (r *orderRepo) Lock(ctx context.Context, id string) (*biz.Order, error) {
	return r.find(r.data.DB(ctx).Clauses(clause.Locking{Strength: "UPDATE"}), id)
}

func (r *orderRepo) Update(ctx context.Context, o *biz.Order) error {
	res := r.data.DB(ctx).Model(&orderRow{}).Where("id = ?", o.ID).Updates(map[string]any{
		"status": string(o.Status), "seq": o.Seq, "cancel_reason": o.CancelReason, "cancel_timer": o.CancelTimer,
		"payment_id": o.PaymentID, "updated_at": o.UpdatedAt.UTC(),
	})
	if res.Error != nil {
		return fmt.Errorf("update order %s: %w", o.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return biz.ErrOrderNotFound
	}
	return nil
}

func (r *orderRepo) AddTimeline(ctx context.Context, e *biz.TimelineEntry) error {
	row := &timelineRow{OrderID: e.OrderID, Event: e.Event, Topic: e.Topic, Seq: e.Seq, Status: string(e.Status),
		Detail: truncate(e.Detail, 512), At: e.At.UTC()}
	if err := r.data.DB(ctx).Create(row).Error; err != nil {
		return fmt.Errorf("insert timeline of order %s: %w", e.OrderID, err)
	}
	return nil
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

func (r *orderRepo) HasEvent(ctx context.Context, orderID, topic string, seq int64) (bool, error) {
	var n int64
	err := r.data.DB(ctx).Model(&timelineRow{}).Where("order_id = ? AND topic = ? AND seq = ?", orderID, topic, seq).
		Limit(1).Count(&n).Error
	if err != nil {
		return false, fmt.Errorf("select timeline of order %s: %w", orderID, err)
	}
	return n > 0, nil
}

func (r *orderRepo) Timeline(ctx context.Context, orderID string) ([]*biz.TimelineEntry, error) {
	var rows []timelineRow
	if err := r.data.DB(ctx).Where("order_id = ?", orderID).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("select timeline of order %s: %w", orderID, err)
	}
	out := make([]*biz.TimelineEntry, len(rows))
	for i, row := range rows {
		out[i] = &biz.TimelineEntry{OrderID: row.OrderID, Event: row.Event, Topic: row.Topic, Seq: row.Seq,
			Status: biz.Status(row.Status), Detail: row.Detail, At: row.At.UTC()}
	}
	return out, nil
}

func (r *orderRepo) Overdue(ctx context.Context, now time.Time, limit int) ([]string, error) {
	var ids []string
	err := r.data.DB(ctx).Model(&orderRow{}).
		Where("status IN ? AND cancel_at <= ?", []string{string(biz.StatusCreated), string(biz.StatusReserved)}, now.UTC()).
		Order("cancel_at").Limit(limit).Pluck("id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("select overdue orders: %w", err)
	}
	return ids, nil
}

func (r *orderRepo) List(ctx context.Context, f biz.ListFilter) ([]*biz.Order, error) {
	q := r.data.DB(ctx).Model(&orderRow{})
	if f.Status != "" {
		q = q.Where("status = ?", string(f.Status))
	}
	if f.UserID != "" {
		q = q.Where("user_id = ?", f.UserID)
	}
	if f.After != "" {
		q = q.Where("id < ?", f.After)
	}
	var rows []orderRow
	if err := q.Order("id DESC").Limit(f.Limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("select orders: %w", err)
	}
	out := make([]*biz.Order, 0, len(rows))
	for i := range rows {
		o, err := rows[i].toBiz()
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}
