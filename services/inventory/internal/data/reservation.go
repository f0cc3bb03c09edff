package data

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/tidemq/tide/services/inventory/internal/biz"
	"github.com/tidemq/tide/services/kit/store"
)

type reservationRow struct {
	OrderID   string `gorm:"primaryKey"`
	Status    string
	Seq       int64
	Reason    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (reservationRow) TableName() string { return "reservations" }

type reservationItemRow struct {
	OrderID   string `gorm:"primaryKey"`
	ProductID string `gorm:"primaryKey"`
	Quantity  int64
}

func (reservationItemRow) TableName() string { return "reservation_items" }

type reservationRepo struct{ data *Data }

// NewReservationRepo returns the gorm ReservationRepo.
func NewReservationRepo(d *Data) biz.ReservationRepo { return &reservationRepo{data: d} }

func (r *reservationRepo) GetForUpdate(ctx context.Context, orderID string) (*biz.Reservation, error) {
	db := r.data.DB(ctx)
	var row reservationRow
	found, err := store.Take(db.Clauses(clause.Locking{Strength: "UPDATE"}).Where("order_id = ?", orderID), &row)
	if err != nil {
		return nil, fmt.Errorf("data: get reservation %s: %w", orderID, err)
	}
	if !found {
		return nil, nil
	}
	return r.load(db, &row)
}

func (r *reservationRepo) load(db *gorm.DB, row *reservationRow) (*biz.Reservation, error) {
	var items []reservationItemRow
	if err := db.Where("order_id = ?", row.OrderID).Order("product_id").Find(&items).Error; err != nil {
		return nil, fmt.Errorf("data: reservation items %s: %w", row.OrderID, err)
	}
	res := &biz.Reservation{OrderID: row.OrderID, Status: biz.Status(row.Status), Seq: row.Seq, Reason: row.Reason,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}
	for _, it := range items {
		res.Items = append(res.Items, biz.Item{ProductID: it.ProductID, Quantity: it.Quantity})
	}
	return res, nil
}

func (r *reservationRepo) Create(ctx context.Context, res *biz.Reservation) error {
	db := r.data.DB(ctx)
	row := reservationRow{OrderID: res.OrderID, Status: string(res.Status), Seq: res.Seq, Reason: res.Reason,
		CreatedAt: res.CreatedAt, UpdatedAt: res.UpdatedAt}
	if err := db.Create(&row).Error; err != nil {
		return fmt.Errorf("data: create reservation %s: %w", res.OrderID, err)
	}
	if len(res.Items) == 0 {
		return nil
	}
	items := make([]reservationItemRow, len(res.Items))
	for i, it := range res.Items {
		items[i] = reservationItemRow{OrderID: res.OrderID, ProductID: it.ProductID, Quantity: it.Quantity}
	}
	if err := db.Create(&items).Error; err != nil {
		return fmt.Errorf("data: create reservation items %s: %w", res.OrderID, err)
	}
	return nil
}

// ErrStatusChanged: SetStatus found the reservation in another status.
var ErrStatusChanged = errors.New("data: reservation status changed")

func (r *reservationRepo) SetStatus(ctx context.Context, orderID string, from, to biz.Status, seq int64) error {
	res := r.data.DB(ctx).Model(&reservationRow{}).Where("order_id = ? AND status = ?", orderID, string(from)).
		Updates(map[string]any{"status": string(to), "seq": seq, "updated_at": time.Now()})
	if res.Error != nil {
		return fmt.Errorf("data: set reservation %s %s->%s: %w", orderID, from, to, res.Error)
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("%w: %s not in %s", ErrStatusChanged, orderID, from)
	}
	return nil
}

func (r *reservationRepo) List(ctx context.Context, status biz.Status, limit int) ([]*biz.Reservation, error) {
	db := r.data.DB(ctx)
	var rows []reservationRow
	if err := db.Where("status = ?", string(status)).Order("created_at").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("data: list reservations: %w", err)
	}
	out := make([]*biz.Reservation, 0, len(rows))
	for i := range rows {
		res, err := r.load(db, &rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// ReservedAfter returns up to limit RESERVED reservations with order ids
// greater than after, by order id (the reconciliation job's pages: an
// immutable key, so a resumed run neither skips nor repeats).
func (d *Data) ReservedAfter(ctx context.Context, after string, limit int) ([]biz.Reserved, error) {
	var rows []reservationRow
	if err := d.db.WithContext(ctx).Where("status = ? AND order_id > ?", string(biz.StatusReserved), after).
		Order("order_id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("data: reserved reservations: %w", err)
	}
	out := make([]biz.Reserved, len(rows))
	for i, r := range rows {
		out[i] = biz.Reserved{OrderID: r.OrderID, UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}
