package data

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm/clause"

	"github.com/tidemq/tide/services/inventory/internal/biz"
	"github.com/tidemq/tide/services/kit/store"
)

type productRow struct {
	ID        string `gorm:"primaryKey"`
	Name      string
	Price     int64
	Available int64
	Reserved  int64
	Sold      int64
}

func (productRow) TableName() string { return "products" }

func (r *productRow) biz() *biz.Product {
	return &biz.Product{ID: r.ID, Name: r.Name, Price: r.Price, Available: r.Available, Reserved: r.Reserved, Sold: r.Sold}
}

type productRepo struct{ data *Data }

// NewProductRepo returns the gorm ProductRepo.
func NewProductRepo(d *Data) biz.ProductRepo { return &productRepo{data: d} }

func (r *productRepo) Get(ctx context.Context, id string) (*biz.Product, error) {
	var row productRow
	found, err := store.Take(r.data.DB(ctx).Where("id = ?", id), &row)
	if err != nil {
		return nil, fmt.Errorf("data: get product %s: %w", id, err)
	}
	if !found {
		return nil, biz.ErrProductNotFound.WithMetadata(map[string]string{"id": id})
	}
	return row.biz(), nil
}

func (r *productRepo) List(ctx context.Context, after string, limit int) ([]*biz.Product, error) {
	var rows []productRow
	if err := r.data.DB(ctx).Where("id > ?", after).Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("data: list products: %w", err)
	}
	out := make([]*biz.Product, len(rows))
	for i := range rows {
		out[i] = rows[i].biz()
	}
	return out, nil
}

func (r *productRepo) Lock(ctx context.Context, ids []string) (map[string]*biz.Product, error) {
	var rows []productRow
	err := r.data.DB(ctx).Clauses(clause.Locking{Strength: "UPDATE"}).Where("id IN ?", ids).Order("id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("data: lock products: %w", err)
	}
	out := make(map[string]*biz.Product, len(rows))
	for i := range rows {
		out[rows[i].ID] = rows[i].biz()
	}
	return out, nil
}

// ErrNegativeStock: a stock move would make a counter negative.
var ErrNegativeStock = errors.New("data: stock would become negative")

func (r *productRepo) Move(ctx context.Context, id string, da, dr, ds int64) error {
	res := r.data.DB(ctx).Exec(`UPDATE products SET available = available + ?, reserved = reserved + ?, sold = sold + ?
		WHERE id = ? AND available + ? >= 0 AND reserved + ? >= 0 AND sold + ? >= 0`,
		da, dr, ds, id, da, dr, ds)
	if res.Error != nil {
		return fmt.Errorf("data: move stock of %s: %w", id, res.Error)
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("%w: product %s (%+d, %+d, %+d)", ErrNegativeStock, id, da, dr, ds)
	}
	return nil
}
