package txmsg

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/tidemq/tide/pkg/mqclient"
)

// Check answers the broker's check-back for a half message sent by Send
// (it is the producer's TransactionChecker). It inserts a rollback marker
// under the message's key:
//
//   - the business transaction is still open: the insert waits on the
//     key's row lock (the fence) until that transaction ends, at most the
//     check timeout;
//   - the insert succeeds: no business transaction holds or ever committed
//     the key, and now none can (its own insert would hit the marker):
//     ROLLBACK;
//   - duplicate key: the row is read; committed by this message's attempt:
//     COMMIT; rolled back, or committed by another attempt: ROLLBACK.
//
// Anything else (lock wait timeout, deadlock, connection error, timeout,
// a message without the properties, a row missing after a duplicate)
// answers UNKNOWN, never COMMIT: the broker asks again later. Safe for
// concurrent use; blocks at most the check timeout.
func (s *Sender) Check(ctx context.Context, m *mqclient.MessageExt) mqclient.TransactionState {
	key, attempt := m.Properties[PropKey], m.Properties[PropAttempt]
	if key == "" || attempt == "" {
		s.s.logger.Warn("txmsg: check-back for a message without a transaction key; UNKNOWN", "msgId", m.MsgID, "topic", m.Topic)
		s.m.check("unknown")
		return mqclient.TransactionUnknown
	}
	ctx, cancel := context.WithTimeout(ctx, s.s.checkTimeout)
	defer cancel()
	st, err := s.check(ctx, key, attempt)
	if err != nil {
		s.s.logger.Warn("txmsg: check-back failed; UNKNOWN, the broker will ask again", "key", key, "msgId", m.MsgID, "err", err)
		s.m.check("unknown")
		return mqclient.TransactionUnknown
	}
	s.s.logger.Debug("txmsg: check-back", "key", key, "msgId", m.MsgID, "state", st)
	if st == mqclient.TransactionCommit {
		s.m.check("commit")
	} else {
		s.m.check("rollback")
	}
	return st
}

// ErrCheck wraps the reasons a check could not decide.
var ErrCheck = errors.New("txmsg: check undecided")

func (s *Sender) check(ctx context.Context, key, attempt string) (mqclient.TransactionState, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return mqclient.TransactionUnknown, fmt.Errorf("%w: %v", ErrCheck, err)
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return mqclient.TransactionUnknown, fmt.Errorf("%w: connection: %v", ErrCheck, err)
	}
	defer conn.Close()
	// The lock wait bound is set on this session only, and reset before
	// the connection goes back to the pool (or the connection is dropped).
	secs := int(math.Ceil(s.s.checkTimeout.Seconds()))
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET SESSION innodb_lock_wait_timeout = %d", secs)); err != nil {
		return mqclient.TransactionUnknown, fmt.Errorf("%w: set lock wait timeout: %v", ErrCheck, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := conn.ExecContext(rctx, "SET SESSION innodb_lock_wait_timeout = DEFAULT"); err != nil {
			conn.Raw(func(any) error { return driver.ErrBadConn }) // discard it
		}
	}()
	_, err = conn.ExecContext(ctx, "INSERT INTO "+s.s.table+" (tx_key, attempt, producer_group, status, created_at) VALUES (?, ?, ?, ?, NOW(6))",
		key, attempt, s.s.group, string(StatusRolledBack))
	if err == nil {
		return mqclient.TransactionRollback, nil // fenced: the business tx can no longer commit
	}
	if !isDuplicate(err) {
		var me *mysql.MySQLError
		if errors.As(err, &me) && (me.Number == errLockWaitTimeout || me.Number == errDeadlock) {
			return mqclient.TransactionUnknown, fmt.Errorf("%w: fence insert (transaction still open?): %v", ErrCheck, err)
		}
		return mqclient.TransactionUnknown, fmt.Errorf("%w: fence insert: %v", ErrCheck, err)
	}
	var status, owner string
	if err := conn.QueryRowContext(ctx, "SELECT status, attempt FROM "+s.s.table+" WHERE tx_key = ?", key).Scan(&status, &owner); err != nil {
		return mqclient.TransactionUnknown, fmt.Errorf("%w: read fence: %v", ErrCheck, err)
	}
	switch Status(status) {
	case StatusCommitted:
		if owner == attempt {
			return mqclient.TransactionCommit, nil
		}
		return mqclient.TransactionRollback, nil // another Send owns the key
	case StatusRolledBack:
		return mqclient.TransactionRollback, nil
	}
	return mqclient.TransactionUnknown, fmt.Errorf("%w: unexpected fence status %q", ErrCheck, status)
}
