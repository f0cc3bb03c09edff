package biz

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/go-kratos/kratos/v2/errors"
)

// Status is a payment's state: SUCCEEDED → REFUNDED, nothing else.
type Status string

// Payment states.
const (
	StatusSucceeded Status = "SUCCEEDED"
	StatusRefunded  Status = "REFUNDED"
)

// Payment is one debit for one order. Its id derives from the idempotency
// key, so retries of one request address the same payment (also at the
// gateway).
type Payment struct {
	ID             string    `json:"id"`
	OrderID        string    `json:"order_id"`
	UserID         string    `json:"user_id"`
	Amount         int64     `json:"amount"`
	Status         Status    `json:"status"`
	IdempotencyKey string    `json:"idempotency_key"`
	Reason         string    `json:"reason,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// CreateRequest asks to debit UserID's account Amount cents for OrderID.
type CreateRequest struct {
	OrderID        string
	UserID         string
	Amount         int64
	IdempotencyKey string
}

// Fingerprint identifies the request body under its key: the same key
// with another fingerprint is rejected.
func (r *CreateRequest) Fingerprint() string {
	h := sha256.Sum256([]byte(r.OrderID + "\x00" + r.UserID + "\x00" + strconv.FormatInt(r.Amount, 10)))
	return hex.EncodeToString(h[:])
}

// PaymentID derives the payment id from an idempotency key.
func PaymentID(key string) string {
	h := sha256.Sum256([]byte(key))
	return "pay_" + hex.EncodeToString(h[:10])
}

// IdempotencyRecord is the stored outcome of a request under a key:
// written in the transaction of the debit (success) or on its own (final
// business errors), never for transient failures.
type IdempotencyRecord struct {
	Key         string
	Fingerprint string
	// Response is the original answer (JSON of storedResponse).
	Response  []byte
	CreatedAt time.Time
}

type storedResponse struct {
	Payment *Payment `json:"payment,omitempty"`
	Code    int32    `json:"code,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Message string   `json:"message,omitempty"`
}

func (r *IdempotencyRecord) replay() (*Payment, error) {
	var s storedResponse
	if err := json.Unmarshal(r.Response, &s); err != nil {
		return nil, fmt.Errorf("biz: stored response of %s: %w", r.Key, err)
	}
	if s.Payment != nil {
		return s.Payment, nil
	}
	return nil, errors.New(int(s.Code), s.Reason, s.Message)
}

// AccountRepo moves balances; methods join the transaction in ctx.
type AccountRepo interface {
	// Debit subtracts amount; ErrAccountNotFound, ErrInsufficientBalance.
	Debit(ctx context.Context, userID string, amount int64) error
	Credit(ctx context.Context, userID string, amount int64) error
	Balance(ctx context.Context, userID string) (int64, error)
}

// PaymentRepo stores payments and the cancelled orders; methods join the
// transaction in ctx.
type PaymentRepo interface {
	// Create inserts p; ErrOrderAlreadyPaid if the order has a payment.
	Create(ctx context.Context, p *Payment) error
	Get(ctx context.Context, id string) (*Payment, error)
	GetByKey(ctx context.Context, key string) (*Payment, error)
	// GetByOrderForUpdate returns the order's payment locked, or nil.
	GetByOrderForUpdate(ctx context.Context, orderID string) (*Payment, error)
	// SetStatus moves a payment from one status to another; false if it
	// was not in from.
	SetStatus(ctx context.Context, id string, from, to Status, reason string) (bool, error)
	// MarkOrderCancelled records the order's cancellation (idempotent).
	MarkOrderCancelled(ctx context.Context, orderID, reason string) error
	// OrderCancelled reads the mark with a lock (SELECT … FOR UPDATE).
	OrderCancelled(ctx context.Context, orderID string) (bool, error)
}

// IdempotencyRepo stores idempotency records.
type IdempotencyRepo interface {
	Get(ctx context.Context, key string) (*IdempotencyRecord, error)
	// Create fails with an error matching ErrIdempotencyInProgress when
	// the key exists (a concurrent request won).
	Create(ctx context.Context, r *IdempotencyRecord) error
}

// IdempotencyCache is the Redis fast path: stored responses and a short
// in-progress lock per key. The database stays the source of truth, so
// every method may fail (outage) and the caller falls back.
type IdempotencyCache interface {
	Get(ctx context.Context, key string) (*IdempotencyRecord, error) // nil when absent
	Put(ctx context.Context, r *IdempotencyRecord) error
	Lock(ctx context.Context, key string, ttl time.Duration) (bool, error)
	Unlock(ctx context.Context, key string) error
	// Seen and Mark are the consumers' fast path.
	Seen(ctx context.Context, key string) (bool, error)
	Mark(ctx context.Context, key string) error
}

// Gateway is the external payment gateway (simulated): it keeps its own
// records, which reconciliation compares with ours.
type Gateway interface {
	// Capture takes the payment's money; capturing one payment twice is a
	// no-op unless the duplicate-callback fault is on. It may return
	// ErrGatewayTimeout after capturing (fault switch).
	Capture(ctx context.Context, p *Payment) error
	Refund(ctx context.Context, p *Payment) error
}

// EventKind names a payment event.
type EventKind string

// Event kinds, equal to the message tags.
const (
	EventPaymentSucceeded EventKind = "PaymentSucceeded"
	EventPaymentRefunded  EventKind = "PaymentRefunded"
)

// Event is a payment event, sent as a transactional message.
type Event struct {
	Kind      EventKind
	OrderID   string
	Seq       int64
	PaymentID string
	UserID    string
	Amount    int64
	Reason    string
	At        time.Time
}

// TxPublisher sends ev as a transactional message around local: the half
// message first, then local, then commit if local returned nil, rollback
// otherwise. It returns local's error. A lost END_TRANSACTION is not an
// error: the broker's check-back (CheckEvent) decides.
type TxPublisher interface {
	SendInTransaction(ctx context.Context, ev *Event, local func(ctx context.Context) error) error
	// SetChecker installs the check-back (NewPaymentUsecase installs
	// CheckEvent).
	SetChecker(check func(ctx context.Context, kind EventKind, paymentID string, born time.Time) Decision)
}

// Decision answers a check-back.
type Decision int

// Check-back decisions.
const (
	DecideUnknown Decision = iota
	DecideCommit
	DecideRollback
)

// Faults are demo and e2e fault switches, all off by default.
type Faults struct {
	// CrashAfterCommit, when set, is called after the local transaction
	// committed and before END_TRANSACTION (it exits the process).
	CrashAfterCommit func()
	// SlowLocalTx holds the local transaction open before its commit.
	SlowLocalTx time.Duration
}

// Options tune the use case.
type Options struct {
	// CheckUnknownWindow: a check-back for a missing payment answers
	// UNKNOWN while the half message is younger than this.
	CheckUnknownWindow time.Duration
	// LocalTxTimeout bounds a local transaction; must be shorter than
	// CheckUnknownWindow.
	LocalTxTimeout time.Duration
	// LockTTL is the in-progress lock of an idempotency key.
	LockTTL time.Duration
	Faults  Faults
}

// PaymentUsecase creates and refunds payments. Safe for concurrent use.
type PaymentUsecase struct {
	accounts AccountRepo
	payments PaymentRepo
	keys     IdempotencyRepo
	cache    IdempotencyCache
	gateway  Gateway
	tx       Transaction
	pub      TxPublisher
	opts     Options
	log      *slog.Logger
	now      func() time.Time
}

// NewPaymentUsecase returns a PaymentUsecase. cache may be nil.
func NewPaymentUsecase(accounts AccountRepo, payments PaymentRepo, keys IdempotencyRepo, cache IdempotencyCache,
	gateway Gateway, tx Transaction, pub TxPublisher, opts Options, logger *slog.Logger) *PaymentUsecase {
	if opts.CheckUnknownWindow <= 0 {
		opts.CheckUnknownWindow = 30 * time.Second
	}
	if opts.LocalTxTimeout <= 0 {
		opts.LocalTxTimeout = 10 * time.Second
	}
	if opts.LockTTL <= 0 {
		opts.LockTTL = opts.LocalTxTimeout + 5*time.Second
	}
	if logger == nil {
		logger = slog.Default()
	}
	uc := &PaymentUsecase{accounts: accounts, payments: payments, keys: keys, cache: cache, gateway: gateway,
		tx: tx, pub: pub, opts: opts, log: logger, now: time.Now}
	pub.SetChecker(uc.CheckEvent)
	return uc
}

// GetPayment returns one payment.
func (uc *PaymentUsecase) GetPayment(ctx context.Context, id string) (*Payment, error) {
	if id == "" {
		return nil, ErrInvalidArgument.WithMetadata(map[string]string{"field": "id"})
	}
	return uc.payments.Get(ctx, id)
}

func (uc *PaymentUsecase) stored(ctx context.Context, req *CreateRequest) (*IdempotencyRecord, error) {
	if uc.cache != nil {
		rec, err := uc.cache.Get(ctx, req.IdempotencyKey)
		if err != nil {
			uc.log.WarnContext(ctx, "idempotency cache unavailable", "err", err)
		} else if rec != nil {
			return rec, nil
		}
	}
	return uc.keys.Get(ctx, req.IdempotencyKey)
}

func (uc *PaymentUsecase) replay(req *CreateRequest, rec *IdempotencyRecord) (*Payment, error) {
	if rec.Fingerprint != req.Fingerprint() {
		return nil, ErrIdempotencyKeyReused.WithMetadata(map[string]string{"idempotency_key": req.IdempotencyKey})
	}
	return rec.replay()
}

// CreatePayment debits the user's account for an order, exactly once per
// idempotency key: the debit, the payment row and the idempotency record
// (with the response) commit in one transaction, inside a transactional
// message whose PaymentSucceeded is visible if and only if they commit.
// A repeated key returns the original response (also an original final
// error such as INSUFFICIENT_BALANCE); the same key with another body is
// rejected with ErrIdempotencyKeyReused.
func (uc *PaymentUsecase) CreatePayment(ctx context.Context, req *CreateRequest) (*Payment, error) {
	switch {
	case req.IdempotencyKey == "":
		return nil, ErrIdempotencyKeyRequired
	case len(req.IdempotencyKey) > 128:
		return nil, ErrInvalidArgument.WithMetadata(map[string]string{"field": "idempotency_key", "why": "longer than 128"})
	case req.OrderID == "" || req.UserID == "" || req.Amount <= 0:
		return nil, ErrInvalidArgument.WithMetadata(map[string]string{"field": "order_id, user_id, amount > 0"})
	}
	rec, err := uc.stored(ctx, req)
	if err != nil {
		return nil, ErrUnavailable.WithCause(err)
	}
	if rec != nil {
		return uc.replay(req, rec)
	}
	if uc.cache != nil {
		ok, err := uc.cache.Lock(ctx, req.IdempotencyKey, uc.opts.LockTTL)
		switch {
		case err != nil:
			// Redis down: the unique key of the idempotency record still
			// lets only one request commit.
			uc.log.WarnContext(ctx, "idempotency lock unavailable", "err", err)
		case !ok:
			return nil, ErrIdempotencyInProgress
		default:
			defer func() {
				if err := uc.cache.Unlock(context.WithoutCancel(ctx), req.IdempotencyKey); err != nil {
					uc.log.WarnContext(ctx, "idempotency unlock", "err", err)
				}
			}()
			// The request holding the lock before us may have finished.
			if rec, err := uc.keys.Get(ctx, req.IdempotencyKey); err != nil {
				return nil, ErrUnavailable.WithCause(err)
			} else if rec != nil {
				return uc.replay(req, rec)
			}
		}
	}

	now := uc.now().UTC().Truncate(time.Microsecond)
	p := &Payment{ID: PaymentID(req.IdempotencyKey), OrderID: req.OrderID, UserID: req.UserID, Amount: req.Amount,
		Status: StatusSucceeded, IdempotencyKey: req.IdempotencyKey, CreatedAt: now, UpdatedAt: now}
	resp, err := json.Marshal(storedResponse{Payment: p})
	if err != nil {
		return nil, err
	}
	rec = &IdempotencyRecord{Key: req.IdempotencyKey, Fingerprint: req.Fingerprint(), Response: resp, CreatedAt: now}
	ev := &Event{Kind: EventPaymentSucceeded, OrderID: p.OrderID, Seq: 1, PaymentID: p.ID, UserID: p.UserID, Amount: p.Amount, At: now}

	err = uc.pub.SendInTransaction(ctx, ev, func(ctx context.Context) error {
		lctx, cancel := context.WithTimeout(ctx, uc.opts.LocalTxTimeout)
		defer cancel()
		err := uc.tx.InTx(lctx, func(ctx context.Context) error {
			if err := uc.keys.Create(ctx, rec); err != nil {
				return err
			}
			// The payment row goes in before the cancellation check: a
			// concurrent OrderCancelled either commits its mark first
			// (we see it and roll back) or blocks on our row and refunds.
			if err := uc.payments.Create(ctx, p); err != nil {
				return err
			}
			if cancelled, err := uc.payments.OrderCancelled(ctx, p.OrderID); err != nil {
				return err
			} else if cancelled {
				return ErrOrderCancelled
			}
			if err := uc.accounts.Debit(ctx, p.UserID, p.Amount); err != nil {
				return err
			}
			if err := uc.gateway.Capture(ctx, p); err != nil {
				return err
			}
			if d := uc.opts.Faults.SlowLocalTx; d > 0 {
				uc.log.WarnContext(ctx, "FAULT: slow local transaction", "payment_id", p.ID, "hold", d)
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
		if err == nil && uc.opts.Faults.CrashAfterCommit != nil {
			uc.log.ErrorContext(ctx, "FAULT: crash after local commit, before END_TRANSACTION", "payment_id", p.ID)
			uc.opts.Faults.CrashAfterCommit()
		}
		return err
	})
	switch {
	case err == nil:
		if uc.cache != nil {
			if err := uc.cache.Put(ctx, rec); err != nil {
				uc.log.WarnContext(ctx, "idempotency cache put", "err", err)
			}
		}
		return p, nil
	case errors.Is(err, ErrIdempotencyInProgress):
		// Lost the race on the record's unique key to a concurrent request.
		if rec, gerr := uc.keys.Get(ctx, req.IdempotencyKey); gerr == nil && rec != nil {
			return uc.replay(req, rec)
		}
		return nil, ErrIdempotencyInProgress
	case final(err):
		return nil, uc.storeFailure(ctx, req, err)
	case errors.Is(err, ErrGatewayTimeout):
		return nil, ErrGatewayTimeout
	}
	uc.log.ErrorContext(ctx, "payment failed", "order_id", req.OrderID, "err", err)
	return nil, ErrUnavailable.WithCause(err)
}

// storeFailure records a final business error under the key, so that a
// retry gets the same answer, and returns the error.
func (uc *PaymentUsecase) storeFailure(ctx context.Context, req *CreateRequest, cause error) error {
	ke := errors.FromError(cause)
	resp, err := json.Marshal(storedResponse{Code: ke.Code, Reason: ke.Reason, Message: ke.Message})
	if err != nil {
		return err
	}
	rec := &IdempotencyRecord{Key: req.IdempotencyKey, Fingerprint: req.Fingerprint(), Response: resp, CreatedAt: uc.now()}
	if err := uc.keys.Create(ctx, rec); err != nil {
		if errors.Is(err, ErrIdempotencyInProgress) {
			if rec, gerr := uc.keys.Get(ctx, req.IdempotencyKey); gerr == nil && rec != nil {
				_, rerr := uc.replay(req, rec)
				return rerr
			}
		}
		uc.log.WarnContext(ctx, "store failed response", "err", err)
	}
	return cause
}

// OrderCancelled handles an order's cancellation: it records it (so that a
// later payment for the order is refused) and refunds the order's
// payment, once, through a transactional PaymentRefunded. It returns
// whether a refund was made by this call.
func (uc *PaymentUsecase) OrderCancelled(ctx context.Context, orderID, reason string) (bool, error) {
	if orderID == "" {
		return false, ErrInvalidArgument.WithMetadata(map[string]string{"field": "order_id"})
	}
	key := "payment:cancelled:" + orderID
	if uc.cache != nil {
		if ok, err := uc.cache.Seen(ctx, key); err == nil && ok {
			return false, nil
		}
	}
	var p *Payment
	err := uc.tx.InTx(ctx, func(ctx context.Context) error {
		if err := uc.payments.MarkOrderCancelled(ctx, orderID, reason); err != nil {
			return err
		}
		var err error
		p, err = uc.payments.GetByOrderForUpdate(ctx, orderID)
		return err
	})
	if err != nil {
		return false, err
	}
	refunded := false
	if p != nil && p.Status == StatusSucceeded {
		refunded, err = uc.refund(ctx, p, "order_cancelled")
		if err != nil {
			return false, err
		}
	}
	if uc.cache != nil {
		if err := uc.cache.Mark(ctx, key); err != nil {
			uc.log.WarnContext(ctx, "dedup cache mark", "err", err)
		}
	}
	return refunded, nil
}

var errNothingToRefund = errors.Conflict("NOTHING_TO_REFUND", "payment is not refundable")

func (uc *PaymentUsecase) refund(ctx context.Context, p *Payment, reason string) (bool, error) {
	ev := &Event{Kind: EventPaymentRefunded, OrderID: p.OrderID, Seq: 2, PaymentID: p.ID, UserID: p.UserID,
		Amount: p.Amount, Reason: reason, At: uc.now()}
	err := uc.pub.SendInTransaction(ctx, ev, func(ctx context.Context) error {
		return uc.tx.InTx(ctx, func(ctx context.Context) error {
			ok, err := uc.payments.SetStatus(ctx, p.ID, StatusSucceeded, StatusRefunded, reason)
			if err != nil {
				return err
			}
			if !ok {
				return errNothingToRefund // refunded meanwhile: roll the message back
			}
			if err := uc.accounts.Credit(ctx, p.UserID, p.Amount); err != nil {
				return err
			}
			return uc.gateway.Refund(ctx, p)
		})
	})
	if errors.Is(err, errNothingToRefund) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	uc.log.InfoContext(ctx, "payment refunded", "payment_id", p.ID, "order_id", p.OrderID, "reason", reason)
	return true, nil
}

// CheckEvent answers the broker's check-back for a payment event's half
// message born at born, from the payment row: PaymentSucceeded commits if
// the payment exists, PaymentRefunded if it is REFUNDED. Otherwise it
// answers UNKNOWN while the local transaction may still be open (younger
// than CheckUnknownWindow), then ROLLBACK. Read errors answer UNKNOWN.
//
// TODO(patterns): switch to pkg/mqclient/txmsg's fenced check-back (a
// rollback marker under the key the local transaction writes) once its
// API is final; the age window is a timing assumption the fence removes.
func (uc *PaymentUsecase) CheckEvent(ctx context.Context, kind EventKind, paymentID string, born time.Time) Decision {
	p, err := uc.payments.Get(ctx, paymentID)
	if errors.Is(err, ErrPaymentNotFound) {
		p, err = nil, nil
	}
	if err != nil {
		uc.log.WarnContext(ctx, "check-back read failed", "payment_id", paymentID, "err", err)
		return DecideUnknown
	}
	young := uc.now().Sub(born) < uc.opts.CheckUnknownWindow
	switch {
	case p != nil && kind == EventPaymentSucceeded:
		return DecideCommit
	case p != nil && kind == EventPaymentRefunded && p.Status == StatusRefunded:
		return DecideCommit
	case young:
		return DecideUnknown
	}
	return DecideRollback
}
