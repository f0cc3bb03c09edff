package idempotent

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
)

// MySQL / MariaDB error numbers that matter here.
const (
	erDupEntry        = 1062
	erLockWaitTimeout = 1205
	erLockDeadlock    = 1213
)

func mysqlErrNo(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// isDuplicate reports a unique-key violation, also when gorm translated it
// (gorm.Config.TranslateError).
func isDuplicate(err error) bool {
	return mysqlErrNo(err) == erDupEntry || errors.Is(err, gorm.ErrDuplicatedKey)
}

// IsTransient reports whether err is a deadlock or lock wait timeout (or
// already ErrTransient): the transaction was rolled back (or must be) and
// may simply be retried. Such errors never mean "done".
func IsTransient(err error) bool {
	if errors.Is(err, ErrTransient) {
		return true
	}
	n := mysqlErrNo(err)
	return n == erLockDeadlock || n == erLockWaitTimeout
}

// errDuplicate is returned from inside the transaction to roll it back when
// the dedup insert hit an existing record.
var errDuplicate = errors.New("idempotent: duplicate record")

// insertRecord inserts the dedup record as the first statement of tx, so
// that a concurrent transaction on the same key waits on its unique-key
// lock until this one ends (and then sees the duplicate).
func insertRecord(tx *gorm.DB, table, group, handler, key string, fp []byte) error {
	err := tx.Exec("INSERT INTO `"+table+"` (consumer_group, handler, biz_key, fingerprint, status, created_at) "+
		"VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(6))", group, handler, key, fp, StatusDone).Error
	switch {
	case err == nil:
		return nil
	case isDuplicate(err):
		return errDuplicate
	case IsTransient(err):
		return fmt.Errorf("%w: dedup insert: %w", ErrTransient, err)
	}
	return fmt.Errorf("idempotent: dedup insert: %w", err)
}

// record is a committed dedup record.
type record struct {
	fingerprint []byte
	response    []byte
}

// readRecord reads the committed record of key. A record that is gone
// (cleaned up between the duplicate error and this read) is ErrTransient:
// the caller retries and the next attempt decides.
func readRecord(ctx context.Context, db *gorm.DB, table, group, handler, key string) (record, error) {
	var r record
	row := db.WithContext(ctx).Raw("SELECT fingerprint, response FROM `"+table+
		"` WHERE consumer_group = ? AND handler = ? AND biz_key = ?", group, handler, key).Row()
	if err := row.Scan(&r.fingerprint, &r.response); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return r, fmt.Errorf("%w: record of %q vanished", ErrTransient, key)
		}
		return r, fmt.Errorf("idempotent: read record: %w", err)
	}
	return r, nil
}
