package biz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	kerrors "github.com/go-kratos/kratos/v2/errors"
	"google.golang.org/protobuf/types/known/durationpb"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/services/kit/api/apierr"
	"github.com/tidemq/tide/services/order/internal/conf"
)

type env struct {
	uc      *OrderUsecase
	store   *store
	catalog *catalog
	pub     *publisher
	timer   *timer
	clock   time.Time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{store: newStore(), timer: &timer{}, clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	e.pub = &publisher{tx: e.store}
	e.catalog = &catalog{prices: map[string]int64{"p1": 150, "p2": 1000, "p-free": 0}}
	e.uc = NewOrderUsecase(e.store, e.catalog, e.store, e.pub, e.timer,
		&conf.Order{CancelAfter: durationpb.New(time.Minute)}, slog.Default())
	e.uc.now = func() time.Time { return e.clock }
	n := 0
	e.uc.newID = func() string { n++; return fmt.Sprintf("o%d", n) }
	return e
}

func (e *env) create(t *testing.T) *Order {
	t.Helper()
	o, err := e.uc.Create(context.Background(), "u1", []Line{{ProductID: "p1", Quantity: 2, UnitPrice: price(150)}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return o
}

func (e *env) order(t *testing.T, id string) *Order {
	t.Helper()
	o, err := e.store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func price(p int64) *int64 { return &p }

// Orders are priced from the catalog: a given unit_price must be the
// catalog's, an unknown product is refused, and a catalog that does not
// answer refuses the order (never the client's price instead); a refused
// order leaves nothing behind.
func TestOrderUsecaseCreate(t *testing.T) {
	tests := []struct {
		name   string
		user   string
		lines  []Line
		down   bool
		total  int64
		reason string // expected error reason, "" for success
	}{
		{"catalog prices", "u1", []Line{{"p1", 2, nil}, {"p2", 1, nil}}, false, 1300, ""},
		{"given prices match", "u1", []Line{{"p1", 2, price(150)}, {"p2", 1, price(1000)}}, false, 1300, ""},
		{"same product twice", "u1", []Line{{"p1", 1, nil}, {"p1", 3, price(150)}}, false, 600, ""},
		{"free item", "u1", []Line{{"p-free", 1, price(0)}}, false, 0, ""},
		{"client sets the price", "u1", []Line{{"p1", 2, price(1)}}, false, 0, ReasonPriceMismatch},
		{"zero price for a priced product", "u1", []Line{{"p1", 1, price(0)}}, false, 0, ReasonPriceMismatch},
		{"unknown product", "u1", []Line{{"p1", 1, nil}, {"p-nope", 1, nil}}, false, 0, ReasonProductNotFound},
		{"catalog down", "u1", []Line{{"p1", 1, nil}}, true, 0, ReasonInventoryDown},
		{"no user", "", []Line{{"p1", 1, nil}}, false, 0, apierr.ReasonInvalidArgument},
		{"no items", "u1", nil, false, 0, apierr.ReasonInvalidArgument},
		{"zero quantity", "u1", []Line{{"p1", 0, nil}}, false, 0, apierr.ReasonInvalidArgument},
		{"negative price", "u1", []Line{{"p1", 1, price(-1)}}, false, 0, apierr.ReasonInvalidArgument},
		{"no product", "u1", []Line{{"", 1, nil}}, false, 0, apierr.ReasonInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.down {
				e.catalog.down = errors.New("inventory unreachable")
			}
			o, err := e.uc.Create(context.Background(), tt.user, tt.lines)
			if tt.reason != "" {
				if kerrors.Reason(err) != tt.reason {
					t.Fatalf("err = %v, want reason %s", err, tt.reason)
				}
				if len(e.store.orders) != 0 || len(e.pub.events) != 0 || len(e.timer.scheduled) != 0 {
					t.Fatal("a rejected order left state behind")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != StatusCreated || o.Seq != 1 || o.Total != tt.total || !o.CancelAt.Equal(e.clock.Add(time.Minute)) {
				t.Fatalf("order = %+v, want total %d", o, tt.total)
			}
			for i, it := range o.Items {
				if it.UnitPrice != e.catalog.prices[it.ProductID] || it.Quantity != tt.lines[i].Quantity {
					t.Fatalf("item %d = %+v, want the catalog's price", i, it)
				}
			}
			if due, ok := e.timer.scheduled[o.CancelTimer]; !ok || !due.Equal(o.CancelAt) {
				t.Fatalf("timer %q not scheduled at %v: %v", o.CancelTimer, o.CancelAt, e.timer.scheduled)
			}
			if got := e.pub.tags(); !slices.Equal(got, []string{eventv1.TagOrderCreated}) {
				t.Fatalf("published %v", got)
			}
			oc := e.pub.events[0].Payload.(*eventv1.OrderCreated)
			if oc.OrderId != o.ID || oc.Seq != 1 || oc.TotalAmount != tt.total || len(oc.Items) != len(tt.lines) {
				t.Fatalf("OrderCreated = %v", oc)
			}
			stored, tl, err := e.uc.Get(context.Background(), o.ID)
			if err != nil || stored.Status != StatusCreated || stored.Total != tt.total || len(tl) != 1 || tl[0].Event != eventv1.TagOrderCreated {
				t.Fatalf("Get = %+v %v %v", stored, tl, err)
			}
		})
	}
}

func TestOrderUsecaseCreateFailures(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(e *env)
		wantRecall bool
	}{
		{"timer unavailable", func(e *env) { e.timer.fail = errors.New("broker down") }, false},
		{"publish fails", func(e *env) { e.pub.fail = errors.New("broker down") }, true},
		{"insert fails", func(e *env) { e.store.failNext = errors.New("db down") }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.setup(e)
			_, err := e.uc.Create(context.Background(), "u1", []Line{{"p1", 1, nil}})
			if kerrors.Reason(err) != ReasonUnavailable {
				t.Fatalf("err = %v, want %s", err, ReasonUnavailable)
			}
			if len(e.store.orders) != 0 || len(e.store.timeline) != 0 || len(e.pub.events) != 0 {
				t.Fatal("failed create left an order or event")
			}
			if got := len(e.timer.recalled) == 1; got != tt.wantRecall {
				t.Fatalf("recalled = %v, want recall %v", e.timer.recalled, tt.wantRecall)
			}
		})
	}
}

func TestOrderUsecaseGetNotFound(t *testing.T) {
	e := newEnv(t)
	if _, _, err := e.uc.Get(context.Background(), "nope"); !kerrors.IsNotFound(err) || kerrors.Reason(err) != ReasonOrderNotFound {
		t.Fatalf("err = %v", err)
	}
	if _, _, err := e.uc.Get(context.Background(), ""); kerrors.Reason(err) != apierr.ReasonInvalidArgument {
		t.Fatalf("err = %v", err)
	}
}

// step applies one event to the order.
type step func(e *env, id string) error

func reserved(seq int64) step {
	return func(e *env, id string) error {
		return e.uc.OnStockReserved(context.Background(), &eventv1.StockReserved{OrderId: id, Seq: seq})
	}
}

func rejected(seq int64) step {
	return func(e *env, id string) error {
		return e.uc.OnStockRejected(context.Background(), &eventv1.StockRejected{OrderId: id, Seq: seq, Reason: "short"})
	}
}

func released(seq int64) step {
	return func(e *env, id string) error {
		return e.uc.OnStockReleased(context.Background(), &eventv1.StockReleased{OrderId: id, Seq: seq})
	}
}

func paid(seq int64, payment string) step {
	return func(e *env, id string) error {
		return e.uc.OnPaymentSucceeded(context.Background(),
			&eventv1.PaymentSucceeded{OrderId: id, Seq: seq, PaymentId: payment, UserId: "u1", Amount: 300})
	}
}

// paidWith is a payment of another amount or by another user than the
// order's (from an older payment service or a bug).
func paidWith(seq int64, payment, user string, amount int64) step {
	return func(e *env, id string) error {
		return e.uc.OnPaymentSucceeded(context.Background(),
			&eventv1.PaymentSucceeded{OrderId: id, Seq: seq, PaymentId: payment, UserId: user, Amount: amount})
	}
}

func refunded(seq int64) step {
	return func(e *env, id string) error {
		return e.uc.OnPaymentRefunded(context.Background(), &eventv1.PaymentRefunded{OrderId: id, Seq: seq, PaymentId: "pay1"})
	}
}

func timeout(after time.Duration) step {
	return func(e *env, id string) error {
		e.clock = e.clock.Add(after)
		return e.uc.CancelIfUnpaid(context.Background(), id)
	}
}

func TestOrderUsecaseTransitions(t *testing.T) {
	tests := []struct {
		name      string
		steps     []step
		status    Status
		reason    string
		published []string // after OrderCreated
		timeline  int      // entries, OrderCreated included
		recalled  int
	}{
		{"reserved", []step{reserved(1)}, StatusReserved, "", nil, 2, 0},
		{"reserved twice", []step{reserved(1), reserved(1)}, StatusReserved, "", nil, 2, 0},
		{"reserved then paid", []step{reserved(1), paid(1, "pay1")}, StatusPaid, "",
			[]string{eventv1.TagOrderPaid}, 4, 1},
		{"paid before reserved", []step{paid(1, "pay1"), reserved(1)}, StatusPaid, "",
			[]string{eventv1.TagOrderPaid}, 4, 1},
		{"payment delivered twice", []step{paid(1, "pay1"), paid(1, "pay1")}, StatusPaid, "",
			[]string{eventv1.TagOrderPaid}, 3, 1},
		{"second payment recorded only", []step{paid(1, "pay1"), paid(2, "pay2")}, StatusPaid, "",
			[]string{eventv1.TagOrderPaid}, 4, 1},
		{"rejected", []step{rejected(1)}, StatusCancelled, CancelStockRejected,
			[]string{eventv1.TagOrderCancelled}, 3, 0},
		{"rejected twice", []step{rejected(1), rejected(1)}, StatusCancelled, CancelStockRejected,
			[]string{eventv1.TagOrderCancelled}, 3, 0},
		{"timeout", []step{reserved(1), timeout(time.Minute)}, StatusCancelled, CancelTimeout,
			[]string{eventv1.TagOrderCancelled}, 3, 0},
		{"timeout fires twice", []step{timeout(time.Minute), timeout(time.Second)}, StatusCancelled, CancelTimeout,
			[]string{eventv1.TagOrderCancelled}, 2, 0},
		{"timeout after payment", []step{paid(1, "pay1"), timeout(time.Hour)}, StatusPaid, "",
			[]string{eventv1.TagOrderPaid}, 3, 1},
		{"payment after timeout", []step{timeout(time.Minute), paid(1, "pay1"), refunded(2)}, StatusCancelled, CancelTimeout,
			[]string{eventv1.TagOrderCancelled}, 4, 0},
		{"underpayment does not pay", []step{reserved(1), paidWith(1, "pay1", "u1", 100)}, StatusReserved, "", nil, 3, 0},
		{"payment by another user does not pay", []step{reserved(1), paidWith(1, "pay1", "u2", 300)}, StatusReserved, "", nil, 3, 0},
		{"mismatched payment, then timeout", []step{paidWith(1, "pay1", "u1", 1), timeout(time.Minute)}, StatusCancelled, CancelTimeout,
			[]string{eventv1.TagOrderCancelled}, 3, 0},
		{"release after cancel", []step{reserved(1), timeout(time.Minute), released(2)}, StatusCancelled, CancelTimeout,
			[]string{eventv1.TagOrderCancelled}, 4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			o := e.create(t)
			for i, s := range tt.steps {
				if err := s(e, o.ID); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			got := e.order(t, o.ID)
			if got.Status != tt.status || got.CancelReason != tt.reason {
				t.Fatalf("status = %s (%q), want %s (%q)", got.Status, got.CancelReason, tt.status, tt.reason)
			}
			want := append([]string{eventv1.TagOrderCreated}, tt.published...)
			if tags := e.pub.tags(); !slices.Equal(tags, want) {
				t.Fatalf("published %v, want %v", tags, want)
			}
			for i, ev := range e.pub.events {
				if ev.Seq != int64(i+1) || ev.Payload.(eventv1.Event).GetSeq() != ev.Seq {
					t.Fatalf("event %d has seq %d / %d", i, ev.Seq, ev.Payload.(eventv1.Event).GetSeq())
				}
			}
			if got.Seq != int64(len(want)) {
				t.Fatalf("order seq = %d, want %d", got.Seq, len(want))
			}
			if tl, _ := e.store.Timeline(context.Background(), o.ID); len(tl) != tt.timeline {
				t.Fatalf("timeline has %d entries, want %d: %+v", len(tl), tt.timeline, tl)
			}
			if len(e.timer.recalled) != tt.recalled {
				t.Fatalf("recalled %v, want %d", e.timer.recalled, tt.recalled)
			}
		})
	}
}

func TestOrderUsecaseCancelIfUnpaid(t *testing.T) {
	tests := []struct {
		name    string
		advance time.Duration
		id      string // "" = the created order
		wantErr error
		status  Status
	}{
		{"before the deadline", 59 * time.Second, "", ErrTooEarly, StatusCreated},
		{"at the deadline", time.Minute, "", nil, StatusCancelled},
		{"unknown order", time.Minute, "missing", nil, StatusCreated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			o := e.create(t)
			id := tt.id
			if id == "" {
				id = o.ID
			}
			e.clock = e.clock.Add(tt.advance)
			if err := e.uc.CancelIfUnpaid(context.Background(), id); !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got := e.order(t, o.ID); got.Status != tt.status {
				t.Fatalf("status %s, want %s", got.Status, tt.status)
			}
		})
	}
}

// TestOrderUsecasePaymentRacesTimeout changes the order between the
// decision and the publishing transaction: the use case starts over and
// the first transition wins.
func TestOrderUsecasePaymentRacesTimeout(t *testing.T) {
	e := newEnv(t)
	o := e.create(t)
	e.clock = e.clock.Add(time.Minute)
	e.pub.beforeRun = func() {
		// The timer cancels the order while the payment is being published.
		p := &publisher{tx: e.store}
		uc := *e.uc
		uc.pub = p
		if err := uc.CancelIfUnpaid(context.Background(), o.ID); err != nil {
			t.Errorf("cancel: %v", err)
		}
	}
	if err := paid(1, "pay1")(e, o.ID); err != nil {
		t.Fatal(err)
	}
	got := e.order(t, o.ID)
	if got.Status != StatusCancelled || got.PaymentID != "" {
		t.Fatalf("order = %+v, want CANCELLED without payment", got)
	}
	if tags := e.pub.tags(); !slices.Equal(tags, []string{eventv1.TagOrderCreated}) {
		t.Fatalf("payment published %v", tags)
	}
	tl, _ := e.store.Timeline(context.Background(), o.ID)
	if last := tl[len(tl)-1]; last.Event != eventv1.TagPaymentSucceeded || last.Status != StatusCancelled {
		t.Fatalf("last timeline entry %+v", last)
	}
}

func TestOrderUsecaseSweepOverdue(t *testing.T) {
	e := newEnv(t)
	a, b := e.create(t), e.create(t)
	if err := paid(1, "pay1")(e, b.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := e.uc.SweepOverdue(context.Background(), 10); err != nil || n != 0 {
		t.Fatalf("early sweep: %d %v", n, err)
	}
	e.clock = e.clock.Add(2 * time.Minute)
	if n, err := e.uc.SweepOverdue(context.Background(), 10); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if got := e.order(t, a.ID); got.Status != StatusCancelled {
		t.Fatalf("a = %s", got.Status)
	}
	if got := e.order(t, b.ID); got.Status != StatusPaid {
		t.Fatalf("b = %s", got.Status)
	}
}

// TestOrderUsecaseTimelineInOrder checks that the timeline lists events in
// the order they happened and that their times agree with that order. The
// clock moves on at every reading, as a real one does while the half
// message is stored: the received PaymentSucceeded must not get a later
// time than the OrderPaid it causes (it used to: OrderPaid kept the time
// taken before the half message was sent).
func TestOrderUsecaseTimelineInOrder(t *testing.T) {
	e := newEnv(t)
	e.uc.now = func() time.Time { e.clock = e.clock.Add(time.Millisecond); return e.clock }
	o := e.create(t)
	for i, s := range []step{reserved(1), paid(1, "pay1")} {
		if err := s(e, o.ID); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	tl, err := e.store.Timeline(context.Background(), o.ID)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for i, en := range tl {
		events = append(events, en.Event)
		if i > 0 && en.At.Before(tl[i-1].At) {
			t.Errorf("%s at %s is before %s at %s", en.Event, en.At.Format(time.StampMilli),
				tl[i-1].Event, tl[i-1].At.Format(time.StampMilli))
		}
	}
	want := []string{eventv1.TagOrderCreated, eventv1.TagStockReserved, eventv1.TagPaymentSucceeded, eventv1.TagOrderPaid}
	if !slices.Equal(events, want) {
		t.Fatalf("timeline %v, want %v", events, want)
	}
}
