package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Scenarios run in this file's order on the shared stack; each ends with
// checkInvariants over all databases and the broker.

// settle is how long a scenario's invariant check may wait for the system
// to become quiescent: longer than an order's cancellation delay, so
// pending timers have fired.
const settle = cancelAfter + 60*time.Second

// begin returns the stack and a context for one scenario, and registers
// the end-of-scenario cleanup: faults off, then the invariant check.
func begin(t *testing.T, timeout time.Duration) (*stack, context.Context) {
	t.Helper()
	s := need(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		s.clearFaults(cctx)
		if !t.Skipped() {
			checkInvariants(t, s, settle)
		}
	})
	return s, ctx
}

var orderSeq atomic.Int64

// idemKey returns a fresh idempotency key.
func idemKey(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), orderSeq.Add(1))
}

// placeReserved creates an order and waits until inventory reserved it.
func placeReserved(t *testing.T, ctx context.Context, s *stack, user string, items ...item) orderInfo {
	t.Helper()
	o, err := s.createOrder(ctx, user, items...)
	if err != nil {
		t.Fatalf("create order: %v", err)
	}
	if o.Status != "CREATED" && o.Status != "RESERVED" {
		t.Fatalf("new order %s has status %s", o.ID, o.Status)
	}
	o, err = s.waitOrder(ctx, o.ID, "RESERVED", "PAID", "CANCELLED")
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != "RESERVED" {
		t.Fatalf("order %s: %s (%s), want RESERVED", o.ID, o.Status, o.CancelReason)
	}
	return o
}

func apple(n int) item { return item{ProductID: "p-apple", Quantity: n, UnitPrice: 120} }
func pear(n int) item  { return item{ProductID: "p-pear", Quantity: n, UnitPrice: 150} }

// 1. Happy path: order -> stock reserved -> paid -> sold.
func TestHappyPath(t *testing.T) {
	s, ctx := begin(t, 2*time.Minute)
	o := placeReserved(t, ctx, s, "u-alice", apple(2), pear(1))
	if int64(o.TotalAmount) != 2*120+150 {
		t.Fatalf("total %d, want %d", o.TotalAmount, 2*120+150)
	}
	key := idemKey("happy")
	p, err := s.payRetrying(ctx, key, o.ID, "u-alice", int64(o.TotalAmount))
	if err != nil {
		t.Fatalf("pay: %v", err)
	}
	if p.Status != "SUCCEEDED" {
		t.Fatalf("payment %s: %s", p.ID, p.Status)
	}
	// the same request again answers the same payment, debits nothing more
	p2, err := s.pay(ctx, key, o.ID, "u-alice", int64(o.TotalAmount))
	if err != nil || p2.ID != p.ID {
		t.Fatalf("replay with the same key: %+v, %v; want payment %s", p2, err, p.ID)
	}
	if _, err := s.waitOrder(ctx, o.ID, "PAID"); err != nil {
		t.Fatal(err)
	}
	_, tl, err := s.getOrder(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range tl {
		seen[e.Event] = true
	}
	for _, e := range []string{"OrderCreated", "StockReserved", "PaymentSucceeded", "OrderPaid"} {
		if !seen[e] {
			t.Errorf("timeline of %s lacks %s: %+v", o.ID, e, tl)
		}
	}
}

// 2. An unpaid order is cancelled when its deadline passes, never before,
// and its stock is released.
func TestUnpaidOrderCancelledOnTime(t *testing.T) {
	s, ctx := begin(t, 2*time.Minute)
	o := placeReserved(t, ctx, s, "u-bob", apple(3))
	if o.CancelAt.IsZero() {
		t.Fatalf("order %s has no cancelAt", o.ID)
	}
	// before the deadline it must stay RESERVED
	for time.Until(o.CancelAt) > 500*time.Millisecond {
		cur, _, err := s.getOrder(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.Status != "RESERVED" {
			t.Fatalf("order %s is %s %s before its deadline %s", o.ID, cur.Status, time.Until(o.CancelAt), o.CancelAt)
		}
		time.Sleep(250 * time.Millisecond)
	}
	c, err := s.waitOrder(ctx, o.ID, "CANCELLED", "PAID")
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != "CANCELLED" {
		t.Fatalf("order %s: %s, want CANCELLED", o.ID, c.Status)
	}
	_, tl, err := s.getOrder(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tl {
		if e.Event == "OrderCancelled" {
			if e.At.Before(o.CancelAt) {
				t.Errorf("cancelled at %s, before the deadline %s", e.At, o.CancelAt)
			}
			late := e.At.Sub(o.CancelAt)
			t.Logf("cancelled %s after the deadline", late.Round(time.Millisecond))
			if late > 15*time.Second {
				t.Errorf("cancelled %s after the deadline (want within 15s)", late)
			}
		}
	}
}

// 3. A payment that arrives after the order was cancelled is refunded,
// exactly once. The payment is sent the moment the order turns CANCELLED,
// racing the payment service's own view of the cancellation; a payment it
// refuses outright (ORDER_CANCELLED) is fine too, but at least one attempt
// must hit the window where the debit happens and is then refunded.
func TestPaymentAfterCancellationRefunded(t *testing.T) {
	s, ctx := begin(t, 3*time.Minute)

	// 1. Deterministic race: the payment's local transaction is held open
	// (slow_local_tx) across the order's deadline, so the order is
	// cancelled while the debit is in flight. The payment commits (it
	// checked before the cancellation existed); the payment service's
	// OrderCancelled handler waits for it on the order's lock row and then
	// refunds it, once.
	raced := placeReserved(t, ctx, s, "u-carol", pear(1))
	if wait := time.Until(raced.CancelAt) - 1500*time.Millisecond; wait > 0 {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(wait):
		}
	}
	s.setFault(t, ctx, "payment", "slow_local_tx", 1, 5*time.Second)
	p, err := s.payRetrying(ctx, idemKey("late-raced"), raced.ID, "u-carol", int64(raced.TotalAmount))
	switch {
	case reasonOf(err) == "ORDER_CANCELLED":
		t.Fatalf("payment for %s refused: the order was cancelled before the held transaction checked it (deadline %s)", raced.ID, raced.CancelAt)
	case err != nil:
		t.Fatalf("payment for %s: %v", raced.ID, err)
	}
	t.Logf("payment %s committed %s while order %s was being cancelled", p.ID, p.Status, raced.ID)
	if _, err := s.waitOrder(ctx, raced.ID, "CANCELLED"); err != nil {
		t.Fatal(err)
	}
	if err := s.waitPayment(ctx, p.ID, "REFUNDED"); err != nil {
		t.Fatal(err)
	}

	// 2. Plain late payment: the order is already cancelled when it
	// arrives; it is refused (nothing debited) or, if it slipped in before
	// the payment service learned of the cancellation, refunded.
	late := placeReserved(t, ctx, s, "u-carol", pear(1))
	if _, err := s.waitOrder(ctx, late.ID, "CANCELLED"); err != nil {
		t.Fatal(err)
	}
	p, err = s.payRetrying(ctx, idemKey("late-plain"), late.ID, "u-carol", int64(late.TotalAmount))
	switch {
	case reasonOf(err) == "ORDER_CANCELLED":
		t.Logf("late payment for cancelled order %s refused", late.ID)
	case err != nil:
		t.Fatalf("late payment for %s: %v", late.ID, err)
	default:
		if err := s.waitPayment(ctx, p.ID, "REFUNDED"); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *stack) waitPayment(ctx context.Context, id, want string) error {
	var last paymentInfo
	for {
		var out struct {
			Payment paymentInfo `json:"payment"`
		}
		err := s.call(ctx, "payment", http.MethodGet, "/v1/payments/"+id, nil, nil, &out)
		if err == nil {
			last = out.Payment
			if short(last.Status) == want {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("payment %s: %s, want %s: %w", id, last.Status, want, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// 4. The payment service dies after its local commit and before
// END_TRANSACTION: the broker's check-back commits the half message, the
// order is paid once, and retrying the request answers the same payment.
func TestPaymentCrashAfterCommit(t *testing.T) {
	s, ctx := begin(t, 3*time.Minute)
	o := placeReserved(t, ctx, s, "u-alice", apple(1))
	before, _ := s.restarts(ctx, "payment")
	s.setFault(t, ctx, "payment", "crash_after_commit", 1, 0)
	key := idemKey("crash-after")
	_, err := s.pay(ctx, key, o.ID, "u-alice", int64(o.TotalAmount))
	if err == nil {
		t.Fatal("payment answered although crash_after_commit was armed")
	}
	t.Logf("payment request ended with: %v", err)
	waitRestarted(t, ctx, s, "payment", before)
	p, err := s.payRetrying(ctx, key, o.ID, "u-alice", int64(o.TotalAmount))
	if err != nil {
		t.Fatalf("retry with the same key: %v", err)
	}
	if p.Status != "SUCCEEDED" {
		t.Fatalf("payment after restart: %+v", p)
	}
	if _, err := s.waitOrder(ctx, o.ID, "PAID"); err != nil {
		t.Fatal(err)
	}
}

// 5. The payment service dies inside its local transaction, before the
// commit: the debit rolls back, the check-back rolls the half message
// back, and the order, never paid, is cancelled on time.
func TestPaymentCrashBeforeCommit(t *testing.T) {
	s, ctx := begin(t, 3*time.Minute)
	o := placeReserved(t, ctx, s, "u-bob", pear(2))
	before, _ := s.restarts(ctx, "payment")
	s.setFault(t, ctx, "payment", "crash_before_commit", 1, 0)
	if _, err := s.pay(ctx, idemKey("crash-before"), o.ID, "u-bob", int64(o.TotalAmount)); err == nil {
		t.Fatal("payment answered although crash_before_commit was armed")
	}
	waitRestarted(t, ctx, s, "payment", before)
	c, err := s.waitOrder(ctx, o.ID, "CANCELLED", "PAID")
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != "CANCELLED" {
		t.Fatalf("order %s: %s, want CANCELLED (the payment never committed)", o.ID, c.Status)
	}
	// The simulated gateway is an external system: it may have captured
	// before our transaction died. The "payments" reconciliation job is
	// the designed remedy; run it as its schedule would.
	time.Sleep(6 * time.Second) // PAYMENT_RECONCILE_GRACE=5s: younger records are in flight
	// A payment made at the deadline can commit just before the order is
	// cancelled; the payment service's OrderCancelled consumer refunds it,
	// seconds later under load. (25 s were seen while that consumer was
	// orderly: a crashed process's queue locks held its successor off
	// until the broker expired them; it consumes concurrently now.) Let
	// the system converge by itself first: the job must find nothing of
	// that kind afterwards.
	waitLateRefunds(t, ctx, s, 90*time.Second)
	r := s.reconcile(t, ctx, "payment", "payments", false)
	for _, d := range r.Discrepancies {
		t.Logf("payments job: %s %s repair=%v", d.Class, d.Key, d.Repair)
	}
	t.Logf("payments job repaired %d", r.Repaired)
}

func waitRestarted(t *testing.T, ctx context.Context, s *stack, name string, before int) {
	t.Helper()
	for {
		n, err := s.restarts(ctx, name)
		if err == nil && n > before {
			t.Logf("%s crashed and was restarted (restart %d)", name, n)
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not crash and restart: %v", name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	s.invalidate(name)
	for {
		err := s.call(ctx, name, http.MethodGet, "/readyz", nil, nil, nil)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s not ready after restart: %v", name, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// runOrders places n orders concurrently (workers at a time) and pays each
// as soon as it is reserved; it returns the ids. Orders may end either
// way: the invariants judge them.
func runOrders(t *testing.T, ctx context.Context, s *stack, n, workers int, pay func(i int) bool) []string {
	t.Helper()
	users := []string{"u-alice", "u-bob", "u-carol"}
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	var failed atomic.Int32
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			user := users[i%len(users)]
			o, err := s.createOrder(ctx, user, apple(1+i%3), pear(1))
			if err != nil {
				failed.Add(1)
				t.Errorf("order %d: %v", i, err)
				return
			}
			ids[i] = o.ID
			if pay != nil && !pay(i) {
				return
			}
			o, err = s.waitOrder(ctx, o.ID, "RESERVED", "CANCELLED", "PAID")
			if err != nil || o.Status != "RESERVED" {
				return
			}
			_, err = s.payRetrying(ctx, idemKey("run"), o.ID, user, int64(o.TotalAmount))
			if err != nil && reasonOf(err) != "ORDER_CANCELLED" {
				t.Errorf("pay %s: %v", o.ID, err)
			}
		}()
	}
	wg.Wait()
	return ids
}

// 6. Every message is delivered twice (each service publishes each event
// twice, with a new message id and the same business key): effects still
// apply once.
func TestEveryMessageDeliveredTwice(t *testing.T) {
	s, ctx := begin(t, 3*time.Minute)
	for _, svc := range []string{"order", "inventory", "payment"} {
		s.setFault(t, ctx, svc, "deliver_twice", 0, 0)
	}
	ids := runOrders(t, ctx, s, 12, 4, nil)
	for _, id := range ids {
		if id != "" {
			if _, err := s.waitOrder(ctx, id, "PAID", "CANCELLED"); err != nil {
				t.Error(err)
			}
		}
	}
}

// 7. A consumer dies after its effect committed and before the ack (in
// the middle of a batch of concurrent orders) and restarts: the broker
// redelivers, the effect is not applied again.
func TestConsumerKilledMidBatch(t *testing.T) {
	s, ctx := begin(t, 3*time.Minute)
	before, _ := s.restarts(ctx, "inventory")
	s.setFault(t, ctx, "inventory", "crash_after_effect", 1, 0)
	ids := runOrders(t, ctx, s, 10, 10, nil)
	waitRestarted(t, ctx, s, "inventory", before)
	for _, id := range ids {
		if id != "" {
			if _, err := s.waitOrder(ctx, id, "PAID", "CANCELLED"); err != nil {
				t.Error(err)
			}
		}
	}
}

// 8. Per-order ordering holds while consumers are scaled up (a second
// inventory and a second order instance join their groups) and down again
// during a stream of concurrent orders. The invariant check verifies that
// every order's events were applied in sequence order.
func TestOrderingWhileScaling(t *testing.T) {
	s, ctx := begin(t, 4*time.Minute)
	var wg sync.WaitGroup
	var ids []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		ids = runOrders(t, ctx, s, 40, 6, nil)
	}()
	for _, svc := range []string{"inventory", "order"} {
		name := svc + "-2"
		if err := s.startService(ctx, name, svc); err != nil {
			t.Fatalf("scale up %s: %v", svc, err)
		}
		t.Logf("scaled up: %s joined", name)
	}
	time.Sleep(3 * time.Second) // let a rebalance happen mid-stream
	for _, name := range []string{"inventory-2", "order-2"} {
		if err := s.stop(ctx, name, 10*time.Second); err != nil {
			t.Errorf("scale down %s: %v", name, err)
		}
		t.Logf("scaled down: %s stopped", name)
	}
	wg.Wait()
	for _, name := range []string{"inventory-2", "order-2"} {
		_ = s.remove(ctx, name)
	}
	for _, id := range ids {
		if id != "" {
			if _, err := s.waitOrder(ctx, id, "PAID", "CANCELLED"); err != nil {
				t.Error(err)
			}
		}
	}
}

// 9. The broker master is killed right after it acknowledged a burst of
// orders' events: what it acknowledged was replicated (SYNC_MASTER) and is
// not lost; consumers read from the slave where they can, and after the
// master restarts every order completes. (Inventory stays up: orders are
// priced from its catalog at creation, so it can no longer be stopped to
// park the events in the broker; some may be consumed before the kill.)
func TestBrokerMasterKilledAndRestarted(t *testing.T) {
	s, ctx := begin(t, 4*time.Minute)
	if s.mode != modeMasterSlave {
		t.Skip("controller mode: TestBrokerMasterFailover kills the master (E2E_BROKER_MODE=masterslave runs this 4.x scenario)")
	}
	// whatever happens, leave the broker and inventory running for the
	// next scenarios (runs before begin's invariant check)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, n := range []string{"broker-a", "inventory"} {
			if !s.running(cctx, n) {
				if err := s.start(cctx, n); err != nil {
					t.Errorf("restart %s: %v", n, err)
				}
			}
		}
	})
	var ids []string
	for i := range 5 {
		o, err := s.createOrder(ctx, "u-alice", apple(1+i))
		if err != nil {
			t.Fatalf("create order: %v", err)
		}
		ids = append(ids, o.ID)
	}
	t.Logf("%d orders acknowledged; killing broker-a (master)", len(ids))
	if err := s.kill(ctx, "broker-a"); err != nil {
		t.Fatal(err)
	}
	// the slave holds the acknowledged messages; give consumers a while
	// to read them there (ordered consumers need the master's queue locks,
	// so progress here is reported, not required)
	deadline := time.Now().Add(10 * time.Second)
	reserved := 0
	for time.Now().Before(deadline) && reserved < len(ids) {
		reserved = s.countReservations(ctx, ids)
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("with the master down, inventory reserved %d of %d orders from the slave", reserved, len(ids))
	if err := s.start(ctx, "broker-a"); err != nil {
		t.Fatalf("restart broker-a: %v", err)
	}
	t.Log("broker-a restarted")
	for _, id := range ids {
		o, err := s.waitOrder(ctx, id, "RESERVED", "CANCELLED")
		if err != nil {
			t.Error(err)
			continue
		}
		if o.Status == "RESERVED" {
			if _, err := s.payRetrying(ctx, idemKey("failover"), id, "u-alice", int64(o.TotalAmount)); err != nil && reasonOf(err) != "ORDER_CANCELLED" {
				t.Errorf("pay %s: %v", id, err)
			}
		}
	}
}

func (s *stack) countReservations(ctx context.Context, ids []string) int {
	db, err := s.db(ctx, "tide_inventory")
	if err != nil {
		return 0
	}
	n := 0
	for _, id := range ids {
		var st string
		if db.QueryRowContext(ctx, "SELECT status FROM reservations WHERE order_id = ?", id).Scan(&st) == nil {
			n++
		}
	}
	return n
}

// 10. Redis is stopped: the database dedup records still make every
// effect apply once (orders flow with duplicate deliveries on), and the
// system carries on when Redis returns.
func TestRedisStopped(t *testing.T) {
	s, ctx := begin(t, 3*time.Minute)
	if err := s.stop(ctx, "redis", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Log("redis stopped")
	t.Cleanup(func() { // runs before begin's invariant check
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if !s.running(cctx, "redis") {
			if err := s.start(cctx, "redis"); err != nil {
				t.Errorf("restart redis: %v", err)
			}
		}
	})
	// duplicates make the database dedup do the work Redis would have
	// short-cut; optional, so the scenario runs without fault switches too
	for _, svc := range []string{"order", "inventory", "payment"} {
		if err := s.armFault(t, ctx, svc, "deliver_twice", 0, 0); err != nil {
			t.Logf("without duplicates: %v", err)
		}
	}
	ids := runOrders(t, ctx, s, 8, 4, nil)
	for _, id := range ids {
		if id != "" {
			if _, err := s.waitOrder(ctx, id, "PAID", "CANCELLED"); err != nil {
				t.Error(err)
			}
		}
	}
	if err := s.start(ctx, "redis"); err != nil {
		t.Fatalf("restart redis: %v", err)
	}
	t.Log("redis back")
	o := placeReserved(t, ctx, s, "u-bob", apple(1))
	if _, err := s.payRetrying(ctx, idemKey("redis-back"), o.ID, "u-bob", int64(o.TotalAmount)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.waitOrder(ctx, o.ID, "PAID"); err != nil {
		t.Fatal(err)
	}
}

// 11. Reconciliation finds and repairs a discrepancy injected behind the
// system's back: a cancelled order's released reservation is put back to
// RESERVED with its units moved from available to reserved (stock leaks
// into a reservation no live order holds). A dry run reports it, a real
// run repairs it, and a second run finds nothing new.
func TestReconciliationRepairsDiscrepancy(t *testing.T) {
	s, ctx := begin(t, 3*time.Minute)
	// an order that ends cancelled: nobody pays it
	o, err := s.createOrder(ctx, "u-bob", apple(2))
	if err != nil {
		t.Fatal(err)
	}
	// first check the job exists before waiting for the cancellation
	s.reconcile(t, ctx, "inventory", "reservations", true)
	if c, err := s.waitOrder(ctx, o.ID, "CANCELLED", "PAID"); err != nil || c.Status != "CANCELLED" {
		t.Fatalf("order %s: %+v, %v; want CANCELLED", o.ID, c, err)
	}
	db, err := s.db(ctx, "tide_inventory")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "reservation released", func() bool {
		var st string
		return db.QueryRowContext(ctx, "SELECT status FROM reservations WHERE order_id = ?", o.ID).Scan(&st) == nil && st == "RELEASED"
	})
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// backdated past the job's min_age (2s here), which treats younger
	// changes as in flight
	_, err1 := tx.ExecContext(ctx, "UPDATE reservations SET status = 'RESERVED', updated_at = UTC_TIMESTAMP(6) - INTERVAL 1 MINUTE WHERE order_id = ?", o.ID)
	_, err2 := tx.ExecContext(ctx, "UPDATE products SET available = available - 2, reserved = reserved + 2 WHERE id = 'p-apple'")
	if err := errors.Join(err1, err2, tx.Commit()); err != nil {
		t.Fatalf("inject: %v", err)
	}
	t.Logf("injected: reservation of cancelled order %s back to RESERVED, 2 p-apple moved to reserved", o.ID)

	dry := s.reconcile(t, ctx, "inventory", "reservations", true)
	found := false
	for _, d := range dry.Discrepancies {
		if d.Key == o.ID {
			found = true
			t.Logf("dry run found: %s %s evidence=%v repair=%v", d.Class, d.Key, d.Evidence, d.Repair)
		}
	}
	if !found || dry.Repaired != 0 {
		t.Fatalf("dry run: %+v; want a discrepancy for %s and no repair", dry, o.ID)
	}
	run := s.reconcile(t, ctx, "inventory", "reservations", false)
	if run.Repaired < 1 {
		t.Fatalf("run: %+v; want at least one repair", run)
	}
	again := s.reconcile(t, ctx, "inventory", "reservations", false)
	for _, d := range again.Discrepancies {
		if d.Key == o.ID {
			t.Errorf("second run still reports %s: %+v", o.ID, d)
		}
	}
	if again.Repaired != 0 {
		t.Errorf("second run repaired %d more", again.Repaired)
	}
}

func waitFor(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// 12. A few hundred concurrent orders while faults fire at random: every
// message delivered twice, consumers crashing after their effects, the
// payment service crashing around its commit, payments that come late,
// twice, or never.
func TestConcurrentOrdersWithRandomFaults(t *testing.T) {
	s, ctx := begin(t, 8*time.Minute)
	n := 200
	if testing.Short() {
		n = 50
	}
	for _, svc := range []string{"order", "inventory", "payment"} {
		s.setFault(t, ctx, svc, "deliver_twice", 0, 0)
	}
	s.setFault(t, ctx, "inventory", "crash_after_effect", 1, 0)
	s.setFault(t, ctx, "order", "crash_after_effect", 1, 0)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 42))
	var rmu sync.Mutex
	chance := func(p float64) bool { rmu.Lock(); defer rmu.Unlock(); return rng.Float64() < p }
	// arm payment crashes a few times during the run
	stop := make(chan struct{})
	var armer sync.WaitGroup
	armer.Add(1)
	go func() {
		defer armer.Done()
		faults := []string{"crash_after_commit", "crash_before_commit"}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(8 * time.Second):
			}
			_ = s.call(ctx, "payment", http.MethodPut, "/v1/faults/"+faults[i%2], nil, map[string]any{"enabled": true, "count": 1}, nil)
		}
	}()

	users := []string{"u-alice", "u-bob", "u-carol"}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	var created, paid, unpaid atomic.Int32
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			user := users[i%len(users)]
			o, err := s.createOrder(ctx, user, apple(1+i%2), pear(1+i%3))
			if err != nil {
				t.Errorf("order %d: %v", i, err)
				return
			}
			created.Add(1)
			if chance(0.15) {
				unpaid.Add(1)
				return // never paid: cancelled by its timer
			}
			o, err = s.waitOrder(ctx, o.ID, "RESERVED", "CANCELLED", "PAID")
			if err != nil || o.Status != "RESERVED" {
				return
			}
			if chance(0.1) {
				time.Sleep(time.Until(o.CancelAt) - 300*time.Millisecond) // pay at the deadline
			}
			key := idemKey("rand")
			_, err = s.payRetrying(ctx, key, o.ID, user, int64(o.TotalAmount))
			if err == nil {
				paid.Add(1)
			}
			if chance(0.2) { // the same payment again, and one with a new key
				_, _ = s.payRetrying(ctx, key, o.ID, user, int64(o.TotalAmount))
				_, _ = s.payRetrying(ctx, idemKey("dup"), o.ID, user, int64(o.TotalAmount))
			}
		}()
	}
	wg.Wait()
	close(stop)
	armer.Wait()
	t.Logf("%d orders created, %d payments accepted, %d left unpaid on purpose", created.Load(), paid.Load(), unpaid.Load())
	// crash_before_commit can leave a gateway capture behind whose local
	// transaction rolled back (the gateway is external): the "payments"
	// job repairs that, as its schedule would. Any other class of
	// discrepancy means the system itself got something wrong.
	time.Sleep(6 * time.Second) // PAYMENT_RECONCILE_GRACE=5s: younger records are in flight
	// A payment made at the deadline can commit just before the order is
	// cancelled; the payment service's OrderCancelled consumer refunds it,
	// seconds later under load. (25 s were seen while that consumer was
	// orderly: a crashed process's queue locks held its successor off
	// until the broker expired them; it consumes concurrently now.) Let
	// the system converge by itself first: the job must find nothing of
	// that kind afterwards.
	waitLateRefunds(t, ctx, s, 90*time.Second)
	r := s.reconcile(t, ctx, "payment", "payments", false)
	for _, d := range r.Discrepancies {
		if d.Class == "missing_ours" {
			t.Logf("payments job: %s %s repair=%v (capture left by crash_before_commit)", d.Class, d.Key, d.Repair)
		} else {
			t.Errorf("payments job found %s %s evidence=%v repair=%v", d.Class, d.Key, d.Evidence, d.Repair)
		}
	}
}

// waitLateRefunds waits until no CANCELLED order has a SUCCEEDED payment
// (a late payment refunded by the OrderCancelled consumer), or logs how
// many remain at the deadline (the reconciliation check then fails on them).
func waitLateRefunds(t *testing.T, ctx context.Context, s *stack, limit time.Duration) {
	t.Helper()
	db, err := s.db(ctx, "tide_payment")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(limit)
	for {
		var n int
		err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM tide_payment.payments p JOIN tide_order.orders o ON o.id = p.order_id
			WHERE p.status = 'SUCCEEDED' AND o.status = 'CANCELLED'`).Scan(&n)
		if err == nil && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Logf("after %v: %d late payments not refunded yet (err %v)", limit, n, err)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}
