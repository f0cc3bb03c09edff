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

	"github.com/tidemq/tide/services/payment/internal/fault"
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
func (r *CreateRequest) Fingerprint() []byte {
	h := sha256.Sum256([]byte(r.OrderID + "\x00" + r.UserID + "\x00" + strconv.FormatInt(r.Amount, 10)))
	return h[:]
}

// PaymentID derives the payment id from an idempotency key.
func PaymentID(key string) string {
	h := sha256.Sum256([]byte(key))
	return "pay_" + hex.EncodeToString(h[:10])
}

// storedResponse is the original answer kept with an idempotency key: the
// payment, or a final business error.
type storedResponse struct {
	Payment  *Payment          `json:"payment,omitempty"`
	Code     int32             `json:"code,omitempty"`
	Reason   string            `json:"reason,omitempty"`
	Message  string            `json:"message,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

func (s *storedResponse) result() (*Payment, error) {
	if s.Payment != nil {
		return s.Payment, nil
	}
	return nil, errors.New(int(s.Code), s.Reason, s.Message).WithMetadata(s.Metadata)
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
	// Create inserts p: ErrPaymentExists if p.ID exists (an earlier
	// attempt with the same idempotency key committed),
	// ErrOrderAlreadyPaid if the order has a payment under another key.
	Create(ctx context.Context, p *Payment) error
	Get(ctx context.Context, id string) (*Payment, error)
	// GetByOrder returns the order's payment, or nil.
	GetByOrder(ctx context.Context, orderID string) (*Payment, error)
	// SetStatus moves a payment from one status to another; false if it
	// was not in from.
	SetStatus(ctx context.Context, id string, from, to Status, reason string) (bool, error)
	// LockOrder takes the order's lock (one row per order) for the
	// transaction in ctx, blocking while another transaction holds it;
	// it is released when that transaction ends. The payment's local
	// transaction and the cancellation's both take it first, so they
	// serialize per order.
	LockOrder(ctx context.Context, orderID string) error
	// MarkOrderCancelled records the order's cancellation (idempotent).
	MarkOrderCancelled(ctx context.Context, orderID, reason string) error
	// OrderCancelled reads the mark with a lock (SELECT … FOR UPDATE).
	OrderCancelled(ctx context.Context, orderID string) (bool, error)
}

// IdempotencyStore keeps API responses per Idempotency-Key
// (pkg/mqclient/idempotent.Store): fn runs at most once per key and its
// response is replayed for repeats; a repeat with another fingerprint is
// ErrIdempotencyKeyReused, a concurrent one ErrIdempotencyInProgress. An
// fn error stores nothing.
type IdempotencyStore interface {
	Do(ctx context.Context, key string, fingerprint []byte, fn func(ctx context.Context) ([]byte, error)) (resp []byte, replayed bool, err error)
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

// Event is a payment event. Its message keys are the order id and the
// payment id; it is ordered by order id with version Seq.
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

// Publisher sends payment events.
type Publisher interface {
	// Publish sends ev as a transactional message (pkg/mqclient/txmsg)
	// around local, which runs in a database transaction carried by the
	// ctx it gets: the message is visible if and only if that transaction
	// commits. It returns nil when it committed, local's error (or
	// ErrUnavailable) when it rolled back, and an error matching
	// ErrCommitUnknown when the commit's outcome is unknown (the fenced
	// check-back then decides).
	Publish(ctx context.Context, ev *Event, local func(ctx context.Context) error) error
	// Emit sends ev again as a plain message with the same business keys
	// (reconciliation's re-emission; consumers deduplicate).
	Emit(ctx context.Context, ev *Event) error
}

// Options tune the use case.
type Options struct {
	// LocalTxTimeout bounds a local transaction.
	LocalTxTimeout time.Duration
}

// PaymentUsecase creates and refunds payments. Safe for concurrent use.
type PaymentUsecase struct {
	accounts AccountRepo
	payments PaymentRepo
	keys     IdempotencyStore
	gateway  Gateway
	orders   OrderReader
	tx       Transaction
	pub      Publisher
	faults   *fault.Set
	opts     Options
	log      *slog.Logger
	now      func() time.Time
}

// NewPaymentUsecase returns a PaymentUsecase. orders is the order
// service every new payment is checked against. faults may be nil.
func NewPaymentUsecase(accounts AccountRepo, payments PaymentRepo, keys IdempotencyStore, gateway Gateway, orders OrderReader,
	tx Transaction, pub Publisher, faults *fault.Set, opts Options, logger *slog.Logger) *PaymentUsecase {
	if opts.LocalTxTimeout <= 0 {
		opts.LocalTxTimeout = 10 * time.Second
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &PaymentUsecase{accounts: accounts, payments: payments, keys: keys, gateway: gateway, orders: orders,
		tx: tx, pub: pub, faults: faults, opts: opts, log: logger, now: time.Now}
}

// GetPayment returns one payment.
func (uc *PaymentUsecase) GetPayment(ctx context.Context, id string) (*Payment, error) {
	if id == "" {
		return nil, ErrInvalidArgument.WithMetadata(map[string]string{"field": "id"})
	}
	return uc.payments.Get(ctx, id)
}

// CreatePayment debits the user's account for an order, exactly once per
// idempotency key, if the order service confirms the order exists, belongs
// to the user, is neither cancelled nor paid, and its total is the amount
// (else ORDER_NOT_FOUND, ORDER_NOT_OWNED, ORDER_CANCELLED,
// ORDER_ALREADY_PAID, AMOUNT_MISMATCH; ORDER_SERVICE_UNAVAILABLE when it
// does not answer); a refused payment debits and captures nothing. The response (the payment, or a final business error
// such as INSUFFICIENT_BALANCE) is stored under the key and replayed for
// a repeated request; the same key with another body is
// ErrIdempotencyKeyReused. The debit itself commits inside a
// transactional message: PaymentSucceeded is visible if and only if it
// committed.
func (uc *PaymentUsecase) CreatePayment(ctx context.Context, req *CreateRequest) (*Payment, error) {
	switch {
	case req.IdempotencyKey == "":
		return nil, ErrIdempotencyKeyRequired
	case len(req.IdempotencyKey) > 128:
		return nil, ErrInvalidArgument.WithMetadata(map[string]string{"field": "idempotency_key", "why": "longer than 128"})
	case req.OrderID == "" || len(req.OrderID) > 64 || req.UserID == "" || len(req.UserID) > 64 || req.Amount <= 0:
		return nil, ErrInvalidArgument.WithMetadata(map[string]string{"field": "order_id, user_id (1..64 bytes), amount > 0"})
	}
	resp, replayed, err := uc.keys.Do(ctx, req.IdempotencyKey, req.Fingerprint(), func(ctx context.Context) ([]byte, error) {
		p, err := uc.pay(ctx, req)
		var sr storedResponse
		switch {
		case err == nil:
			sr.Payment = p
		case final(err):
			ke := errors.FromError(err)
			sr = storedResponse{Code: ke.Code, Reason: ke.Reason, Message: ke.Message, Metadata: ke.Metadata}
		default:
			return nil, err // transient: nothing stored, a retry may succeed
		}
		return json.Marshal(&sr)
	})
	if err != nil {
		if errors.Is(err, ErrIdempotencyKeyReused) || errors.Is(err, ErrIdempotencyInProgress) || errors.Is(err, ErrGatewayTimeout) ||
			errors.Is(err, ErrOrderUnavailable) {
			return nil, err
		}
		if ke := errors.FromError(err); ke.Reason != "" && ke.Code < 500 {
			return nil, err
		}
		uc.log.ErrorContext(ctx, "payment failed", "order_id", req.OrderID, "idempotency_key", req.IdempotencyKey, "err", err)
		return nil, ErrUnavailable.WithCause(err)
	}
	var sr storedResponse
	if err := json.Unmarshal(resp, &sr); err != nil {
		return nil, ErrUnavailable.WithCause(fmt.Errorf("biz: stored response of %s: %w", req.IdempotencyKey, err))
	}
	if replayed {
		uc.log.InfoContext(ctx, "idempotency key replayed", "order_id", req.OrderID, "idempotency_key", req.IdempotencyKey)
	}
	return sr.result()
}

// pay runs the debit inside the transactional message. A payment that an
// earlier attempt with the same key committed (its stored response was
// lost, e.g. the process died before the key's record committed) is
// returned as it is, without a second debit.
func (uc *PaymentUsecase) pay(ctx context.Context, req *CreateRequest) (*Payment, error) {
	if p, err := uc.admit(ctx, req); p != nil || err != nil {
		return p, err
	}
	now := uc.now().UTC().Truncate(time.Microsecond)
	p := &Payment{ID: PaymentID(req.IdempotencyKey), OrderID: req.OrderID, UserID: req.UserID, Amount: req.Amount,
		Status: StatusSucceeded, IdempotencyKey: req.IdempotencyKey, CreatedAt: now, UpdatedAt: now}
	ev := &Event{Kind: EventPaymentSucceeded, OrderID: p.OrderID, Seq: 1, PaymentID: p.ID, UserID: p.UserID, Amount: p.Amount, At: now}
	lctx, cancel := context.WithTimeout(ctx, uc.opts.LocalTxTimeout)
	defer cancel()
	err := uc.pub.Publish(lctx, ev, func(ctx context.Context) error {
		// The order's lock first: a concurrent OrderCancelled takes it
		// too, before its mark, so either its mark committed before we
		// got the lock (we see it below and roll back: nothing debited)
		// or its mark waits until this transaction ended, and the refund
		// that follows the mark finds our committed payment. A plain
		// read of the payment by the refund would not wait for our
		// uncommitted row: without this lock the payment could commit
		// just after the cancellation was handled, and never be refunded.
		if err := uc.payments.LockOrder(ctx, p.OrderID); err != nil {
			return err
		}
		if err := uc.payments.Create(ctx, p); err != nil {
			return err
		}
		if cancelled, err := uc.payments.OrderCancelled(ctx, p.OrderID); err != nil {
			return err
		} else if cancelled {
			return ErrOrderCancelled.WithMetadata(map[string]string{"order_id": p.OrderID})
		}
		if err := uc.accounts.Debit(ctx, p.UserID, p.Amount); err != nil {
			return err
		}
		if err := uc.gateway.Capture(ctx, p); err != nil {
			return err
		}
		if ok, d := uc.faults.Take(fault.SlowLocalTx); ok && d > 0 {
			uc.log.WarnContext(ctx, "FAULT: slow local transaction", "payment_id", p.ID, "order_id", p.OrderID, "hold", d)
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		uc.faults.Crash(fault.CrashBeforeCommit, "payment_id", p.ID, "order_id", p.OrderID)
		return nil
	})
	switch {
	case err == nil:
		uc.log.InfoContext(ctx, "payment succeeded", "payment_id", p.ID, "order_id", p.OrderID, "amount", p.Amount)
		return p, nil
	case errors.Is(err, ErrPaymentExists):
		return uc.payments.Get(ctx, p.ID)
	case errors.Is(err, ErrCommitUnknown):
		// The check-back decides from the fence; a retry with the same
		// key finds the payment if it committed.
		return nil, ErrUnavailable.WithCause(err)
	}
	return nil, err
}

// admit checks a new payment against its order before anything is
// debited or captured: the order service's answer (GetOrder) is the
// authority on the order's user, total and status. A payment that an
// earlier attempt with the same key committed is returned as it is (its
// order may be PAID meanwhile). It returns (nil, nil) when the payment
// may proceed. The order's cancellation is checked again under the
// order's lock inside the payment's transaction (an OrderCancelled
// consumed meanwhile); a payment racing a cancellation the order service
// has not told us about yet is refunded when OrderCancelled arrives.
func (uc *PaymentUsecase) admit(ctx context.Context, req *CreateRequest) (*Payment, error) {
	if p, err := uc.payments.Get(ctx, PaymentID(req.IdempotencyKey)); err == nil {
		return p, nil
	} else if !errors.Is(err, ErrPaymentNotFound) {
		return nil, err
	}
	o, err := uc.orders.Order(ctx, req.OrderID)
	if err != nil {
		uc.log.WarnContext(ctx, "payment refused: order service unavailable", "order_id", req.OrderID, "err", err)
		return nil, ErrOrderUnavailable.WithCause(err).WithMetadata(map[string]string{"order_id": req.OrderID})
	}
	md := map[string]string{"order_id": req.OrderID}
	var refused *errors.Error
	switch {
	case o.Status == OrderMissing:
		refused = ErrOrderNotFound
	case o.UserID != req.UserID:
		refused = ErrOrderNotOwned
	case o.Status == OrderCancelled:
		refused = ErrOrderCancelled
	case o.Status == OrderPaid:
		refused = ErrOrderAlreadyPaid
	case o.Status != OrderCreated && o.Status != OrderReserved:
		return nil, ErrOrderUnavailable.WithCause(fmt.Errorf("biz: order %s has unknown status %q", o.ID, o.Status)).WithMetadata(md)
	case o.Total != req.Amount:
		refused = ErrAmountMismatch
		md["amount"] = strconv.FormatInt(req.Amount, 10)
		md["order_total"] = strconv.FormatInt(o.Total, 10)
	default:
		return nil, nil
	}
	uc.log.InfoContext(ctx, "payment refused", "order_id", req.OrderID, "user_id", req.UserID, "amount", req.Amount,
		"reason", refused.Reason, "order_status", o.Status)
	return nil, refused.WithMetadata(md)
}

var errNothingToRefund = errors.Conflict("NOTHING_TO_REFUND", "payment is not refundable")

// MarkOrderCancelled records an order's cancellation, so that a later
// payment for it is refused. It joins the transaction in ctx (the
// idempotent consumer's, with its dedup record), which must exist: it
// first takes the order's lock, so it blocks while a payment's local
// transaction for the order is open (at most its LocalTxTimeout), and
// once its transaction committed, every payment of the order has either
// committed or will see the mark.
func (uc *PaymentUsecase) MarkOrderCancelled(ctx context.Context, orderID, reason string) error {
	if orderID == "" {
		return ErrInvalidArgument.WithMetadata(map[string]string{"field": "order_id"})
	}
	if err := uc.payments.LockOrder(ctx, orderID); err != nil {
		return err
	}
	return uc.payments.MarkOrderCancelled(ctx, orderID, reason)
}

// RefundOrder refunds the order's SUCCEEDED payment through a
// transactional PaymentRefunded, and reports whether this call refunded.
// It is idempotent: the conditional SUCCEEDED→REFUNDED update lets one
// refund commit, any other call finds nothing to refund. Call it after
// the cancellation mark committed: the order's lock (MarkOrderCancelled,
// pay) makes a payment racing the mark either see the mark (and roll
// back) or commit before the mark, so it is refunded here.
func (uc *PaymentUsecase) RefundOrder(ctx context.Context, orderID, reason string) (bool, error) {
	p, err := uc.payments.GetByOrder(ctx, orderID)
	if err != nil || p == nil || p.Status != StatusSucceeded {
		return false, err
	}
	return uc.refund(ctx, p, reason)
}

func (uc *PaymentUsecase) refund(ctx context.Context, p *Payment, reason string) (bool, error) {
	ev := &Event{Kind: EventPaymentRefunded, OrderID: p.OrderID, Seq: 2, PaymentID: p.ID, UserID: p.UserID,
		Amount: p.Amount, Reason: reason, At: uc.now().UTC()}
	err := uc.pub.Publish(ctx, ev, func(ctx context.Context) error {
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
	if errors.Is(err, errNothingToRefund) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	uc.log.InfoContext(ctx, "payment refunded", "payment_id", p.ID, "order_id", p.OrderID, "reason", reason)
	return true, nil
}

// ReemitSucceeded sends the payment's PaymentSucceeded again (a plain
// message with the same business keys; the order service's consumer is
// idempotent). Reconciliation uses it when the order missed the event.
func (uc *PaymentUsecase) ReemitSucceeded(ctx context.Context, paymentID string) error {
	p, err := uc.payments.Get(ctx, paymentID)
	if err != nil {
		return err
	}
	if p.Status != StatusSucceeded {
		return fmt.Errorf("biz: payment %s is %s, not re-emitted", p.ID, p.Status)
	}
	return uc.pub.Emit(ctx, &Event{Kind: EventPaymentSucceeded, OrderID: p.OrderID, Seq: 1, PaymentID: p.ID, UserID: p.UserID,
		Amount: p.Amount, At: p.CreatedAt})
}

// RefundPayment refunds one payment by id (reconciliation: paid, but
// the order was cancelled). Idempotent like RefundOrder.
func (uc *PaymentUsecase) RefundPayment(ctx context.Context, paymentID, reason string) (bool, error) {
	p, err := uc.payments.Get(ctx, paymentID)
	if err != nil {
		return false, err
	}
	if p.Status != StatusSucceeded {
		return false, nil
	}
	return uc.refund(ctx, p, reason)
}
