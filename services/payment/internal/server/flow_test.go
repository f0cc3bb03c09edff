package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/kit/reconcile"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/fault"
)

// payAsync pays through the use case on its own goroutine (a crash fault
// ends that goroutine) and returns a channel closed when it is gone. Like
// pay, it places the order at the fake order service unless it exists.
func (s *stack) payAsync(key, order, user string, amount int64) <-chan struct{} {
	s.orders.ensure(order, user, amount)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.uc.CreatePayment(context.Background(), &biz.CreateRequest{IdempotencyKey: key, OrderID: order, UserID: user, Amount: amount})
	}()
	return done
}

func (s *stack) wantExit(t *testing.T) {
	t.Helper()
	select {
	case code := <-s.exits:
		if code != fault.ExitCode {
			t.Fatalf("exit code %d, want %d", code, fault.ExitCode)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the crash fault did not fire")
	}
}

// Crash after the local commit, before END_TRANSACTION: the broker's
// check-back finds the fence row and commits; the event is delivered
// exactly once, and a retry with the same key answers with the payment
// without a second debit.
func TestFlowCrashAfterCommit(t *testing.T) {
	s := startStack(t)
	if err := s.faults.Arm(fault.CrashAfterCommit, 1, 0); err != nil {
		t.Fatal(err)
	}
	before := balance(t, s, "u-bob")
	<-s.payAsync("crash-1", "oc1", "u-bob", 700)
	s.wantExit(t)
	waitFor(t, "PaymentSucceeded through the check-back", func() bool { return s.events.n(eventv1.TagPaymentSucceeded, "oc1") == 1 })
	if got := before - balance(t, s, "u-bob"); got != 700 {
		t.Fatalf("debited %d, want 700", got)
	}
	r := s.pay(t, "crash-1", "oc1", "u-bob", 700)
	if r.status != 200 || before-balance(t, s, "u-bob") != 700 {
		t.Fatalf("retry: %d %s", r.status, r.raw)
	}
	// A later event of another order arrives; still one for oc1.
	if r := s.pay(t, "after-1", "oc2", "u-bob", 1); r.status != 200 {
		t.Fatalf("next payment: %d %s", r.status, r.raw)
	}
	waitFor(t, "next event", func() bool { return s.events.n(eventv1.TagPaymentSucceeded, "oc2") == 1 })
	if n := s.events.n(eventv1.TagPaymentSucceeded, "oc1"); n != 1 {
		t.Fatalf("%d PaymentSucceeded for oc1, want 1", n)
	}
}

// Crash inside the local transaction: the debit rolls back, the
// check-back fences the key and rolls the half message back, no event;
// the retry with the same key pays once.
func TestFlowCrashBeforeCommit(t *testing.T) {
	s := startStack(t)
	if err := s.faults.Arm(fault.CrashBeforeCommit, 1, 0); err != nil {
		t.Fatal(err)
	}
	before := balance(t, s, "u-carol")
	<-s.payAsync("crash-2", "ob1", "u-carol", 300)
	s.wantExit(t)
	if got := balance(t, s, "u-carol"); got != before {
		t.Fatalf("balance %d after the crash, want %d (rolled back)", got, before)
	}
	if p := s.payment(t, biz.PaymentID("crash-2")); p != nil {
		t.Fatalf("payment %+v survived the rollback", p)
	}
	// The check-back rolls the half message back: the fence holds a
	// rolled_back row for the attempt.
	waitFor(t, "check-back rollback", func() bool {
		var n int64
		s.d.Gorm().Raw("SELECT COUNT(*) FROM tide_tx_fence WHERE tx_key LIKE ? AND status = 'rolled_back'", "PaymentSucceeded:"+biz.PaymentID("crash-2")+":%").Scan(&n)
		return n == 1
	})
	if r := s.pay(t, "crash-2", "ob1", "u-carol", 300); r.status != 200 {
		t.Fatalf("retry: %d %s", r.status, r.raw)
	}
	waitFor(t, "PaymentSucceeded of the retry", func() bool { return s.events.n(eventv1.TagPaymentSucceeded, "ob1") == 1 })
	if got := before - balance(t, s, "u-carol"); got != 300 {
		t.Fatalf("debited %d, want 300 once", got)
	}
}

// Crash after the consumer's effect, before the ack: the redelivery is
// a duplicate (dedup record) and the refund happened once.
func TestFlowCrashAfterEffect(t *testing.T) {
	s := startStack(t)
	before := balance(t, s, "u-alice")
	if r := s.pay(t, "eff-1", "oe1", "u-alice", 900); r.status != 200 {
		t.Fatalf("pay: %d %s", r.status, r.raw)
	}
	// A crash in a consumer is simulated by a panic (recovered into a
	// failed delivery: no ack, redelivered), not Goexit, which would end
	// the consumer's worker goroutine.
	s.panicOnCrash.Store(true)
	if r := s.do(t, "PUT", "/v1/faults/crash_after_effect", map[string]any{"enabled": true, "count": 1}, nil); r.status != 200 {
		t.Fatalf("arm: %d %s", r.status, r.raw)
	}
	s.cancelOrder(t, "oe1")
	s.wantExit(t)
	waitFor(t, "refund", func() bool {
		p := s.payment(t, biz.PaymentID("eff-1"))
		return p != nil && p.Status == biz.StatusRefunded
	})
	waitFor(t, "PaymentRefunded", func() bool { return s.events.n(eventv1.TagPaymentRefunded, "oe1") == 1 })
	if got := balance(t, s, "u-alice"); got != before {
		t.Fatalf("balance %d, want %d (refunded once)", got, before)
	}
}

// deliver_twice sends a second copy (new msg id, same keys) of each
// published event.
func TestFlowDeliverTwice(t *testing.T) {
	s := startStack(t)
	if r := s.do(t, "PUT", "/v1/faults/deliver_twice", map[string]any{"enabled": true, "count": 1}, nil); r.status != 200 {
		t.Fatalf("arm: %d %s", r.status, r.raw)
	}
	if r := s.pay(t, "twice-1", "ot1", "u-alice", 5); r.status != 200 {
		t.Fatalf("pay: %d %s", r.status, r.raw)
	}
	waitFor(t, "two copies", func() bool { return s.events.n(eventv1.TagPaymentSucceeded, "ot1") == 2 })
	s.events.mu.Lock()
	ids := s.events.ids[eventv1.TagPaymentSucceeded+"/ot1"]
	s.events.mu.Unlock()
	if ids[0] == ids[1] {
		t.Fatalf("copies share msg id %s", ids[0])
	}
}

// The runtime fault switches (contract.md).
func TestFaultsAPI(t *testing.T) {
	s := startStack(t)
	type state struct {
		Faults []fault.Status `json:"faults"`
	}
	get := func(r apiResult) map[string]fault.Status {
		var st state
		if err := json.Unmarshal([]byte(r.raw), &st); err != nil {
			t.Fatalf("%s: %v", r.raw, err)
		}
		out := map[string]fault.Status{}
		for _, f := range st.Faults {
			out[f.Name] = f
		}
		return out
	}
	if all := get(s.do(t, "GET", "/v1/faults", nil, nil)); len(all) != len(fault.Names) || all[fault.SlowLocalTx].Enabled {
		t.Fatalf("GET = %v", all)
	}
	tests := []struct {
		name, fault string
		body        map[string]any
		status      int
		want        fault.Status
	}{
		{"count", fault.CrashAfterCommit, map[string]any{"enabled": true, "count": 2}, 200, fault.Status{Name: fault.CrashAfterCommit, Enabled: true, Remaining: 2, Delay: "0s"}},
		{"delay", fault.SlowLocalTx, map[string]any{"enabled": true, "delay": "3s"}, 200, fault.Status{Name: fault.SlowLocalTx, Enabled: true, Delay: "3s"}},
		{"off", fault.SlowLocalTx, map[string]any{"enabled": false}, 200, fault.Status{Name: fault.SlowLocalTx, Delay: "0s"}},
		{"unknown", "nope", map[string]any{"enabled": true}, 404, fault.Status{}},
		{"bad delay", fault.SlowLocalTx, map[string]any{"enabled": true, "delay": "soon"}, 400, fault.Status{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.do(t, "PUT", "/v1/faults/"+tt.fault, tt.body, nil)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.raw)
			}
			if tt.status == 200 {
				if got := get(r)[tt.fault]; got != tt.want {
					t.Fatalf("state %+v, want %+v", got, tt.want)
				}
			}
		})
	}
	for _, f := range get(s.do(t, "DELETE", "/v1/faults", nil, nil)) {
		if f.Enabled {
			t.Fatalf("%s still on after DELETE", f.Name)
		}
	}
}

// Reconciliation finds injected discrepancies (a capture unknown to us, a
// double capture, a paid payment whose order is not paid, a paid payment
// of a cancelled order), a dry run changes nothing, a run repairs them
// through the idempotent flows, and a second run changes nothing.
func TestFlowReconcilePayments(t *testing.T) {
	s := startStack(t)
	ctx := context.Background()
	// Captured at the gateway, then a timeout: we rolled back.
	s.faults.Arm(fault.GatewayTimeoutAfterCapture, 1, 0)
	if r := s.pay(t, "r-timeout", "or1", "u-alice", 11); r.status != 504 {
		t.Fatalf("timeout payment: %d %s", r.status, r.raw)
	}
	// Double capture.
	s.faults.Arm(fault.GatewayDuplicateCallback, 1, 0)
	if r := s.pay(t, "r-dup", "or2", "u-alice", 12); r.status != 200 {
		t.Fatalf("dup payment: %d %s", r.status, r.raw)
	}
	// Paid, order service lost the event.
	if r := s.pay(t, "r-lost", "or3", "u-alice", 13); r.status != 200 {
		t.Fatalf("payment: %d %s", r.status, r.raw)
	}
	// Paid, order cancelled (the cancellation never reached us).
	if r := s.pay(t, "r-cancel", "or4", "u-alice", 14); r.status != 200 {
		t.Fatalf("payment: %d %s", r.status, r.raw)
	}
	waitFor(t, "events", func() bool {
		return s.events.n(eventv1.TagPaymentSucceeded, "or2") == 1 && s.events.n(eventv1.TagPaymentSucceeded, "or3") == 1 &&
			s.events.n(eventv1.TagPaymentSucceeded, "or4") == 1
	})
	s.orders.set("or3", orderv1.OrderStatus_ORDER_STATUS_RESERVED)
	s.orders.set("or4", orderv1.OrderStatus_ORDER_STATUS_CANCELLED)
	want := map[string]string{
		"capture:" + biz.CaptureRef(biz.PaymentID("r-timeout")):      string(reconcile.MissingOurs),
		"capture:" + biz.CaptureRef(biz.PaymentID("r-dup")) + ":dup": string(reconcile.Duplicate),
		"payment:" + biz.PaymentID("r-lost"):                         string(reconcile.StatusMismatch),
		"payment:" + biz.PaymentID("r-cancel"):                       string(reconcile.StatusMismatch),
	}
	check := func(rep *rechttp.RunReport) {
		t.Helper()
		got := map[string]string{}
		for _, d := range rep.Discrepancies {
			got[d.Key] = d.Class
		}
		for k, c := range want {
			if got[k] != c {
				t.Errorf("discrepancy %s: class %q, want %q (report %+v)", k, got[k], c, rep.Discrepancies)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%d discrepancies, want %d: %+v", len(got), len(want), rep.Discrepancies)
		}
	}
	balanceBefore := balance(t, s, "u-alice")
	r := s.do(t, "POST", "/v1/reconcile/payments", map[string]any{"dry_run": true}, nil)
	var dry rechttp.RunReport
	if r.status != 200 || json.Unmarshal([]byte(r.raw), &dry) != nil {
		t.Fatalf("dry run: %d %s", r.status, r.raw)
	}
	check(&dry)
	if dry.WouldRepair != 4 || dry.Repaired != 0 || balance(t, s, "u-alice") != balanceBefore {
		t.Fatalf("dry run changed things or would not repair: %+v", dry)
	}
	rep, err := s.rc.Run(ctx, "payments", false)
	if err != nil {
		t.Fatal(err)
	}
	check(rep)
	if rep.Repaired != 4 {
		t.Fatalf("repaired %d, want 4: %+v", rep.Repaired, rep)
	}
	// Repairs went through the flows: re-emitted event, refund with its event.
	waitFor(t, "re-emitted PaymentSucceeded", func() bool { return s.events.n(eventv1.TagPaymentSucceeded, "or3") == 2 })
	waitFor(t, "PaymentRefunded", func() bool { return s.events.n(eventv1.TagPaymentRefunded, "or4") == 1 })
	if got := balance(t, s, "u-alice"); got != balanceBefore+14 {
		t.Fatalf("balance %d, want %d (or4 refunded)", got, balanceBefore+14)
	}
	second, err := s.rc.Run(ctx, "payments", false)
	if err != nil {
		t.Fatal(err)
	}
	if second.Repaired != 0 || len(second.Found) != 0 {
		t.Fatalf("second run: %+v", second)
	}
	if got := balance(t, s, "u-alice"); got != balanceBefore+14 {
		t.Fatalf("balance moved on the second run: %d", got)
	}
	runs := s.do(t, "GET", "/v1/reconcile/runs?job=payments", nil, nil)
	var rr struct {
		Runs  []reconcile.RunRecord  `json:"runs"`
		Audit []reconcile.AuditEntry `json:"audit"`
	}
	if runs.status != 200 || json.Unmarshal([]byte(runs.raw), &rr) != nil || len(rr.Runs) != 2 || len(rr.Audit) == 0 {
		t.Fatalf("runs: %d %s", runs.status, runs.raw)
	}
	// Filtered by order: or4's refund was found and repaired by the first
	// run only; an order no job flagged has no runs.
	runs = s.do(t, "GET", "/v1/reconcile/runs?order_id=or4", nil, nil)
	rr.Runs, rr.Audit = nil, nil
	if runs.status != 200 || json.Unmarshal([]byte(runs.raw), &rr) != nil || len(rr.Runs) != 1 || rr.Runs[0].ID != rep.RunID ||
		len(rr.Audit) == 0 {
		t.Fatalf("runs of or4 (want run %d): %d %s", rep.RunID, runs.status, runs.raw)
	}
	for _, a := range rr.Audit {
		if a.DiscrepancyID == nil {
			t.Fatalf("audit entry of another order: %+v", a)
		}
	}
	runs = s.do(t, "GET", "/v1/reconcile/runs?order_id=nope", nil, nil)
	if runs.status != 200 || json.Unmarshal([]byte(runs.raw), &rr) != nil || len(rr.Runs) != 0 || len(rr.Audit) != 0 {
		t.Fatalf("runs of an unknown order: %d %s", runs.status, runs.raw)
	}
	if r := s.do(t, "GET", "/v1/reconcile/runs?order_id="+strings.Repeat("x", 65), nil, nil); r.status != 400 {
		t.Fatalf("over-long order_id: %d %s", r.status, r.raw)
	}
	if r := s.do(t, "POST", "/v1/reconcile/nope", map[string]any{}, nil); r.status != 404 {
		t.Fatalf("unknown job: %d %s", r.status, r.raw)
	}
	// The broker job answers (nothing stuck here).
	if r := s.do(t, "POST", "/v1/reconcile/broker", map[string]any{"dry_run": false}, nil); r.status != 200 {
		t.Fatalf("broker job: %d %s", r.status, r.raw)
	}
}
