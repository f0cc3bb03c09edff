package delay_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/delay"
	"github.com/tidemq/tide/pkg/mqclient/middleware"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/pkg/tidetest"
)

// TestTimersNeverEarly schedules 40 timers at random times within 2 s and
// checks every one arrives, none before its time (consumer clock and
// broker store time).
func TestTimersNeverEarly(t *testing.T) {
	e := startEnv(t, nil)
	topic := e.Topic(t, 2)
	arr := newArrivals()
	e.consumer(t, "g-early", topic, arr.wrap(nil))
	ctx := context.Background()
	const n = 40
	for i := 0; i < n; i++ {
		at := time.Now().Add(300*time.Millisecond + time.Duration(rand.IntN(2000))*time.Millisecond)
		if _, err := e.s.Schedule(ctx, delay.Action{Topic: topic, Key: fmt.Sprintf("k%d", i), At: at}); err != nil {
			t.Fatal(err)
		}
	}
	tidetest.WaitFor(t, 20*time.Second, "all timers", func() bool { return arr.count() == n })
	arr.mu.Lock()
	defer arr.mu.Unlock()
	if len(arr.early) > 0 {
		t.Fatalf("early deliveries:\n%s", strings.Join(arr.early, "\n"))
	}
	var worst time.Duration
	for k, f := range arr.first {
		worst = max(worst, f.Sub(arr.due[k]))
	}
	t.Logf("%d timers, none early, worst lateness %v", n, worst)
}

// TestRecall recalls half of 20 pending timers: those are never delivered
// (a later sentinel proves the others had their chance); a recall after
// firing reports AlreadyFired, a repeated recall Recalled again (the
// broker's recall is idempotent), an unknown handle NotFound.
func TestRecall(t *testing.T) {
	e := startEnv(t, nil)
	topic := e.Topic(t, 2)
	arr := newArrivals()
	e.consumer(t, "g-recall", topic, arr.wrap(nil))
	ctx := context.Background()
	at := time.Now().Add(1500 * time.Millisecond)
	handles := map[string]delay.Handle{}
	for i := 0; i < 20; i++ {
		k := fmt.Sprintf("r%d", i)
		h, err := e.s.Schedule(ctx, delay.Action{Topic: topic, Key: k, At: at.Add(time.Duration(i) * 10 * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		if h.ID() == "" || !h.At().Equal(at.Add(time.Duration(i)*10*time.Millisecond).Truncate(time.Millisecond)) {
			t.Fatalf("handle %q", h)
		}
		handles[k] = h
	}
	if _, err := e.s.Schedule(ctx, delay.Action{Topic: topic, Key: "sentinel", At: at.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i += 2 {
		res, err := e.s.Recall(ctx, handles[fmt.Sprintf("r%d", i)])
		if err != nil || res != delay.Recalled {
			t.Fatalf("recall r%d: %v %v", i, res, err)
		}
	}
	for i := 0; i < 20; i += 2 {
		res, err := e.s.Recall(ctx, handles[fmt.Sprintf("r%d", i)])
		if err != nil || res != delay.Recalled {
			t.Fatalf("repeated recall r%d: %v %v, want recalled", i, res, err)
		}
	}
	tidetest.WaitFor(t, 20*time.Second, "sentinel and unrecalled timers", func() bool {
		if !arr.has("sentinel") {
			return false
		}
		for i := 1; i < 20; i += 2 {
			if !arr.has(fmt.Sprintf("r%d", i)) {
				return false
			}
		}
		return true
	})
	for i := 0; i < 20; i += 2 {
		if arr.has(fmt.Sprintf("r%d", i)) {
			t.Errorf("recalled timer r%d was delivered", i)
		}
	}
	if res, err := e.s.Recall(ctx, handles["r1"]); err != nil || res != delay.AlreadyFired {
		t.Errorf("recall after firing: %v %v, want already-fired", res, err)
	}
	h := handles["r1"]
	bogus := delay.Handle(string(h)[:strings.LastIndex(string(h), "/")+1] + "0123456789ABCDEF0123456789ABCDEF")
	if res, err := e.s.Recall(ctx, bogus); err != nil || res != delay.NotFound {
		t.Errorf("recall of an unknown handle: %v %v, want not-found", res, err)
	}
	if _, err := e.s.Recall(ctx, "nonsense"); !errors.Is(err, delay.ErrBadHandle) {
		t.Errorf("recall of a malformed handle: %v", err)
	}
}

// TestBrokerRestartPendingTimers stops the broker with 30 timers pending
// and starts a new one on the same store directory and port: every timer
// fires afterwards, none early, none lost.
func TestBrokerRestartPendingTimers(t *testing.T) {
	dir := t.TempDir()
	// outside the ephemeral range: while the broker is down, no outgoing
	// connection or listen on port 0 can take its port (testenv.FreePort)
	port := testenv.FreePort(t)
	fixed := func(o *broker.Options) { o.Store.StorePathRootDir = dir; o.ListenPort = port }
	e := startEnv(t, nil, fixed)
	topic := e.Topic(t, 2)
	ctx := context.Background()
	const n = 30
	for i := 0; i < n; i++ {
		at := time.Now().Add(2*time.Second + time.Duration(rand.IntN(1500))*time.Millisecond)
		if _, err := e.s.Schedule(ctx, delay.Action{Topic: topic, Key: fmt.Sprintf("p%d", i), At: at}); err != nil {
			t.Fatal(err)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := e.Broker.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	b2 := brokertest.Start(t, e.NameServer, fixed)
	if b2.Addr() != e.Broker.Addr() {
		t.Fatalf("restarted on %s, was %s", b2.Addr(), e.Broker.Addr())
	}
	arr := newArrivals()
	e.consumer(t, "g-restart", topic, arr.wrap(nil))
	tidetest.WaitFor(t, 30*time.Second, "all timers after the restart", func() bool { return arr.count() == n })
	arr.mu.Lock()
	defer arr.mu.Unlock()
	if len(arr.early) > 0 {
		t.Fatalf("early deliveries:\n%s", strings.Join(arr.early, "\n"))
	}
}

// TestPaymentTimerRace creates 40 orders with deadlines 1.2..2.2 s ahead,
// a cancel timer each (the handle stored with the order), and pays each
// at its deadline ±150 ms. Every firing is duplicated (middleware
// Duplicate). Invariant: each order ends PAID (payment, no stock release,
// no refund) or CANCELLED (exactly one stock release; a payment that came
// after the cancel was refunded once), never UNPAID or both.
func TestPaymentTimerRace(t *testing.T) {
	e := startEnv(t, nil)
	db := openOrders(t)
	topic := e.Topic(t, 4)
	var acted, noops atomic.Int64
	h, err := delay.Handler(db, stillUnpaid, cancelOrder, delay.WithLogger(tidetest.Logger()), delay.OnFire(func(f delay.Fired) {
		if f.Acted {
			acted.Add(1)
		} else if f.Err == nil && !f.Early {
			noops.Add(1)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	arr := newArrivals()
	e.consumer(t, "g-race", topic, arr.wrap(h), mqclient.WithMiddleware(middleware.Duplicate()))
	ctx := context.Background()
	const n = 40
	base := time.Now().Add(1200 * time.Millisecond)
	var wg sync.WaitGroup
	var recalled, lateRecall atomic.Int64
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("o%02d", i)
		deadline := base.Add(time.Duration(i) * 25 * time.Millisecond)
		if err := db.Exec("INSERT INTO orders (id, status, deadline) VALUES (?, 'UNPAID', ?)", id, deadline.UTC()).Error; err != nil {
			t.Fatal(err)
		}
		hd, err := e.s.Schedule(ctx, delay.Action{Topic: topic, Key: id, At: deadline})
		if err != nil {
			t.Fatal(err)
		}
		db.Exec("UPDATE orders SET timer_handle = ? WHERE id = ?", string(hd), id)
		payAt := deadline.Add(time.Duration(rand.IntN(300)-150) * time.Millisecond)
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(payAt))
			paid := false
			err := db.Transaction(func(tx *gorm.DB) error {
				still, err := stillUnpaid(ctx, tx, id)
				if err != nil {
					return err
				}
				if err := tx.Exec("INSERT INTO payments (order_id) VALUES (?)", id).Error; err != nil {
					return err
				}
				if !still { // captured after the cancel: refund
					return tx.Exec("INSERT INTO refunds (order_id) VALUES (?)", id).Error
				}
				paid = true
				return tx.Exec("UPDATE orders SET status = 'PAID' WHERE id = ?", id).Error
			})
			if err != nil {
				t.Errorf("pay %s: %v", id, err)
				return
			}
			if paid {
				switch res, _ := e.s.Recall(ctx, hd); res {
				case delay.Recalled:
					recalled.Add(1)
				case delay.AlreadyFired:
					lateRecall.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	tidetest.WaitFor(t, 20*time.Second, "no unpaid order", func() bool {
		return count(t, db, "SELECT COUNT(*) FROM orders WHERE status = 'UNPAID'") == 0
	})
	// Duplicate firings after the fact stay no-ops.
	for i := 0; i < n; i++ {
		if ok, err := delay.Fire(ctx, db, fmt.Sprintf("o%02d", i), stillUnpaid, cancelOrder); err != nil || ok {
			t.Errorf("late duplicate firing of o%02d: acted %v err %v", i, ok, err)
		}
	}
	paid := count(t, db, "SELECT COUNT(*) FROM orders WHERE status = 'PAID'")
	cancelled := count(t, db, "SELECT COUNT(*) FROM orders WHERE status = 'CANCELLED'")
	if paid+cancelled != n {
		t.Errorf("%d paid + %d cancelled != %d", paid, cancelled, n)
	}
	checks := map[string]string{
		"paid order without payment":            "SELECT COUNT(*) FROM orders o LEFT JOIN payments p ON p.order_id = o.id WHERE o.status = 'PAID' AND p.order_id IS NULL",
		"paid order with stock released":        "SELECT COUNT(*) FROM orders o JOIN stock_releases s ON s.order_id = o.id WHERE o.status = 'PAID'",
		"paid order refunded":                   "SELECT COUNT(*) FROM orders o JOIN refunds r ON r.order_id = o.id WHERE o.status = 'PAID'",
		"cancelled order without stock release": "SELECT COUNT(*) FROM orders o LEFT JOIN stock_releases s ON s.order_id = o.id WHERE o.status = 'CANCELLED' AND s.order_id IS NULL",
		"cancelled order paid and not refunded": "SELECT COUNT(*) FROM orders o JOIN payments p ON p.order_id = o.id LEFT JOIN refunds r ON r.order_id = o.id WHERE o.status = 'CANCELLED' AND r.order_id IS NULL",
		"refund without payment":                "SELECT COUNT(*) FROM refunds r LEFT JOIN payments p ON p.order_id = r.order_id WHERE p.order_id IS NULL",
	}
	for what, q := range checks {
		if c := count(t, db, q); c != 0 {
			t.Errorf("%d x %s", c, what)
		}
	}
	if a := acted.Load(); a != cancelled {
		t.Errorf("handler acted %d times for %d cancelled orders", a, cancelled)
	}
	arr.mu.Lock()
	early := arr.early
	arr.mu.Unlock()
	if len(early) > 0 {
		t.Errorf("early deliveries: %v", early)
	}
	t.Logf("paid %d (recalled %d, recall after firing %d), cancelled %d (refunded %d), no-op firings %d",
		paid, recalled.Load(), lateRecall.Load(), cancelled, count(t, db, "SELECT COUNT(*) FROM refunds"), noops.Load())
}

// TestSweeperBackstop: orders whose timers were never created are
// cancelled by the sweeper through the same Fire path; paid ones are left
// alone; a second sweep does nothing.
func TestSweeperBackstop(t *testing.T) {
	db := openOrders(t)
	past := time.Now().Add(-time.Minute).UTC()
	for i := 0; i < 12; i++ {
		st := "UNPAID"
		if i%4 == 0 {
			st = "PAID"
		}
		db.Exec("INSERT INTO orders (id, status, deadline) VALUES (?, ?, ?)", fmt.Sprintf("s%02d", i), st, past)
	}
	db.Exec("INSERT INTO orders (id, status, deadline) VALUES ('future', 'UNPAID', ?)", time.Now().Add(time.Hour).UTC())
	overdue := func(ctx context.Context, db *gorm.DB, cutoff time.Time, limit int) ([]string, error) {
		var ids []string
		err := db.Raw("SELECT id FROM orders WHERE status = 'UNPAID' AND deadline < ? ORDER BY deadline LIMIT ?", cutoff.UTC(), limit).Scan(&ids).Error
		return ids, err
	}
	sw, err := delay.NewSweeper(db, overdue, stillUnpaid, cancelOrder, delay.WithBatch(4), delay.WithLogger(tidetest.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n, err := sw.SweepOnce(ctx)
	if err != nil || n != 9 {
		t.Fatalf("first sweep acted %d (%v), want 9", n, err)
	}
	if n, err := sw.SweepOnce(ctx); err != nil || n != 0 {
		t.Fatalf("second sweep acted %d (%v), want 0", n, err)
	}
	if c := count(t, db, "SELECT COUNT(*) FROM stock_releases"); c != 9 {
		t.Errorf("%d stock releases, want 9", c)
	}
	if c := count(t, db, "SELECT COUNT(*) FROM orders WHERE status = 'PAID'"); c != 3 {
		t.Errorf("%d paid orders, want 3", c)
	}
	if c := count(t, db, "SELECT COUNT(*) FROM orders WHERE id = 'future' AND status = 'UNPAID'"); c != 1 {
		t.Error("an order not yet due was touched")
	}
	// Run stops with its context.
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sw.Run(rctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// fastLevels are the broker's and the scheduler's delay levels for the
// fallback test.
var fastLevels = []time.Duration{300 * time.Millisecond, 600 * time.Millisecond, time.Second, 2 * time.Second}

func levelString() string {
	var f []string
	for i := 0; i < 18; i++ {
		d := 2 * time.Second
		if i < len(fastLevels) {
			d = fastLevels[i]
		} else {
			d = time.Duration(i) * time.Second
		}
		f = append(f, strconv.FormatInt(d.Milliseconds(), 10)+"ms")
	}
	return strings.Join(f, " ")
}

// TestDelayLevelFallback schedules with delay levels (a broker without
// timers): times are rounded up to the next level, never early; beyond
// the longest level Schedule refuses; level handles cannot be recalled.
func TestDelayLevelFallback(t *testing.T) {
	var levels []time.Duration
	for _, f := range strings.Fields(levelString()) {
		d, _ := time.ParseDuration(f)
		levels = append(levels, d)
	}
	e := startEnv(t, []delay.Option{delay.WithDelayLevels(levels...)}, func(o *broker.Options) { o.Store.MessageDelayLevel = levelString() })
	topic := e.Topic(t, 1)
	arr := newArrivals()
	e.consumer(t, "g-levels", topic, arr.wrap(nil))
	ctx := context.Background()
	var hs []delay.Handle
	for i, d := range []time.Duration{100 * time.Millisecond, 450 * time.Millisecond, 800 * time.Millisecond, 1500 * time.Millisecond} {
		h, err := e.s.Schedule(ctx, delay.Action{Topic: topic, Key: fmt.Sprintf("l%d", i), At: time.Now().Add(d)})
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	if _, err := e.s.Schedule(ctx, delay.Action{Topic: topic, Key: "far", At: time.Now().Add(time.Hour)}); !errors.Is(err, delay.ErrDelayTooLong) {
		t.Errorf("beyond the longest level: %v", err)
	}
	if _, err := e.s.Recall(ctx, hs[0]); !errors.Is(err, delay.ErrNotRecallable) {
		t.Errorf("recall of a level handle: %v", err)
	}
	tidetest.WaitFor(t, 20*time.Second, "level-delayed actions", func() bool { return arr.count() == 4 })
	arr.mu.Lock()
	defer arr.mu.Unlock()
	if len(arr.early) > 0 {
		t.Fatalf("early deliveries:\n%s", strings.Join(arr.early, "\n"))
	}
}

func TestParseHandle(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"t1/broker-a/Topic/3/1700000000000/7F0000010001", true},
		{"l1/broker-a/%RETRY%g/0/1/ID", true},
		{"x1/broker-a/Topic/3/1/ID", false},
		{"t1/broker-a/Topic/-1/1/ID", false},
		{"t1/broker-a/Topic/3/x/ID", false},
		{"t1//Topic/3/1/ID", false},
		{"t1/broker-a/Topic/3/1", false},
		{"", false},
	} {
		h, err := delay.ParseHandle(c.in)
		if (err == nil) != c.ok {
			t.Errorf("ParseHandle(%q): %v", c.in, err)
		}
		if c.ok && (string(h) != c.in || h.ID() == "") {
			t.Errorf("ParseHandle(%q) = %q, id %q", c.in, h, h.ID())
		}
		if !c.ok && !errors.Is(err, delay.ErrBadHandle) {
			t.Errorf("ParseHandle(%q): error %v does not wrap ErrBadHandle", c.in, err)
		}
	}
}

// TestDuplicateFiringIsNoop: Fire for the same key twice acts once.
func TestDuplicateFiringIsNoop(t *testing.T) {
	db := openOrders(t)
	db.Exec("INSERT INTO orders (id, status, deadline) VALUES ('d1', 'UNPAID', ?)", time.Now().UTC())
	ctx := context.Background()
	var wg sync.WaitGroup
	var acts atomic.Int64
	for i := 0; i < 4; i++ { // concurrent firings: one wins
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := delay.Fire(ctx, db, "d1", stillUnpaid, cancelOrder)
			if err != nil {
				t.Error(err)
			}
			if ok {
				acts.Add(1)
			}
		}()
	}
	wg.Wait()
	if acts.Load() != 1 || count(t, db, "SELECT COUNT(*) FROM stock_releases") != 1 {
		t.Fatalf("%d acts, want 1", acts.Load())
	}
}

// TestStartRefusesBrokerWithoutTimers: against a broker without timers
// (Tide with tideExtensions=false, as RocketMQ 4.9) a timer Scheduler
// refuses at Start, naming the broker; one with delay levels starts.
func TestStartRefusesBrokerWithoutTimers(t *testing.T) {
	e := tidetest.Start(t, func(o *broker.Options) { o.TideExtensions = false })
	ctx := context.Background()
	admin := e.Admin
	p, err := mqclient.NewProducer(e.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	p.Start(ctx)
	defer p.Shutdown(ctx)
	s, err := delay.New(p, admin)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); !errors.Is(err, delay.ErrNoTimers) || !strings.Contains(err.Error(), "broker-a") || !strings.Contains(err.Error(), "V4_9_7") {
		t.Fatalf("Start against a broker without timers: %v, want ErrNoTimers naming broker-a (V4_9_7)", err)
	}
	s, err = delay.New(p, admin, delay.WithDelayLevels(time.Second, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start with delay levels: %v", err)
	}
}
