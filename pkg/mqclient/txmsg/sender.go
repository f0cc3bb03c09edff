package txmsg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/go-sql-driver/mysql"
	"github.com/tidemq/tide/pkg/mqclient"
	"gorm.io/gorm"
)

// Properties the half message carries; the check-back reads them.
const (
	// PropKey is the transaction key given to Send.
	PropKey = "TIDE_TX_KEY"
	// PropAttempt identifies the Send call (and its fence row).
	PropAttempt = "TIDE_TX_ATTEMPT"
)

// Errors.
var (
	// ErrInvalidOption reports a bad option or argument.
	ErrInvalidOption = errors.New("txmsg: invalid option")
	// ErrFenced: a check-back already rolled this key back (its marker
	// holds the key), so the business transaction could not commit and
	// was rolled back; the message was not delivered. Retry the business
	// operation under a new key.
	ErrFenced = errors.New("txmsg: key fenced by a check-back rollback")
	// ErrKeyCommitted: an earlier Send with this key committed; this one
	// was rolled back and its message discarded (the earlier message is
	// the one delivered).
	ErrKeyCommitted = errors.New("txmsg: key already committed")
)

// Status is the state of a transaction key in the fence table.
type Status string

// Statuses. StatusNone means no row (never sent, still open, or cleaned up).
const (
	StatusNone       Status = ""
	StatusCommitted  Status = "committed"
	StatusRolledBack Status = "rolled_back"
)

// Sender sends transactional messages whose visibility follows a gorm
// transaction, with a fenced check-back. It is safe for concurrent use.
type Sender struct {
	db *gorm.DB
	s  settings
	p  *mqclient.Producer
	m  *metrics
	// hook, when set (tests), is called at the crash points "before-tx",
	// "in-tx" and "after-commit".
	hook func(point string)
}

// New builds a Sender on db (the business database, which must hold the
// fence table: see Schema and Migrate) and a transactional producer whose
// checker is the fence check. It does not touch the network.
func New(db *gorm.DB, opts ...Option) (*Sender, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil db", ErrInvalidOption)
	}
	s := &Sender{db: db, s: defaults()}
	for _, o := range opts {
		o(&s.s)
	}
	s.hook = s.s.hook
	if err := s.s.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(s.s.registerer)
	if err != nil {
		return nil, err
	}
	s.m = m
	p, err := mqclient.NewTransactionProducer(s.Check, s.s.producerOpts...)
	if err != nil {
		return nil, err
	}
	s.p = p
	return s, nil
}

// Start checks that the fence table exists and starts the producer, which
// from then on also answers check-backs.
func (s *Sender) Start(ctx context.Context) error {
	var n int64
	if err := s.db.WithContext(ctx).Raw("SELECT COUNT(*) FROM " + s.s.table + " WHERE 1=0").Scan(&n).Error; err != nil {
		return fmt.Errorf("txmsg: fence table %s (see Schema/Migrate): %w", s.s.table, err)
	}
	return s.p.Start(ctx)
}

// Shutdown stops the producer (no more check-backs are answered by this
// instance; the broker asks another live one of the group). Idempotent.
func (s *Sender) Shutdown(ctx context.Context) error { return s.p.Shutdown(ctx) }

// Producer returns the underlying producer (for plain sends; its
// SendInTransaction bypasses the fence and must not be used with it).
func (s *Sender) Producer() *mqclient.Producer { return s.p }

// Send sends msg as a half message, then runs fn in a database transaction
// that first inserts the fence row (key, status committed), commits it,
// and commits the message. key identifies this business transaction (e.g.
// "payment-42"); it is put in the message's properties (PropKey) and Keys.
// msg is not modified.
//
// Outcomes:
//   - nil: the transaction committed; the message becomes visible (by
//     END_TRANSACTION or, if that was lost, by the check-back).
//   - fn's error, ErrFenced or ErrKeyCommitted (wrapped): the transaction
//     was rolled back (nothing of fn is kept) and the message discarded.
//   - an error wrapping mqclient.ErrTransactionUnknown: the commit's outcome
//     is unknown (connection lost during COMMIT); the check-back reads the
//     fence and decides: the message is visible iff the commit happened.
//   - any other error with a nil result: the half message was not stored
//     and fn did not run.
//
// fn must do all its writes through tx and must not commit it. A panic in
// fn rolls back and is returned as an error. ctx bounds the whole call; if
// it ends during the transaction, the transaction rolls back.
func (s *Sender) Send(ctx context.Context, msg *mqclient.Message, key string, fn func(tx *gorm.DB) error) (*mqclient.SendResult, error) {
	if msg == nil || fn == nil {
		return nil, fmt.Errorf("%w: nil message or function", ErrInvalidOption)
	}
	if key == "" || len(key) > 191 {
		return nil, fmt.Errorf("%w: key must have 1 to 191 bytes, got %d", ErrInvalidOption, len(key))
	}
	attempt, err := newAttempt()
	if err != nil {
		return nil, err
	}
	m := *msg
	m.Properties = maps.Clone(msg.Properties)
	if m.Properties == nil {
		m.Properties = map[string]string{}
	}
	m.Properties[PropKey] = key
	m.Properties[PropAttempt] = attempt
	if !slices.Contains(m.Keys, key) {
		m.Keys = append(slices.Clone(m.Keys), key)
	}
	res, state, err := s.p.SendInTransaction(ctx, &m, func(ctx context.Context) error {
		return s.local(ctx, key, attempt, fn)
	})
	switch {
	case res == nil:
		s.m.send("failed")
		return nil, fmt.Errorf("txmsg: half message for %s: %w", key, err)
	case state == mqclient.TransactionCommit:
		s.m.send("committed")
		if err != nil { // END_TRANSACTION failed: the check-back commits
			s.s.logger.Warn("txmsg: committed, end transaction failed; the check-back will commit", "key", key, "msgId", res.MsgID, "err", err)
		}
		return res, nil
	case state == mqclient.TransactionUnknown:
		s.m.send("unknown")
		s.s.logger.Warn("txmsg: commit outcome unknown; the check-back will decide", "key", key, "msgId", res.MsgID, "err", err)
		return res, err
	}
	switch {
	case errors.Is(err, ErrFenced), errors.Is(err, ErrKeyCommitted):
		s.m.send("fenced")
	default:
		s.m.send("rolled_back")
	}
	return res, err
}

func newAttempt() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("txmsg: attempt id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func (s *Sender) at(point string) {
	if s.hook != nil {
		s.hook(point)
	}
}

// local is the business transaction. Only a successful COMMIT returns nil;
// a failed COMMIT is unknown; everything else rolled back.
func (s *Sender) local(ctx context.Context, key, attempt string, fn func(*gorm.DB) error) (err error) {
	s.at("before-tx")
	tx := s.db.WithContext(ctx).Begin()
	if tx.Error != nil {
		return fmt.Errorf("txmsg: begin: %w", tx.Error)
	}
	done := false
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("txmsg: fn panicked: %v", r)
		}
		if !done {
			tx.Rollback()
		}
	}()
	// The fence row goes first: from here on a check-back's marker insert
	// for this key waits for us.
	if err := tx.Exec("INSERT INTO "+s.s.table+" (tx_key, attempt, producer_group, status, created_at) VALUES (?, ?, ?, ?, NOW(6))",
		key, attempt, s.s.group, string(StatusCommitted)).Error; err != nil {
		if !isDuplicate(err) {
			return fmt.Errorf("txmsg: fence insert for %s: %w", key, err)
		}
		tx.Rollback()
		done = true
		return s.taken(ctx, key)
	}
	if err := fn(tx); err != nil {
		return err
	}
	s.at("in-tx")
	done = true
	if err := tx.Commit().Error; err != nil {
		return fmt.Errorf("%w: commit of %s: %v", mqclient.ErrTransactionUnknown, key, err)
	}
	s.at("after-commit")
	return nil
}

// taken explains a duplicate key on the business fence insert.
func (s *Sender) taken(ctx context.Context, key string) error {
	st, _, err := s.status(ctx, key)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s (status unreadable: %v)", ErrFenced, key, err)
	case st == StatusCommitted:
		return fmt.Errorf("%w: %s", ErrKeyCommitted, key)
	}
	return fmt.Errorf("%w: %s", ErrFenced, key)
}

// Status returns the fence state of key (StatusNone when there is no row).
func (s *Sender) Status(ctx context.Context, key string) (Status, error) {
	st, _, err := s.status(ctx, key)
	return st, err
}

func (s *Sender) status(ctx context.Context, key string) (Status, string, error) {
	var rows []struct {
		Status  string
		Attempt string
	}
	if err := s.db.WithContext(ctx).Raw("SELECT status, attempt FROM "+s.s.table+" WHERE tx_key = ?", key).Scan(&rows).Error; err != nil {
		return StatusNone, "", fmt.Errorf("txmsg: read fence %s: %w", key, err)
	}
	if len(rows) == 0 {
		return StatusNone, "", nil
	}
	return Status(rows[0].Status), rows[0].Attempt, nil
}

// MySQL server error numbers.
const (
	errDupEntry        = 1062
	errLockWaitTimeout = 1205
	errDeadlock        = 1213
)

func isDuplicate(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == errDupEntry
}
