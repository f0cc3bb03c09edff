package biz

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/go-kratos/kratos/v2/errors"
)

// Product is a product and its stock. Available units can be reserved,
// reserved units belong to live orders, sold units to paid orders.
type Product struct {
	ID        string
	Name      string
	Price     int64 // cents
	Available int64
	Reserved  int64
	Sold      int64
}

// Total is the product's stock; Reserve, Release and Sell never change it.
func (p *Product) Total() int64 { return p.Available + p.Reserved + p.Sold }

// Item is one product line of an order.
type Item struct {
	ProductID string
	Quantity  int64
}

// Status is a reservation's state.
//
//	           Reserve ok         Sell
//	(none) ───────────────▶ RESERVED ─────▶ SOLD
//	   │  Reserve short         │ Release
//	   ├───────────────▶ REJECTED  ▼
//	   │  Release (no reservation yet)   RELEASED
//	   └───────────────▶ CANCELLED
//
// Every other (state, command) pair is a no-op: a duplicate when the
// command led to the current state, a conflict otherwise. CANCELLED is a
// tombstone: an OrderCreated that arrives after its order's cancellation
// (a replay) must not reserve stock nobody will release.
type Status string

// Reservation states.
const (
	StatusReserved  Status = "RESERVED"
	StatusRejected  Status = "REJECTED"
	StatusReleased  Status = "RELEASED"
	StatusSold      Status = "SOLD"
	StatusCancelled Status = "CANCELLED"
)

// Reservation is the stock held for one order, keyed by order id. Seq is
// the sequence number of the last event published for the order
// (StockReserved/StockRejected = 1, StockReleased = 2).
type Reservation struct {
	OrderID   string
	Status    Status
	Items     []Item
	Seq       int64
	Reason    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ProductRepo reads and moves stock. Every method joins the transaction in
// ctx.
type ProductRepo interface {
	Get(ctx context.Context, id string) (*Product, error)
	// List returns up to limit products with ids greater than after, by id.
	List(ctx context.Context, after string, limit int) ([]*Product, error)
	// Lock reads the products with a row lock (SELECT … FOR UPDATE) in id
	// order; missing ids are absent from the result.
	Lock(ctx context.Context, ids []string) (map[string]*Product, error)
	// Move adds the deltas to one product's counters. It fails if a
	// counter would become negative.
	Move(ctx context.Context, id string, dAvailable, dReserved, dSold int64) error
}

// ReservationRepo stores reservations. Every method joins the transaction
// in ctx.
type ReservationRepo interface {
	// GetForUpdate returns the reservation with a row lock, or (nil, nil).
	GetForUpdate(ctx context.Context, orderID string) (*Reservation, error)
	// Create inserts r; a second Create for one order fails.
	Create(ctx context.Context, r *Reservation) error
	// SetStatus moves the reservation from one status to another and sets
	// its seq; it fails unless the row was in from.
	SetStatus(ctx context.Context, orderID string, from, to Status, seq int64) error
	// List returns reservations in status, oldest first (reconciliation).
	List(ctx context.Context, status Status, limit int) ([]*Reservation, error)
}

// EventKind names an inventory event.
type EventKind string

// Event kinds, equal to the message tags.
const (
	EventStockReserved EventKind = "StockReserved"
	EventStockRejected EventKind = "StockRejected"
	EventStockReleased EventKind = "StockReleased"
)

// Event is an inventory event about one order.
type Event struct {
	Kind      EventKind
	OrderID   string
	Seq       int64
	Items     []Item
	Reason    string
	ProductID string // the short product of a StockRejected
	At        time.Time
}

// EventPublisher publishes events ordered by order id. Publish is called
// inside Transaction.InTx and must be atomic with it: the event goes out
// if and only if the transaction commits.
type EventPublisher interface {
	Publish(ctx context.Context, ev *Event) error
}

// Outcome is what a command did.
type Outcome int

const (
	// Applied: the command changed state (and published its event).
	Applied Outcome = iota
	// Duplicate: the command had already been applied; no effect.
	Duplicate
	// Conflict: the reservation is in a state the command cannot leave
	// (Sell after Release, …); no effect, logged.
	Conflict
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case Duplicate:
		return "duplicate"
	}
	return "conflict"
}

// Rejection reasons in StockRejected.
const (
	RejectOutOfStock     = "out_of_stock"
	RejectUnknownProduct = "unknown_product"
	RejectNoItems        = "no_items"
)

// StockUsecase reserves, releases and sells stock for orders. Each command
// takes effect at most once per order (the reservation's state machine,
// changed in the same transaction as the stock move and the event), so
// consumers may deliver every order event any number of times; the
// consumer adds pkg/mqclient/idempotent's dedup record and Redis fast
// path and pkg/mqclient/ordered's version guard in front (server).
// Safe for concurrent use; commands for one order serialise on its
// reservation row lock.
type StockUsecase struct {
	products     ProductRepo
	reservations ReservationRepo
	tx           Transaction
	pub          EventPublisher
	log          *slog.Logger
	now          func() time.Time
}

// NewStockUsecase returns a StockUsecase.
func NewStockUsecase(products ProductRepo, reservations ReservationRepo, tx Transaction, pub EventPublisher, logger *slog.Logger) *StockUsecase {
	if logger == nil {
		logger = slog.Default()
	}
	return &StockUsecase{products: products, reservations: reservations, tx: tx, pub: pub, log: logger, now: time.Now}
}

// GetProduct returns one product or ErrProductNotFound.
func (uc *StockUsecase) GetProduct(ctx context.Context, id string) (*Product, error) {
	if id == "" {
		return nil, ErrInvalidArgument.WithMetadata(map[string]string{"field": "id"})
	}
	return uc.products.Get(ctx, id)
}

// ListProducts returns a page of products ordered by id after the id
// after; limit is clamped to 1..100 (0 means 50).
func (uc *StockUsecase) ListProducts(ctx context.Context, after string, limit int) ([]*Product, error) {
	switch {
	case limit <= 0:
		limit = 50
	case limit > 100:
		limit = 100
	}
	return uc.products.List(ctx, after, limit)
}

// mergeItems sums quantities per product and sorts by product id, so that
// row locks are always taken in one order (no deadlocks between orders).
func mergeItems(items []Item) ([]Item, error) {
	sum := map[string]int64{}
	for _, it := range items {
		if it.ProductID == "" || it.Quantity <= 0 {
			return nil, ErrInvalidArgument.WithMetadata(map[string]string{"item": fmt.Sprintf("%s x %d", it.ProductID, it.Quantity)})
		}
		sum[it.ProductID] += it.Quantity
	}
	out := make([]Item, 0, len(sum))
	for id, q := range sum {
		out = append(out, Item{ProductID: id, Quantity: q})
	}
	slices.SortFunc(out, func(a, b Item) int {
		switch {
		case a.ProductID < b.ProductID:
			return -1
		case a.ProductID > b.ProductID:
			return 1
		}
		return 0
	})
	return out, nil
}

func ids(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ProductID
	}
	return out
}

// Reserve reserves every line of an order, or none: when a product is
// unknown or short it records a REJECTED reservation and publishes
// StockRejected instead. It is a no-op for an order that already has a
// reservation (any status).
func (uc *StockUsecase) Reserve(ctx context.Context, orderID string, items []Item) (Outcome, error) {
	if orderID == "" {
		return Conflict, ErrInvalidArgument.WithMetadata(map[string]string{"field": "order_id"})
	}
	merged, mergeErr := mergeItems(items)
	var out Outcome
	err := uc.tx.InTx(ctx, func(ctx context.Context) error {
		r, err := uc.reservations.GetForUpdate(ctx, orderID)
		if err != nil {
			return err
		}
		if r != nil {
			out = Duplicate
			if r.Status == StatusCancelled {
				out = Conflict
			}
			return nil
		}
		now := uc.now()
		reject := func(reason, productID string) error {
			r := &Reservation{OrderID: orderID, Status: StatusRejected, Seq: 1, Reason: reason, CreatedAt: now, UpdatedAt: now}
			if err := uc.reservations.Create(ctx, r); err != nil {
				return err
			}
			out = Applied
			return uc.pub.Publish(ctx, &Event{Kind: EventStockRejected, OrderID: orderID, Seq: 1, Reason: reason, ProductID: productID, At: now})
		}
		if mergeErr != nil || len(merged) == 0 {
			return reject(RejectNoItems, "")
		}
		locked, err := uc.products.Lock(ctx, ids(merged))
		if err != nil {
			return err
		}
		for _, it := range merged {
			p, ok := locked[it.ProductID]
			if !ok {
				return reject(RejectUnknownProduct, it.ProductID)
			}
			if p.Available < it.Quantity {
				return reject(RejectOutOfStock, it.ProductID)
			}
		}
		for _, it := range merged {
			if err := uc.products.Move(ctx, it.ProductID, -it.Quantity, it.Quantity, 0); err != nil {
				return err
			}
		}
		r = &Reservation{OrderID: orderID, Status: StatusReserved, Items: merged, Seq: 1, CreatedAt: now, UpdatedAt: now}
		if err := uc.reservations.Create(ctx, r); err != nil {
			return err
		}
		out = Applied
		return uc.pub.Publish(ctx, &Event{Kind: EventStockReserved, OrderID: orderID, Seq: 1, Items: merged, At: now})
	})
	if err != nil {
		return out, err
	}
	return out, nil
}

// Release gives a RESERVED order's stock back (RELEASED, StockReleased).
// For an order without a reservation it records a CANCELLED tombstone, so
// that a late OrderCreated for it reserves nothing.
func (uc *StockUsecase) Release(ctx context.Context, orderID string) (Outcome, error) {
	if orderID == "" {
		return Conflict, ErrInvalidArgument.WithMetadata(map[string]string{"field": "order_id"})
	}
	var out Outcome
	err := uc.tx.InTx(ctx, func(ctx context.Context) error {
		r, err := uc.reservations.GetForUpdate(ctx, orderID)
		if err != nil {
			return err
		}
		now := uc.now()
		if r == nil {
			out = Applied
			return uc.reservations.Create(ctx, &Reservation{OrderID: orderID, Status: StatusCancelled, Reason: "cancelled_before_reserved", CreatedAt: now, UpdatedAt: now})
		}
		switch r.Status {
		case StatusReleased, StatusCancelled:
			out = Duplicate
			return nil
		case StatusRejected:
			out = Duplicate // nothing was reserved, nothing to release
			return nil
		case StatusSold:
			out = Conflict
			return nil
		}
		for _, it := range r.Items {
			if err := uc.products.Move(ctx, it.ProductID, it.Quantity, -it.Quantity, 0); err != nil {
				return err
			}
		}
		seq := r.Seq + 1
		if err := uc.reservations.SetStatus(ctx, orderID, StatusReserved, StatusReleased, seq); err != nil {
			return err
		}
		out = Applied
		return uc.pub.Publish(ctx, &Event{Kind: EventStockReleased, OrderID: orderID, Seq: seq, Items: r.Items, At: now})
	})
	if err != nil {
		return out, err
	}
	if out == Conflict {
		uc.log.WarnContext(ctx, "release of a sold reservation ignored", "order_id", orderID)
	}
	return out, nil
}

// Sell turns a RESERVED order's stock into sold stock (SOLD). It returns
// ErrReservationNotFound when the order has no reservation yet, so that
// the consumer retries until OrderCreated was applied.
func (uc *StockUsecase) Sell(ctx context.Context, orderID string) (Outcome, error) {
	if orderID == "" {
		return Conflict, ErrInvalidArgument.WithMetadata(map[string]string{"field": "order_id"})
	}
	var out Outcome
	err := uc.tx.InTx(ctx, func(ctx context.Context) error {
		r, err := uc.reservations.GetForUpdate(ctx, orderID)
		if err != nil {
			return err
		}
		if r == nil {
			return ErrReservationNotFound.WithMetadata(map[string]string{"order_id": orderID})
		}
		switch r.Status {
		case StatusSold:
			out = Duplicate
			return nil
		case StatusReserved:
		default:
			out = Conflict
			return nil
		}
		for _, it := range r.Items {
			if err := uc.products.Move(ctx, it.ProductID, 0, -it.Quantity, it.Quantity); err != nil {
				return err
			}
		}
		out = Applied
		return uc.reservations.SetStatus(ctx, orderID, StatusReserved, StatusSold, r.Seq)
	})
	if err != nil {
		return out, err
	}
	if out == Conflict {
		uc.log.WarnContext(ctx, "sale of an unreserved order ignored (payment refunds it)", "order_id", orderID)
	}
	return out, nil
}

// IsRetryable reports whether a consumer should retry err (a transient
// failure) rather than acknowledge the message.
func IsRetryable(err error) bool {
	return err != nil && !errors.Is(err, ErrInvalidArgument)
}
