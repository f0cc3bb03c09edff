package biz

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"
)

// mem is an in-memory implementation of every repository with
// transactions that roll back (snapshot and restore).
type mem struct {
	mu        sync.Mutex
	balances  map[string]int64
	payments  map[string]Payment
	keys      map[string]IdempotencyRecord
	cancelled map[string]bool
	captures  int
	sent      []Event // committed messages
	checker   func(ctx context.Context, kind EventKind, id string, born time.Time) Decision
	failCapt  error
}

func newMem() *mem {
	return &mem{balances: map[string]int64{"alice": 1000, "erin": 0}, payments: map[string]Payment{},
		keys: map[string]IdempotencyRecord{}, cancelled: map[string]bool{}}
}

func (m *mem) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	m.mu.Lock()
	b, p, k, c := maps.Clone(m.balances), maps.Clone(m.payments), maps.Clone(m.keys), maps.Clone(m.cancelled)
	m.mu.Unlock()
	if err := fn(ctx); err != nil {
		m.mu.Lock()
		m.balances, m.payments, m.keys, m.cancelled = b, p, k, c
		m.mu.Unlock()
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
func (m paymentsFake) GetByKey(ctx context.Context, key string) (*Payment, error) {
	return m.Get(ctx, PaymentID(key))
}
func (m paymentsFake) GetByOrderForUpdate(_ context.Context, o string) (*Payment, error) {
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
func (m paymentsFake) MarkOrderCancelled(_ context.Context, o, _ string) error {
	m.cancelled[o] = true
	return nil
}
func (m paymentsFake) OrderCancelled(_ context.Context, o string) (bool, error) {
	return m.cancelled[o], nil
}

type keysFake struct{ *mem }

func (m keysFake) Get(_ context.Context, k string) (*IdempotencyRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.keys[k]
	if !ok {
		return nil, nil
	}
	return &r, nil
}
func (m keysFake) Create(_ context.Context, r *IdempotencyRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.keys[r.Key]; ok {
		return ErrIdempotencyInProgress
	}
	m.keys[r.Key] = *r
	return nil
}

func (m *mem) Capture(context.Context, *Payment) error { m.captures++; return m.failCapt }
func (m *mem) Refund(context.Context, *Payment) error  { return nil }

func (m *mem) SendInTransaction(ctx context.Context, ev *Event, local func(ctx context.Context) error) error {
	if err := local(ctx); err != nil {
		return err
	}
	m.sent = append(m.sent, *ev)
	return nil
}
func (m *mem) SetChecker(f func(ctx context.Context, kind EventKind, id string, born time.Time) Decision) {
	m.checker = f
}

func newUsecase(m *mem) *PaymentUsecase {
	return NewPaymentUsecase(m, paymentsFake{m}, keysFake{m}, nil, m, m, m, Options{CheckUnknownWindow: time.Minute}, nil)
}

func TestPaymentUsecaseIdempotencyRules(t *testing.T) {
	tests := []struct {
		name    string
		reqs    []CreateRequest
		wantErr []error // per request; nil = success
		balance int64   // alice's balance afterwards
		sent    int
	}{
		{
			name:    "one payment",
			reqs:    []CreateRequest{{"o1", "alice", 300, "k1"}},
			wantErr: []error{nil}, balance: 700, sent: 1,
		},
		{
			name:    "retry replays without a second debit",
			reqs:    []CreateRequest{{"o1", "alice", 300, "k1"}, {"o1", "alice", 300, "k1"}, {"o1", "alice", 300, "k1"}},
			wantErr: []error{nil, nil, nil}, balance: 700, sent: 1,
		},
		{
			name:    "same key other body is rejected",
			reqs:    []CreateRequest{{"o1", "alice", 300, "k1"}, {"o1", "alice", 301, "k1"}},
			wantErr: []error{nil, ErrIdempotencyKeyReused}, balance: 700, sent: 1,
		},
		{
			name:    "second key for a paid order",
			reqs:    []CreateRequest{{"o1", "alice", 300, "k1"}, {"o1", "alice", 300, "k2"}},
			wantErr: []error{nil, ErrOrderAlreadyPaid}, balance: 700, sent: 1,
		},
		{
			name:    "insufficient balance is stored and replayed",
			reqs:    []CreateRequest{{"o1", "alice", 5000, "k1"}, {"o1", "alice", 5000, "k1"}},
			wantErr: []error{ErrInsufficientBalance, ErrInsufficientBalance}, balance: 1000, sent: 0,
		},
		{
			name:    "missing key",
			reqs:    []CreateRequest{{"o1", "alice", 300, ""}},
			wantErr: []error{ErrIdempotencyKeyRequired}, balance: 1000,
		},
		{
			name:    "bad amount",
			reqs:    []CreateRequest{{"o1", "alice", 0, "k1"}},
			wantErr: []error{ErrInvalidArgument}, balance: 1000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMem()
			uc := newUsecase(m)
			var first *Payment
			for i, r := range tt.reqs {
				p, err := uc.CreatePayment(context.Background(), &r)
				if w := tt.wantErr[i]; (w == nil) != (err == nil) || (w != nil && !errors.Is(err, w)) {
					t.Fatalf("request %d: err %v, want %v", i, err, w)
				}
				if err == nil && first == nil {
					first = p
				} else if err == nil && *p != *first {
					t.Fatalf("request %d replayed %+v, want %+v", i, p, first)
				}
			}
			if m.balances["alice"] != tt.balance || len(m.sent) != tt.sent {
				t.Fatalf("balance %d sent %d, want %d %d", m.balances["alice"], len(m.sent), tt.balance, tt.sent)
			}
		})
	}
}

// A failed local step (gateway timeout after capture) rolls everything
// back, stores nothing under the key, and a retry succeeds once.
func TestPaymentUsecaseTransientFailureNotStored(t *testing.T) {
	m := newMem()
	uc := newUsecase(m)
	m.failCapt = ErrGatewayTimeout
	req := CreateRequest{"o1", "alice", 100, "k1"}
	if _, err := uc.CreatePayment(context.Background(), &req); !errors.Is(err, ErrGatewayTimeout) {
		t.Fatalf("err = %v", err)
	}
	if len(m.keys) != 0 || len(m.payments) != 0 || m.balances["alice"] != 1000 {
		t.Fatalf("rollback left keys %v payments %v balance %d", m.keys, m.payments, m.balances["alice"])
	}
	m.failCapt = nil
	if _, err := uc.CreatePayment(context.Background(), &req); err != nil {
		t.Fatal(err)
	}
	if m.balances["alice"] != 900 || len(m.sent) != 1 {
		t.Fatalf("balance %d sent %d", m.balances["alice"], len(m.sent))
	}
}

func TestPaymentUsecaseRefundOnce(t *testing.T) {
	m := newMem()
	uc := newUsecase(m)
	ctx := context.Background()
	if _, err := uc.CreatePayment(ctx, &CreateRequest{"o1", "alice", 100, "k1"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		refunded, err := uc.OrderCancelled(ctx, "o1", "timeout")
		if err != nil || refunded != (i == 0) {
			t.Fatalf("delivery %d: refunded %v err %v", i, refunded, err)
		}
	}
	if m.balances["alice"] != 1000 || len(m.sent) != 2 || m.sent[1].Kind != EventPaymentRefunded || m.sent[1].Seq != 2 {
		t.Fatalf("balance %d sent %+v", m.balances["alice"], m.sent)
	}
	// A payment for an order already known as cancelled is refused.
	if _, err := uc.OrderCancelled(ctx, "o2", "timeout"); err != nil {
		t.Fatal(err)
	}
	if _, err := uc.CreatePayment(ctx, &CreateRequest{"o2", "alice", 100, "k2"}); !errors.Is(err, ErrOrderCancelled) {
		t.Fatalf("payment for cancelled order: %v", err)
	}
	if m.balances["alice"] != 1000 {
		t.Fatalf("balance %d", m.balances["alice"])
	}
}

func TestPaymentUsecaseCheckBack(t *testing.T) {
	m := newMem()
	uc := newUsecase(m)
	ctx := context.Background()
	if _, err := uc.CreatePayment(ctx, &CreateRequest{"o1", "alice", 100, "k1"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tests := []struct {
		name string
		kind EventKind
		id   string
		born time.Time
		want Decision
	}{
		{"committed payment", EventPaymentSucceeded, PaymentID("k1"), now.Add(-time.Hour), DecideCommit},
		{"missing, young: maybe still open", EventPaymentSucceeded, PaymentID("nope"), now, DecideUnknown},
		{"missing, old: rolled back", EventPaymentSucceeded, PaymentID("nope"), now.Add(-time.Hour), DecideRollback},
		{"refund not done, young", EventPaymentRefunded, PaymentID("k1"), now, DecideUnknown},
		{"refund not done, old", EventPaymentRefunded, PaymentID("k1"), now.Add(-time.Hour), DecideRollback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.checker(ctx, tt.kind, tt.id, tt.born); got != tt.want {
				t.Fatalf("decision %v, want %v", got, tt.want)
			}
		})
	}
}
