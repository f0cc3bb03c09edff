package biz

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	eventv1 "github.com/tidemq/tide/api/event/v1"
)

// store is an in-memory OrderRepo + Transaction: InTx snapshots the state
// and restores it when fn fails, which is all the rollback the tests need.
type store struct {
	mu       sync.Mutex // serialises transactions, like the row lock
	orders   map[string]*Order
	timeline []*TimelineEntry
	failNext error // returned by the next Create
}

func newStore() *store { return &store{orders: map[string]*Order{}} }

type txKey struct{}

func (s *store) InTx(ctx context.Context, fn func(context.Context) error) error {
	if ctx.Value(txKey{}) != nil {
		return fn(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	orders := make(map[string]*Order, len(s.orders))
	for k, v := range s.orders {
		orders[k] = v.clone()
	}
	tl := slices.Clone(s.timeline)
	if err := fn(context.WithValue(ctx, txKey{}, true)); err != nil {
		s.orders, s.timeline = orders, tl
		return err
	}
	return nil
}

func (s *store) Create(_ context.Context, o *Order) error {
	if err := s.failNext; err != nil {
		s.failNext = nil
		return err
	}
	if _, ok := s.orders[o.ID]; ok {
		return errors.New("duplicate order")
	}
	s.orders[o.ID] = o.clone()
	return nil
}

func (s *store) get(id string) (*Order, error) {
	o, ok := s.orders[id]
	if !ok {
		return nil, ErrOrderNotFound
	}
	return o.clone(), nil
}

func (s *store) Get(_ context.Context, id string) (*Order, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get(id)
}

func (s *store) Lock(ctx context.Context, id string) (*Order, error) {
	if ctx.Value(txKey{}) == nil {
		return nil, errors.New("Lock outside a transaction")
	}
	return s.get(id)
}

func (s *store) Update(_ context.Context, o *Order) error {
	if _, ok := s.orders[o.ID]; !ok {
		return ErrOrderNotFound
	}
	s.orders[o.ID] = o.clone()
	return nil
}

func (s *store) AddTimeline(_ context.Context, e *TimelineEntry) error {
	for _, x := range s.timeline {
		if x.OrderID == e.OrderID && x.Topic == e.Topic && x.Seq == e.Seq {
			return errors.New("duplicate timeline entry")
		}
	}
	c := *e
	s.timeline = append(s.timeline, &c)
	return nil
}

func (s *store) HasEvent(_ context.Context, orderID, topic string, seq int64) (bool, error) {
	for _, x := range s.timeline {
		if x.OrderID == orderID && x.Topic == topic && x.Seq == seq {
			return true, nil
		}
	}
	return false, nil
}

func (s *store) Timeline(_ context.Context, orderID string) ([]*TimelineEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*TimelineEntry
	for _, x := range s.timeline {
		if x.OrderID == orderID {
			c := *x
			out = append(out, &c)
		}
	}
	return out, nil
}

func (s *store) Overdue(_ context.Context, now time.Time, limit int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, o := range s.orders {
		if o.Status.Live() && !o.CancelAt.After(now) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return ids, nil
}

// publisher publishes into a slice when the local transaction commits.
type publisher struct {
	tx        Transaction
	mu        sync.Mutex
	events    []Event
	fail      error  // returned instead of running fn
	beforeRun func() // runs before the local transaction (to simulate races)
}

func (p *publisher) PublishInTx(ctx context.Context, ev Event, fn func(context.Context) error) error {
	if p.fail != nil {
		return p.fail
	}
	if f := p.beforeRun; f != nil {
		p.beforeRun = nil
		f()
	}
	if err := p.tx.InTx(ctx, fn); err != nil {
		return err
	}
	p.mu.Lock()
	p.events = append(p.events, ev)
	p.mu.Unlock()
	return nil
}

func (p *publisher) tags() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, e := range p.events {
		out = append(out, eventv1.Tag(e.Payload))
	}
	return out
}

type timer struct {
	mu        sync.Mutex
	scheduled map[string]time.Time // handle -> due
	recalled  []string
	fail      error
}

func (t *timer) Schedule(_ context.Context, orderID string, at time.Time) (string, error) {
	if t.fail != nil {
		return "", t.fail
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.scheduled == nil {
		t.scheduled = map[string]time.Time{}
	}
	h := "timer-" + orderID
	t.scheduled[h] = at
	return h, nil
}

func (t *timer) Recall(_ context.Context, handle string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recalled = append(t.recalled, handle)
	return nil
}

// catalog is the inventory service's catalog: prices by product id;
// down makes it not answer.
type catalog struct {
	prices map[string]int64
	down   error
	asked  [][]string
}

func (c *catalog) Prices(_ context.Context, ids []string) (map[string]int64, error) {
	c.asked = append(c.asked, slices.Clone(ids))
	if c.down != nil {
		return nil, c.down
	}
	out := map[string]int64{}
	for _, id := range ids {
		if p, ok := c.prices[id]; ok {
			out[id] = p
		}
	}
	return out, nil
}

func (s *store) List(_ context.Context, f ListFilter) ([]*Order, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Order
	for _, o := range s.orders {
		if (f.Status == "" || o.Status == f.Status) && (f.UserID == "" || o.UserID == f.UserID) && (f.After == "" || o.ID < f.After) {
			out = append(out, o.clone())
		}
	}
	slices.SortFunc(out, func(a, b *Order) int { return strings.Compare(b.ID, a.ID) })
	return out[:min(len(out), f.Limit)], nil
}
