package txmsg

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Cleanup deletes fence rows created more than olderThan ago (by the
// database clock) from table (DefaultTable when empty), batch rows per
// statement (default 500 when <= 0) so that it never holds many locks or
// stalls the business tables, until none is left or ctx ends. It returns
// the number of rows deleted. Run it periodically from one instance.
//
// Retention rule: a row must outlive every check-back of its half message,
// or a late check finds no row, inserts a rollback marker and rolls back a
// message whose transaction committed. Keep rows longer than
//
//	transactionTimeOut + transactionCheckMax × transactionCheckInterval + margin
//
// of the broker (RocketMQ's defaults: 6 s + 15 × 60 s ≈ 15 min), plus the
// time an operator may take to resume checks of a parked half message.
// 24 hours is a safe default. Deleting a committed row also forgets that
// the key was used: a later Send with the same key is accepted.
func Cleanup(ctx context.Context, db *gorm.DB, table string, olderThan time.Duration, batch int) (int64, error) {
	if table == "" {
		table = DefaultTable
	}
	if !tableName.MatchString(table) {
		return 0, fmt.Errorf("%w: table name %q", ErrInvalidOption, table)
	}
	if olderThan <= 0 {
		return 0, fmt.Errorf("%w: retention %v must be positive", ErrInvalidOption, olderThan)
	}
	if batch <= 0 {
		batch = 500
	}
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		r := db.WithContext(ctx).Exec("DELETE FROM "+table+" WHERE created_at < NOW(6) - INTERVAL ? MICROSECOND ORDER BY created_at LIMIT ?",
			olderThan.Microseconds(), batch)
		if r.Error != nil {
			return total, fmt.Errorf("txmsg: cleanup %s: %w", table, r.Error)
		}
		total += r.RowsAffected
		if r.RowsAffected < int64(batch) {
			return total, nil
		}
	}
}
