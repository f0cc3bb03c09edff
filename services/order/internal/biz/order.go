package biz

import (
	"context"
	stderrors "errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/services/order/internal/conf"
)

// Status is an order's place in its life cycle:
//
//	CREATED --StockReserved--> RESERVED
//	CREATED|RESERVED --PaymentSucceeded--> PAID
//	CREATED|RESERVED --timer due / StockRejected--> CANCELLED
//
// PAID and CANCELLED are final.
type Status string

// The statuses.
const (
	StatusCreated   Status = "CREATED"
	StatusReserved  Status = "RESERVED"
	StatusPaid      Status = "PAID"
	StatusCancelled Status = "CANCELLED"
)

// Live reports whether the order can still be paid or cancelled.
func (s Status) Live() bool { return s == StatusCreated || s == StatusReserved }

// Cancellation reasons.
const (
	CancelTimeout       = "timeout"
	CancelStockRejected = "stock_rejected"
)

// Item is one product line of an order.
type Item struct {
	ProductID string
	Quantity  int32
	// UnitPrice in cents.
	UnitPrice int64
}

// Line is one line of a new order as the client asks for it.
type Line struct {
	ProductID string
	Quantity  int32
	// UnitPrice, if set, is the price in cents the client expects; it
	// must be the catalog's.
	UnitPrice *int64
}

// Order is the aggregate the service owns.
type Order struct {
	ID     string
	UserID string
	Status Status
	Items  []Item
	// Total in cents.
	Total int64
	// Seq is the sequence number of the last event the order published
	// (OrderCreated is 1).
	Seq int64
	// CancelAt is when an unpaid order is cancelled.
	CancelAt     time.Time
	CancelReason string
	// CancelTimer is the CancelTimer handle of the scheduled cancellation.
	CancelTimer string
	PaymentID   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (o *Order) clone() *Order {
	c := *o
	c.Items = slices.Clone(o.Items)
	return &c
}

// changed reports whether a transition changed a field Update writes.
func (o *Order) changed(prev *Order) bool {
	return o.Status != prev.Status || o.Seq != prev.Seq || o.CancelReason != prev.CancelReason ||
		o.CancelTimer != prev.CancelTimer || o.PaymentID != prev.PaymentID
}

func (o *Order) lineItems() []*eventv1.LineItem {
	items := make([]*eventv1.LineItem, len(o.Items))
	for i, it := range o.Items {
		items[i] = &eventv1.LineItem{ProductId: it.ProductID, Quantity: it.Quantity, UnitPrice: it.UnitPrice}
	}
	return items
}

// TimelineEntry is one event in the life of an order: published by the
// order service or received from another service. (OrderID, Topic, Seq) is
// unique, which is what makes event consumption idempotent.
type TimelineEntry struct {
	OrderID string
	// Event is the event type (message tag): OrderCreated, StockReserved, ...
	Event string
	Topic string
	// Seq is the publisher's per-order sequence number.
	Seq int64
	// Status is the order's status after the event.
	Status Status
	Detail string
	At     time.Time
}

// OrderRepo stores orders and their timelines. Calls join the
// transaction in ctx (Transaction.InTx), if any.
type OrderRepo interface {
	// Create inserts a new order.
	Create(ctx context.Context, o *Order) error
	// Get returns the order or ErrOrderNotFound.
	Get(ctx context.Context, id string) (*Order, error)
	// Lock returns the order locked until the transaction in ctx ends
	// (SELECT ... FOR UPDATE), or ErrOrderNotFound.
	Lock(ctx context.Context, id string) (*Order, error)
	// Update writes o's mutable fields (status, seq, cancel reason, timer,
	// payment id).
	Update(ctx context.Context, o *Order) error
	// AddTimeline records an entry.
	AddTimeline(ctx context.Context, e *TimelineEntry) error
	// HasEvent reports whether (orderID, topic, seq) is recorded.
	HasEvent(ctx context.Context, orderID, topic string, seq int64) (bool, error)
	// Timeline returns the order's entries, oldest first.
	Timeline(ctx context.Context, orderID string) ([]*TimelineEntry, error)
	// Overdue returns up to limit ids of live orders whose CancelAt is
	// not after now.
	Overdue(ctx context.Context, now time.Time, limit int) ([]string, error)
	// List returns up to f.Limit orders matching f, greatest id (newest)
	// first, with ids below f.After when it is set.
	List(ctx context.Context, f ListFilter) ([]*Order, error)
}

// ListFilter selects orders for List. Zero fields select everything.
type ListFilter struct {
	Status Status
	UserID string
	// After is the id of the last order of the previous page: only
	// smaller (older: ids are UUIDv7, ordered by creation time) ids.
	After string
	Limit int
}

// Page sizes of List.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// List returns a page of orders, newest first, and the token of the next
// page ("" on the last one). Limit 0 means DefaultListLimit; a limit
// outside [0, MaxListLimit], a user id over 64 bytes or a malformed page
// token is ErrInvalidArgument.
func (uc *OrderUsecase) List(ctx context.Context, f ListFilter) ([]*Order, string, error) {
	switch {
	case f.Limit < 0 || f.Limit > MaxListLimit:
		return nil, "", ErrInvalidArgument.WithMetadata(map[string]string{"field": "limit", "why": fmt.Sprintf("1 to %d", MaxListLimit)})
	case len(f.UserID) > 64:
		return nil, "", ErrInvalidArgument.WithMetadata(map[string]string{"field": "user_id", "why": "at most 64 bytes"})
	case f.After != "" && !validID(f.After):
		return nil, "", ErrInvalidArgument.WithMetadata(map[string]string{"field": "page_token"})
	}
	if f.Limit == 0 {
		f.Limit = DefaultListLimit
	}
	want := f.Limit
	f.Limit++ // one more tells whether there is a next page
	os, err := uc.repo.List(ctx, f)
	if err != nil {
		return nil, "", ErrUnavailable.WithCause(fmt.Errorf("list orders: %w", err))
	}
	if len(os) <= want {
		return os, "", nil
	}
	os = os[:want]
	return os, os[want-1].ID, nil
}

// validID reports whether s looks like an order id (a UUID's characters,
// at most 36 of them).
func validID(s string) bool {
	if len(s) == 0 || len(s) > 36 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-') {
			return false
		}
	}
	return true
}

// ErrTooEarly is returned by CancelIfUnpaid when a timer fires before the
// order's deadline (a broker without timer support delivers at once); the
// consumer retries later.
var ErrTooEarly = stderrors.New("order: cancellation timer fired before the deadline")

var (
	errDuplicate = stderrors.New("duplicate event")
	errPublish   = stderrors.New("transition publishes an event")
	errStale     = stderrors.New("order changed meanwhile")
)

// OrderUsecase creates orders and moves them through their life cycle.
// It is safe for concurrent use; transitions of one order are serialised
// by the row lock (OrderRepo.Lock).
type OrderUsecase struct {
	repo        OrderRepo
	catalog     Catalog
	tx          Transaction
	pub         EventPublisher
	timer       CancelTimer
	log         *slog.Logger
	cancelAfter time.Duration

	now   func() time.Time
	newID func() string
}

// DefaultCancelAfter is the unpaid-order timeout when the config sets none.
const DefaultCancelAfter = 15 * time.Minute

// NewOrderUsecase returns the use case. catalog prices new orders. c may
// be nil (defaults).
func NewOrderUsecase(repo OrderRepo, catalog Catalog, tx Transaction, pub EventPublisher, timer CancelTimer, c *conf.Order, l *slog.Logger) *OrderUsecase {
	after := DefaultCancelAfter
	if d := c.GetCancelAfter(); d != nil && d.AsDuration() > 0 {
		after = d.AsDuration()
	}
	return &OrderUsecase{repo: repo, catalog: catalog, tx: tx, pub: pub, timer: timer, log: l.With("module", "order/biz"), cancelAfter: after,
		now:   func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) },
		newID: func() string { return uuid.Must(uuid.NewV7()).String() }}
}

// Create validates, prices and stores a new order. Prices come from the
// catalog (ErrProductNotFound for a product it does not have,
// ErrPriceMismatch for a line whose given price is not the catalog's,
// ErrInventoryUnavailable when it does not answer: the client's price is
// never used). Then, in order: it schedules the order's cancellation
// timer (so an order never exists without one; a timer whose order never
// commits fires harmlessly), then sends OrderCreated as a transactional
// message whose local transaction inserts the order and its first
// timeline entry.
func (uc *OrderUsecase) Create(ctx context.Context, userID string, lines []Line) (*Order, error) {
	if err := validate(userID, lines); err != nil {
		return nil, err
	}
	items, err := uc.price(ctx, lines)
	if err != nil {
		return nil, err
	}
	now := uc.now()
	o := &Order{ID: uc.newID(), UserID: userID, Status: StatusCreated, Items: items, Seq: 1,
		CancelAt: now.Add(uc.cancelAfter), CreatedAt: now, UpdatedAt: now}
	for _, it := range items {
		o.Total += int64(it.Quantity) * it.UnitPrice
	}
	handle, err := uc.timer.Schedule(ctx, o.ID, o.CancelAt)
	if err != nil {
		return nil, ErrUnavailable.WithCause(fmt.Errorf("schedule cancellation: %w", err))
	}
	o.CancelTimer = handle
	ev := Event{OrderID: o.ID, Seq: o.Seq, Payload: &eventv1.OrderCreated{OrderId: o.ID, Seq: o.Seq, UserId: o.UserID,
		Items: o.lineItems(), TotalAmount: o.Total, CancelAt: timestamppb.New(o.CancelAt), CreatedAt: timestamppb.New(now)}}
	err = uc.pub.PublishInTx(ctx, ev, func(ctx context.Context) error {
		if err := uc.repo.Create(ctx, o); err != nil {
			return err
		}
		return uc.repo.AddTimeline(ctx, &TimelineEntry{OrderID: o.ID, Event: eventv1.TagOrderCreated,
			Topic: eventv1.TopicOrderEvents, Seq: o.Seq, Status: o.Status, At: now})
	})
	if err != nil {
		if rerr := uc.timer.Recall(ctx, handle); rerr != nil {
			uc.log.WarnContext(ctx, "recall timer of failed order", "order_id", o.ID, "err", rerr)
		}
		return nil, ErrUnavailable.WithCause(fmt.Errorf("create order: %w", err))
	}
	return o, nil
}

func validate(userID string, lines []Line) error {
	if userID == "" {
		return ErrInvalidArgument.WithMetadata(map[string]string{"field": "user_id"})
	}
	if len(lines) == 0 || len(lines) > 100 {
		return ErrInvalidArgument.WithMetadata(map[string]string{"field": "items", "why": "1 to 100 items"})
	}
	for _, l := range lines {
		if l.ProductID == "" || l.Quantity <= 0 || l.Quantity > 10000 || (l.UnitPrice != nil && (*l.UnitPrice < 0 || *l.UnitPrice > 1e9)) {
			return ErrInvalidArgument.WithMetadata(map[string]string{"field": "items", "product_id": l.ProductID})
		}
	}
	return nil
}

// price gives every line the catalog's unit price.
func (uc *OrderUsecase) price(ctx context.Context, lines []Line) ([]Item, error) {
	var ids []string
	for _, l := range lines {
		if !slices.Contains(ids, l.ProductID) {
			ids = append(ids, l.ProductID)
		}
	}
	prices, err := uc.catalog.Prices(ctx, ids)
	if err != nil {
		uc.log.WarnContext(ctx, "order refused: catalog unavailable", "err", err)
		return nil, ErrInventoryUnavailable.WithCause(err)
	}
	items := make([]Item, len(lines))
	for i, l := range lines {
		p, ok := prices[l.ProductID]
		switch {
		case !ok:
			return nil, ErrProductNotFound.WithMetadata(map[string]string{"product_id": l.ProductID})
		case l.UnitPrice != nil && *l.UnitPrice != p:
			return nil, ErrPriceMismatch.WithMetadata(map[string]string{"product_id": l.ProductID,
				"unit_price": strconv.FormatInt(*l.UnitPrice, 10), "catalog_price": strconv.FormatInt(p, 10)})
		}
		items[i] = Item{ProductID: l.ProductID, Quantity: l.Quantity, UnitPrice: p}
	}
	return items, nil
}

// Get returns the order and its timeline, oldest entry first.
func (uc *OrderUsecase) Get(ctx context.Context, id string) (*Order, []*TimelineEntry, error) {
	if id == "" {
		return nil, nil, ErrInvalidArgument.WithMetadata(map[string]string{"field": "id"})
	}
	o, err := uc.repo.Get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	tl, err := uc.repo.Timeline(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return o, tl, nil
}

// incoming identifies a received event. Topic "" means an internal trigger
// (timer, sweeper) that is neither deduplicated nor recorded.
type incoming struct {
	orderID string
	topic   string
	event   string
	seq     int64
}

// decision is what an event does to a (cloned) order: it may mutate it and
// may return an event to publish with the next sequence number.
type decision func(o *Order) (emit func(seq int64) proto.Message, detail string)

// apply runs one incoming event against its order, idempotently: an event
// already recorded is ignored. A transition that publishes an event runs as
// a transactional message (PublishInTx), re-checking the order under its
// lock; if the order changed in between, it starts over.
func (uc *OrderUsecase) apply(ctx context.Context, in incoming, decide decision) (*Order, error) {
	for range 5 {
		var snap *Order
		err := uc.tx.InTx(ctx, func(ctx context.Context) error {
			o, err := uc.lockFresh(ctx, in)
			if err != nil {
				return err
			}
			next := o.clone()
			emit, detail := decide(next)
			if emit != nil {
				snap = o
				return errPublish
			}
			if next.changed(o) {
				next.UpdatedAt = uc.now()
				if err := uc.repo.Update(ctx, next); err != nil {
					return err
				}
			}
			snap = next
			return uc.record(ctx, in, next, detail)
		})
		switch {
		case err == nil:
			return snap, nil
		case stderrors.Is(err, errDuplicate):
			return nil, nil
		case !stderrors.Is(err, errPublish):
			return nil, err
		}

		next := snap.clone()
		emit, detail := decide(next)
		if emit == nil { // decide is deterministic for one snapshot; be safe anyway
			continue
		}
		next.Seq = snap.Seq + 1
		payload := emit(next.Seq)
		tag := eventv1.Tag(payload)
		err = uc.pub.PublishInTx(ctx, Event{OrderID: next.ID, Seq: next.Seq, Payload: payload}, func(ctx context.Context) error {
			cur, err := uc.lockFresh(ctx, in)
			if err != nil {
				return err
			}
			if cur.Seq != snap.Seq || cur.Status != snap.Status {
				return errStale
			}
			// One instant for the received event and the one it causes,
			// taken now (after the half message was stored), so that the
			// timeline's times follow its order: the cause first (the row
			// inserted first), then the effect, never the effect earlier.
			at := uc.now()
			next.UpdatedAt = at
			if err := uc.repo.Update(ctx, next); err != nil {
				return err
			}
			if err := uc.recordAt(ctx, in, next, detail, at); err != nil {
				return err
			}
			return uc.repo.AddTimeline(ctx, &TimelineEntry{OrderID: next.ID, Event: tag, Topic: eventv1.TopicOrderEvents,
				Seq: next.Seq, Status: next.Status, Detail: detail, At: at})
		})
		switch {
		case err == nil:
			return next, nil
		case stderrors.Is(err, errDuplicate):
			return nil, nil
		case !stderrors.Is(err, errStale):
			return nil, err
		}
	}
	return nil, ErrUnavailable.WithCause(fmt.Errorf("order %s keeps changing", in.orderID))
}

// lockFresh locks the order and fails with errDuplicate if in was
// already applied.
func (uc *OrderUsecase) lockFresh(ctx context.Context, in incoming) (*Order, error) {
	o, err := uc.repo.Lock(ctx, in.orderID)
	if err != nil {
		return nil, err
	}
	if in.topic != "" {
		dup, err := uc.repo.HasEvent(ctx, in.orderID, in.topic, in.seq)
		if err != nil {
			return nil, err
		}
		if dup {
			return nil, errDuplicate
		}
	}
	return o, nil
}

func (uc *OrderUsecase) record(ctx context.Context, in incoming, o *Order, detail string) error {
	return uc.recordAt(ctx, in, o, detail, uc.now())
}

// recordAt adds the received event in to the timeline at at; internal
// triggers (topic "") are not recorded.
func (uc *OrderUsecase) recordAt(ctx context.Context, in incoming, o *Order, detail string, at time.Time) error {
	if in.topic == "" {
		return nil
	}
	return uc.repo.AddTimeline(ctx, &TimelineEntry{OrderID: o.ID, Event: in.event, Topic: in.topic, Seq: in.seq,
		Status: o.Status, Detail: detail, At: at})
}

// cancel turns a live order into CANCELLED and emits OrderCancelled.
func (uc *OrderUsecase) cancel(o *Order, reason string) func(seq int64) proto.Message {
	o.Status = StatusCancelled
	o.CancelReason = reason
	at := uc.now()
	return func(seq int64) proto.Message {
		return &eventv1.OrderCancelled{OrderId: o.ID, Seq: seq, Reason: reason, Items: o.lineItems(),
			CancelledAt: timestamppb.New(at)}
	}
}

// CancelIfUnpaid is the cancellation timer's (and the sweeper's) action:
// it cancels the order, in one transaction with its OrderCancelled event,
// only if it is still unpaid. A paid or cancelled order, or one that does
// not exist (its creation rolled back), is left alone. It returns
// ErrTooEarly before the order's deadline.
func (uc *OrderUsecase) CancelIfUnpaid(ctx context.Context, orderID string) error {
	_, err := uc.apply(ctx, incoming{orderID: orderID}, func(o *Order) (func(int64) proto.Message, string) {
		if !o.Status.Live() || uc.now().Before(o.CancelAt) {
			return nil, ""
		}
		return uc.cancel(o, CancelTimeout), "unpaid at the deadline"
	})
	if stderrors.Is(err, ErrOrderNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	o, gerr := uc.repo.Get(ctx, orderID)
	if gerr == nil && o.Status.Live() && uc.now().Before(o.CancelAt) {
		return fmt.Errorf("%w: order %s due at %s", ErrTooEarly, orderID, o.CancelAt.Format(time.RFC3339Nano))
	}
	return nil
}

// SweepOverdue cancels up to limit live orders past their deadline: the
// backstop for timers that were lost. It returns how many it cancelled.
func (uc *OrderUsecase) SweepOverdue(ctx context.Context, limit int) (int, error) {
	ids, err := uc.repo.Overdue(ctx, uc.now(), limit)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		if err := uc.CancelIfUnpaid(ctx, id); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// OnStockReserved moves a CREATED order to RESERVED.
func (uc *OrderUsecase) OnStockReserved(ctx context.Context, ev *eventv1.StockReserved) error {
	_, err := uc.apply(ctx, incoming{ev.GetOrderId(), eventv1.TopicInventoryEvents, eventv1.TagStockReserved, ev.GetSeq()},
		func(o *Order) (func(int64) proto.Message, string) {
			if o.Status == StatusCreated {
				o.Status = StatusReserved
				return nil, "stock reserved"
			}
			return nil, "stock reserved for a " + string(o.Status) + " order"
		})
	return notFoundIsFinal(err)
}

// OnStockRejected cancels a live order whose stock could not be reserved.
func (uc *OrderUsecase) OnStockRejected(ctx context.Context, ev *eventv1.StockRejected) error {
	_, err := uc.apply(ctx, incoming{ev.GetOrderId(), eventv1.TopicInventoryEvents, eventv1.TagStockRejected, ev.GetSeq()},
		func(o *Order) (func(int64) proto.Message, string) {
			if o.Status.Live() {
				return uc.cancel(o, CancelStockRejected), "stock rejected: " + ev.GetReason()
			}
			return nil, "stock rejected for a " + string(o.Status) + " order"
		})
	return notFoundIsFinal(err)
}

// OnStockReleased records the release of the order's reservation.
func (uc *OrderUsecase) OnStockReleased(ctx context.Context, ev *eventv1.StockReleased) error {
	_, err := uc.apply(ctx, incoming{ev.GetOrderId(), eventv1.TopicInventoryEvents, eventv1.TagStockReleased, ev.GetSeq()},
		func(o *Order) (func(int64) proto.Message, string) { return nil, "stock released" })
	return notFoundIsFinal(err)
}

// OnPaymentSucceeded marks a live order PAID (with OrderPaid, in one
// transaction) and recalls its cancellation timer, if the payment is of
// the order's total by the order's user. A payment for a cancelled order
// is only recorded: the payment service refunds it when it sees
// OrderCancelled. So is a payment that does not match the order: the
// order stays unpaid (and is cancelled at its deadline).
func (uc *OrderUsecase) OnPaymentSucceeded(ctx context.Context, ev *eventv1.PaymentSucceeded) error {
	o, err := uc.apply(ctx, incoming{ev.GetOrderId(), eventv1.TopicPaymentEvents, eventv1.TagPaymentSucceeded, ev.GetSeq()},
		func(o *Order) (func(int64) proto.Message, string) {
			if !o.Status.Live() {
				return nil, "payment " + ev.GetPaymentId() + " for a " + string(o.Status) + " order"
			}
			if ev.GetAmount() != o.Total || ev.GetUserId() != o.UserID {
				// The payment service refuses such payments; one from an
				// older version or a bug does not pay the order (its
				// reconciliation refunds it, and the order is cancelled at
				// its deadline).
				return nil, fmt.Sprintf("payment %s of %d by %s does not match the order (total %d, user %s): not paid",
					ev.GetPaymentId(), ev.GetAmount(), ev.GetUserId(), o.Total, o.UserID)
			}
			o.Status = StatusPaid
			o.PaymentID = ev.GetPaymentId()
			at := uc.now()
			return func(seq int64) proto.Message {
				return &eventv1.OrderPaid{OrderId: o.ID, Seq: seq, PaymentId: ev.GetPaymentId(), Amount: ev.GetAmount(),
					Items: o.lineItems(), PaidAt: timestamppb.New(at)}
			}, "paid by " + ev.GetPaymentId()
		})
	if err != nil {
		return notFoundIsFinal(err)
	}
	if o != nil && o.Status == StatusPaid && o.PaymentID == ev.GetPaymentId() && o.CancelTimer != "" {
		if err := uc.timer.Recall(ctx, o.CancelTimer); err != nil {
			uc.log.InfoContext(ctx, "recall cancellation timer of paid order", "order_id", o.ID, "err", err)
		}
	}
	return nil
}

// OnPaymentRefunded records a refund.
func (uc *OrderUsecase) OnPaymentRefunded(ctx context.Context, ev *eventv1.PaymentRefunded) error {
	_, err := uc.apply(ctx, incoming{ev.GetOrderId(), eventv1.TopicPaymentEvents, eventv1.TagPaymentRefunded, ev.GetSeq()},
		func(o *Order) (func(int64) proto.Message, string) {
			return nil, "refunded " + ev.GetPaymentId() + ": " + ev.GetReason()
		})
	return notFoundIsFinal(err)
}

// notFoundIsFinal drops events for orders that do not exist: redelivering
// them cannot help (the order's creation rolled back).
func notFoundIsFinal(err error) error {
	if stderrors.Is(err, ErrOrderNotFound) {
		return nil
	}
	return err
}
