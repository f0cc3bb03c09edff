package txmsg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/tidemq/tide/pkg/mqclient"
	"gorm.io/gorm"
)

// Properties the half message carries; the check-back reads them.
const (
	// PropKey is the transaction key of the Send call: the key given to
	// Send, or key#n for its n-th attempt after fenced ones (see Send).
	PropKey = "TIDE_TX_KEY"
	// PropAttempt identifies the Send call (and its fence row).
	PropAttempt = "TIDE_TX_ATTEMPT"
)

// Errors.
var (
	// ErrInvalidOption reports a bad option or argument.
	ErrInvalidOption = errors.New("txmsg: invalid option")
	// ErrFenced: a check-back rolled this attempt back (its marker holds
	// the transaction key) before the business transaction could insert
	// its fence row, so nothing of fn ran or committed and the message
	// was not delivered. Call Send again with the same key: it then uses
	// the key's next transaction key (key#2, key#3, ...).
	ErrFenced = errors.New("txmsg: key fenced by a check-back rollback")
	// ErrKeyCommitted: an earlier Send with this key committed; this one
	// was rolled back and its message discarded (the earlier message is
	// the one delivered).
	ErrKeyCommitted = errors.New("txmsg: key already committed")
)

// Status is the state of a transaction key in the fence table.
type Status string

// Statuses. StatusNone means no row (never sent, still open, or cleaned
// up). For a key with several transaction keys (attempts after fenced
// ones), the key is committed if one of them is, else rolled back.
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
// "payment-42", at most MaxKeyLen bytes, not ending in '#' and digits);
// it is put in the message's Keys, and the transaction key in its
// properties (PropKey). msg is not modified.
//
// Transaction keys: the first attempt of key uses key itself. When a
// check-back fenced an attempt (ErrFenced), the next Send with the same
// key uses key#2, then key#3, ...: Send reads the key's fence rows first,
// refuses with ErrKeyCommitted if one committed, and otherwise takes the
// next generation. So a caller retries a fenced operation under the same
// key and never invents keys.
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
	if key == "" || len(key) > MaxKeyLen || genSuffix.MatchString(key) {
		return nil, fmt.Errorf("%w: key must have 1 to %d bytes and not end in '#' and digits, got %q", ErrInvalidOption, MaxKeyLen, key)
	}
	txKey, err := s.nextKey(ctx, key)
	if err != nil {
		if errors.Is(err, ErrKeyCommitted) {
			s.m.send("fenced")
		} else {
			s.m.send("failed")
		}
		return nil, err
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
	m.Properties[PropKey] = txKey
	m.Properties[PropAttempt] = attempt
	if !slices.Contains(m.Keys, key) {
		m.Keys = append(slices.Clone(m.Keys), key)
	}
	if txKey != key && !slices.Contains(m.Keys, txKey) {
		m.Keys = append(m.Keys, txKey)
	}
	res, state, err := s.p.SendInTransaction(ctx, &m, func(ctx context.Context) error {
		return s.local(ctx, txKey, attempt, fn)
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

// Status returns the fence state of key over its transaction keys:
// StatusCommitted if one committed, StatusRolledBack if all were rolled
// back, StatusNone when there is no row.
func (s *Sender) Status(ctx context.Context, key string) (Status, error) {
	gens, err := s.generations(ctx, key)
	if err != nil {
		return StatusNone, err
	}
	st := StatusNone
	for _, g := range gens {
		if g.status == StatusCommitted {
			return StatusCommitted, nil
		}
		st = StatusRolledBack
	}
	return st, nil
}

// MaxKeyLen is the longest key Send takes: the fence column holds 191
// bytes, 11 of which are kept for a transaction key's "#n" suffix.
const MaxKeyLen = 180

// genSuffix matches the "#n" suffix of a transaction key after the first.
var genSuffix = regexp.MustCompile(`#[0-9]+$`)

type generation struct {
	n      int
	status Status
}

// generations reads the fence rows of key and its transaction keys.
func (s *Sender) generations(ctx context.Context, key string) ([]generation, error) {
	var rows []struct {
		TxKey  string
		Status string
	}
	like := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(key) + "#%"
	if err := s.db.WithContext(ctx).Raw("SELECT tx_key, status FROM "+s.s.table+" WHERE tx_key = ? OR tx_key LIKE ?", key, like).
		Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("txmsg: read fence %s: %w", key, err)
	}
	var out []generation
	for _, r := range rows {
		n := 1
		if r.TxKey != key {
			suffix := strings.TrimPrefix(r.TxKey, key+"#")
			v, err := strconv.Atoi(suffix)
			if err != nil || v < 2 || strconv.Itoa(v) != suffix {
				continue // another key that merely starts like this one
			}
			n = v
		}
		out = append(out, generation{n: n, status: Status(r.Status)})
	}
	return out, nil
}

// nextKey returns the transaction key for a new attempt of key: key for
// the first, key#n after n-1 fenced ones; ErrKeyCommitted if one
// committed. A concurrent Send of the same key may take the same
// transaction key: the fence row then decides which one commits.
func (s *Sender) nextKey(ctx context.Context, key string) (string, error) {
	gens, err := s.generations(ctx, key)
	if err != nil {
		return "", err
	}
	last := 0
	for _, g := range gens {
		if g.status == StatusCommitted {
			return "", fmt.Errorf("%w: %s", ErrKeyCommitted, key)
		}
		last = max(last, g.n)
	}
	if last == 0 {
		return key, nil
	}
	return key + "#" + strconv.Itoa(last+1), nil
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
