package data

import (
	"context"
	"fmt"

	"github.com/tidemq/tide/services/kit/store"
	"github.com/tidemq/tide/services/payment/internal/biz"
)

type accountRow struct {
	UserID  string `gorm:"primaryKey"`
	Balance int64
}

func (accountRow) TableName() string { return "accounts" }

type accountRepo struct{ data *Data }

// NewAccountRepo returns the gorm AccountRepo.
func NewAccountRepo(d *Data) biz.AccountRepo { return &accountRepo{data: d} }

func (r *accountRepo) Debit(ctx context.Context, userID string, amount int64) error {
	db := r.data.DB(ctx)
	res := db.Exec("UPDATE accounts SET balance = balance - ? WHERE user_id = ? AND balance >= ?", amount, userID, amount)
	if res.Error != nil {
		return fmt.Errorf("data: debit %s: %w", userID, res.Error)
	}
	if res.RowsAffected == 1 {
		return nil
	}
	if _, err := r.Balance(ctx, userID); err != nil {
		return err
	}
	return biz.ErrInsufficientBalance.WithMetadata(map[string]string{"user_id": userID})
}

func (r *accountRepo) Credit(ctx context.Context, userID string, amount int64) error {
	res := r.data.DB(ctx).Exec("UPDATE accounts SET balance = balance + ? WHERE user_id = ?", amount, userID)
	if res.Error != nil {
		return fmt.Errorf("data: credit %s: %w", userID, res.Error)
	}
	if res.RowsAffected != 1 {
		return biz.ErrAccountNotFound.WithMetadata(map[string]string{"user_id": userID})
	}
	return nil
}

func (r *accountRepo) Balance(ctx context.Context, userID string) (int64, error) {
	var row accountRow
	found, err := store.Take(r.data.DB(ctx).Where("user_id = ?", userID), &row)
	if err != nil {
		return 0, fmt.Errorf("data: balance %s: %w", userID, err)
	}
	if !found {
		return 0, biz.ErrAccountNotFound.WithMetadata(map[string]string{"user_id": userID})
	}
	return row.Balance, nil
}
