package biz

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient/reconcile"
	"github.com/tidemq/tide/services/payment/internal/fault"
)

// mem is an in-memory implementation of every port with transactions
// that roll back (snapshot and restore). Not for concurrent use.
type mem struct {
	mu        sync.Mutex
	balances  map[string]int64
	payments  map[string]Payment
	keys      map[string]memKey
	cancelled map[string]bool
	lines     []StatementLine
	sent      []Event // committed transactional messages
	emitted   []Event // plain re-emissions
	failCapt  error
	orders    map[string]OrderStatus
	locked    []string // LockOrder calls, in order
}

type memKey struct {
	fp   []byte
	resp []byte
}

func newMem() *mem {
	return &mem{balances: map[string]int64{"alice": 1000, "erin": 0}, payments: map[string]Payment{},
		keys: map[string]memKey{}, cancelled: map[string]bool{}, orders: map[string]OrderStatus{}}
}

func (m *mem) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	b, p, c := maps.Clone(m.balances), maps.Clone(m.payments), maps.Clone(m.cancelled)
	if err := fn(ctx); err != nil {
		m.balances, m.payments, m.cancelled = b, p, c
		return err
	}
	return nil
}

func (m *mem) Debit(_ context.Context, u string, a int64) error {
	b, ok := m.balances[u]
	switch {
	case !ok:
		return ErrAccountNotFound
	case b < a:
		return ErrInsufficientBalance
	}
	m.balances[u] = b - a
	return nil
}
func (m *mem) Credit(_ context.Context, u string, a int64) error { m.balances[u] += a; return nil }
func (m *mem) Balance(_ context.Context, u string) (int64, error) {
	return m.balances[u], nil
}

type paymentsFake struct{ *mem }

func (m paymentsFake) Create(_ context.Context, p *Payment) error {
	if _, ok := m.payments[p.ID]; ok {
		return ErrPaymentExists
	}
	for _, q := range m.payments {
		if q.OrderID == p.OrderID {
			return ErrOrderAlreadyPaid
		}
	}
	m.payments[p.ID] = *p
	return nil
}
func (m paymentsFake) Get(_ context.Context, id string) (*Payment, error) {
	p, ok := m.payments[id]
	if !ok {
		return nil, ErrPaymentNotFound
	}
	return &p, nil
}
func (m paymentsFake) GetByOrder(_ context.Context, o string) (*Payment, error) {
	for _, p := range m.payments {
		if p.OrderID == o {
			return &p, nil
		}
	}
	return nil, nil
}
func (m paymentsFake) SetStatus(_ context.Context, id string, from, to Status, reason string) (bool, error) {
	p, ok := m.payments[id]
	if !ok || p.Status != from {
		return false, nil
	}
	p.Status, p.Reason = to, reason
	m.payments[id] = p
	return true, nil
}
func (m paymentsFake) LockOrder(_ context.Context, o string) error {
	m.locked = append(m.locked, o)
	return nil
}
func (m paymentsFake) MarkOrderCancelled(_ context.Context, o, _ string) error {
	m.cancelled[o] = true
	return nil
}
func (m paymentsFake) OrderCancelled(_ context.Context, o string) (bool, error) {
	return m.cancelled[o], nil
}

// Do is the idempotency store: record and response commit with fn's
// success only.
func (m *mem) Do(ctx context.Context, key string, fp []byte, fn func(ctx context.Context) ([]byte, error)) ([]byte, bool, error) {
	if k, ok := m.keys[key]; ok {
		if !bytes.Equal(k.fp, fp) {
			return nil, false, ErrIdempotencyKeyReused
		}
		return k.resp, true, nil
	}
	resp, err := fn(ctx)
	if err != nil {
		return nil, false, err
	}
	m.keys[key] = memKey{fp: fp, resp: resp}
	return resp, false, nil
}

// The gateway keeps its lines whatever our transaction does.
func (m *mem) Capture(_ context.Context, p *Payment) error {
	m.line(p.ID, p.OrderID, LineCapture, CaptureRef(p.ID), p.Amount)
	return m.failCapt
}
func (m *mem) Refund(_ context.Context, p *Payment) error {
	m.line(p.ID, p.OrderID, LineRefund, RefundRef(p.ID), p.Amount)
	return nil
}
func (m *mem) line(pid, oid, kind, ref string, amount int64) {
	for _, l := range m.lines {
		if l.Ref == ref {
			return
		}
	}
	m.lines = append(m.lines, StatementLine{ID: int64(len(m.lines) + 1), Ref: ref, PaymentID: pid, OrderID: oid, Kind: kind, Amount: amount})
}

// Publish runs local in a (fake) transaction and "sends" on commit.
func (m *mem) Publish(ctx context.Context, ev *Event, local func(ctx context.Context) error) error {
	if err := m.InTx(ctx, local); err != nil {
		return err
	}
	m.sent = append(m.sent, *ev)
	return nil
}
func (m *mem) Emit(_ context.Context, ev *Event) error {
	m.emitted = append(m.emitted, *ev)
	return nil
}

func newUC(m *mem, f *fault.Set) *PaymentUsecase {
	return NewPaymentUsecase(m, paymentsFake{m}, m, m, m, m, f, Options{}, nil)
}

func TestCreatePayment(t *testing.T) {
	m := newMem()
	uc := newUC(m, nil)
	ctx := context.Background()
	tests := []struct {
		name    string
		req     CreateRequest
		wantErr error
		balance int64 // alice's after
		sent    int
	}{
		{"no key", CreateRequest{OrderID: "o1", UserID: "alice", Amount: 100}, ErrIdempotencyKeyRequired, 1000, 0},
		{"bad amount", CreateRequest{IdempotencyKey: "k0", OrderID: "o1", UserID: "alice"}, ErrInvalidArgument, 1000, 0},
		{"pays", CreateRequest{IdempotencyKey: "k1", OrderID: "o1", UserID: "alice", Amount: 100}, nil, 900, 1},
		{"replayed", CreateRequest{IdempotencyKey: "k1", OrderID: "o1", UserID: "alice", Amount: 100}, nil, 900, 1},
		{"key reused", CreateRequest{IdempotencyKey: "k1", OrderID: "o1", UserID: "alice", Amount: 101}, ErrIdempotencyKeyReused, 900, 1},
		{"order paid", CreateRequest{IdempotencyKey: "k2", OrderID: "o1", UserID: "alice", Amount: 100}, ErrOrderAlreadyPaid, 900, 1},
		{"insufficient", CreateRequest{IdempotencyKey: "k3", OrderID: "o3", UserID: "erin", Amount: 1}, ErrInsufficientBalance, 900, 1},
		{"insufficient replayed", CreateRequest{IdempotencyKey: "k3", OrderID: "o3", UserID: "erin", Amount: 1}, ErrInsufficientBalance, 900, 1},
	}
	for _, tt := range tests {
		p, err := uc.CreatePayment(ctx, &tt.req)
		if (tt.wantErr == nil) != (err == nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
			t.Fatalf("%s: err %v, want %v", tt.name, err, tt.wantErr)
		}
		if err == nil && (p.ID != PaymentID(tt.req.IdempotencyKey) || p.Status != StatusSucceeded) {
			t.Fatalf("%s: payment %+v", tt.name, p)
		}
		if m.balances["alice"] != tt.balance || len(m.sent) != tt.sent {
			t.Fatalf("%s: balance %d sent %d, want %d %d", tt.name, m.balances["alice"], len(m.sent), tt.balance, tt.sent)
		}
	}
	if ev := m.sent[0]; ev.Kind != EventPaymentSucceeded || ev.OrderID != "o1" || ev.Seq != 1 {
		t.Fatalf("event %+v", ev)
	}
}

// The gateway captured but timed out: we roll back (no debit, no event)
// and store nothing, so a retry with the same key pays.
func TestCreatePaymentGatewayTimeout(t *testing.T) {
	m := newMem()
	uc := newUC(m, nil)
	m.failCapt = ErrGatewayTimeout
	req := &CreateRequest{IdempotencyKey: "k", OrderID: "o", UserID: "alice", Amount: 10}
	if _, err := uc.CreatePayment(context.Background(), req); !errors.Is(err, ErrGatewayTimeout) {
		t.Fatalf("err %v", err)
	}
	if m.balances["alice"] != 1000 || len(m.sent) != 0 || len(m.lines) != 1 {
		t.Fatalf("balance %d sent %d lines %d", m.balances["alice"], len(m.sent), len(m.lines))
	}
	m.failCapt = nil
	if _, err := uc.CreatePayment(context.Background(), req); err != nil || m.balances["alice"] != 990 || len(m.lines) != 1 {
		t.Fatalf("retry: %v balance %d lines %d", err, m.balances["alice"], len(m.lines))
	}
}

// A payment an earlier attempt committed (its stored response lost) is
// answered without a second debit.
func TestCreatePaymentAlreadyCommitted(t *testing.T) {
	m := newMem()
	uc := newUC(m, nil)
	req := &CreateRequest{IdempotencyKey: "k", OrderID: "o", UserID: "alice", Amount: 10}
	if _, err := uc.CreatePayment(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	clear(m.keys)
	p, err := uc.CreatePayment(context.Background(), req)
	if err != nil || p.ID != PaymentID("k") || m.balances["alice"] != 990 || len(m.sent) != 1 {
		t.Fatalf("%+v %v balance %d sent %d", p, err, m.balances["alice"], len(m.sent))
	}
}

// Cancelled first: the payment is refused. Paid first: the refund
// happens once, whatever the number of calls.
func TestCancellation(t *testing.T) {
	m := newMem()
	uc := newUC(m, nil)
	ctx := context.Background()
	if err := uc.MarkOrderCancelled(ctx, "o1", "timeout"); err != nil {
		t.Fatal(err)
	}
	if _, err := uc.CreatePayment(ctx, &CreateRequest{IdempotencyKey: "k1", OrderID: "o1", UserID: "alice", Amount: 5}); !errors.Is(err, ErrOrderCancelled) {
		t.Fatalf("err %v", err)
	}
	if m.balances["alice"] != 1000 {
		t.Fatal("debited a cancelled order")
	}
	if _, err := uc.CreatePayment(ctx, &CreateRequest{IdempotencyKey: "k2", OrderID: "o2", UserID: "alice", Amount: 5}); err != nil {
		t.Fatal(err)
	}
	_ = uc.MarkOrderCancelled(ctx, "o2", "timeout")
	for i, want := range []bool{true, false, false} {
		got, err := uc.RefundOrder(ctx, "o2", "order_cancelled")
		if err != nil || got != want {
			t.Fatalf("call %d: refunded %v %v, want %v", i, got, err, want)
		}
	}
	if m.balances["alice"] != 1000 || len(m.sent) != 2 || m.sent[1].Kind != EventPaymentRefunded || m.sent[1].Seq != 2 {
		t.Fatalf("balance %d events %+v", m.balances["alice"], m.sent)
	}
	// Both the payments and the cancellations took the order's lock.
	if want := []string{"o1", "o1", "o2", "o2"}; !slices.Equal(m.locked, want) {
		t.Fatalf("orders locked %v, want %v", m.locked, want)
	}
}

// crash_before_commit fires inside the transaction (the exit is
// injected): nothing commits.
func TestCrashBeforeCommitFault(t *testing.T) {
	m := newMem()
	exited := 0
	f := fault.New(map[string]fault.Spec{fault.CrashBeforeCommit: {Enabled: true, Count: 1}}, func(int) { exited++ }, nil)
	uc := newUC(m, f)
	// The injected exit returns, so the transaction goes on and commits:
	// the test checks the fault fires once, inside the transaction.
	if _, err := uc.CreatePayment(context.Background(), &CreateRequest{IdempotencyKey: "k", OrderID: "o", UserID: "alice", Amount: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := uc.CreatePayment(context.Background(), &CreateRequest{IdempotencyKey: "k2", OrderID: "o2", UserID: "alice", Amount: 1}); err != nil {
		t.Fatal(err)
	}
	if exited != 1 {
		t.Fatalf("exit called %d times, want 1 (count 1)", exited)
	}
}

type ordersFake map[string]OrderStatus

func (o ordersFake) OrderStatus(_ context.Context, id string) (OrderStatus, error) {
	if s, ok := o[id]; ok {
		return s, nil
	}
	return OrderMissing, nil
}

type ledgerFake struct{ *mem }

func (l ledgerFake) PaymentsAfter(_ context.Context, after string, limit int) ([]*Payment, error) {
	var out []*Payment
	for _, id := range sortedKeys(l.payments) {
		if id > after && len(out) < limit {
			p := l.payments[id]
			out = append(out, &p)
		}
	}
	return out, nil
}
func (l ledgerFake) PaymentsByID(_ context.Context, ids []string) (map[string]*Payment, error) {
	out := map[string]*Payment{}
	for _, id := range ids {
		if p, ok := l.payments[id]; ok {
			out[id] = &p
		}
	}
	return out, nil
}

func sortedKeys(m map[string]Payment) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

type statementFake struct{ *mem }

func (s statementFake) CapturesAfter(_ context.Context, after int64, limit int) ([]StatementLine, error) {
	var out []StatementLine
	for _, l := range s.lines {
		if l.ID > after && l.Kind == LineCapture && len(out) < limit {
			out = append(out, l)
		}
	}
	return out, nil
}
func (s statementFake) LinesFor(_ context.Context, ids []string) ([]StatementLine, error) {
	var out []StatementLine
	for _, l := range s.lines {
		for _, id := range ids {
			if l.PaymentID == id {
				out = append(out, l)
			}
		}
	}
	return out, nil
}
func (s statementFake) Line(_ context.Context, ref string) (*StatementLine, error) {
	for _, l := range s.lines {
		if l.Ref == ref {
			return &l, nil
		}
	}
	return nil, nil
}
func (s statementFake) RefundCapture(_ context.Context, l *StatementLine) error {
	s.line(l.PaymentID, l.OrderID, LineRefund, CaptureRefundRef(l.Ref), l.Amount)
	return nil
}

// The payments job classifies each injected discrepancy, proposes the
// right repair, and finds nothing once the repairs are applied.
func TestPaymentsJob(t *testing.T) {
	m := newMem()
	uc := newUC(m, nil)
	ctx := context.Background()
	pay := func(key, order string) {
		if _, err := uc.CreatePayment(ctx, &CreateRequest{IdempotencyKey: key, OrderID: order, UserID: "alice", Amount: 10}); err != nil {
			t.Fatal(err)
		}
	}
	pay("k-ok", "o-ok")
	pay("k-lost", "o-lost")
	pay("k-cancel", "o-cancel")
	pay("k-dup", "o-dup")
	m.line(PaymentID("k-dup"), "o-dup", LineCapture, CaptureRef(PaymentID("k-dup"))+":dup", 10)
	m.line("pay_unknown", "o-x", LineCapture, CaptureRef("pay_unknown"), 10)
	orders := ordersFake{"o-ok": OrderPaid, "o-lost": OrderReserved, "o-cancel": OrderCancelled, "o-dup": OrderPaid}
	job := &PaymentsJob{UC: uc, Ledger: ledgerFake{m}, Statement: statementFake{m}, Orders: orders}
	scan := func() map[string]reconcile.Discrepancy {
		found := map[string]reconcile.Discrepancy{}
		cursor := ""
		for {
			page, err := job.Check(ctx, reconcile.Scan{Cursor: cursor, Limit: 2, AsOf: time.Now().Add(time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range page.Discrepancies {
				found[d.Key] = d
			}
			if page.Next == "" {
				return found
			}
			cursor = page.Next
		}
	}
	want := map[string]struct {
		class  reconcile.Class
		action string
	}{
		"payment:" + PaymentID("k-lost"):                     {reconcile.StatusMismatch, ActionReemitPaid},
		"payment:" + PaymentID("k-cancel"):                   {reconcile.StatusMismatch, ActionRefund},
		"capture:" + CaptureRef(PaymentID("k-dup")) + ":dup": {reconcile.Duplicate, ActionRefundCapture},
		"capture:" + CaptureRef("pay_unknown"):               {reconcile.MissingOurs, ActionRefundCapture},
	}
	found := scan()
	if len(found) != len(want) {
		t.Fatalf("found %v", found)
	}
	for k, w := range want {
		if d := found[k]; d.Class != w.class || d.Action != w.action {
			t.Fatalf("%s: %+v, want %v", k, d, w)
		}
		if err := job.Repair(ctx, found[k], "key"); err != nil {
			t.Fatal(err)
		}
	}
	if len(m.emitted) != 1 || m.emitted[0].OrderID != "o-lost" {
		t.Fatalf("emitted %+v", m.emitted)
	}
	orders["o-lost"] = OrderPaid // the order consumed the re-emitted event
	if again := scan(); len(again) != 0 {
		t.Fatalf("after repairs: %v", again)
	}
	// Inside the grace window everything is in flight.
	job.Grace = time.Hour
	page, _ := job.Check(ctx, reconcile.Scan{Limit: 100, AsOf: time.Now()})
	for _, d := range page.Discrepancies {
		if d.Class != reconcile.InFlight {
			t.Fatalf("%+v not in flight", d)
		}
	}
}
