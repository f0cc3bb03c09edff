package data

import (
	"context"

	"gorm.io/gorm"
)

type txKey struct{}

// InTx runs fn in a database transaction carried by the context fn
// receives: repositories called with that context use it (DB). If ctx
// already carries a transaction, fn joins it. fn's error (or panic) rolls
// back.
func (d *Data) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := ctx.Value(txKey{}).(*gorm.DB); ok {
		return fn(ctx)
	}
	return d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return fn(context.WithValue(ctx, txKey{}, tx))
	})
}

// DB returns the transaction in ctx, or the pool, bound to ctx.
func (d *Data) DB(ctx context.Context) *gorm.DB {
	if tx, ok := ctx.Value(txKey{}).(*gorm.DB); ok {
		return tx
	}
	return d.db.WithContext(ctx)
}
