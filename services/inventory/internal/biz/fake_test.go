package biz

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// memStore is an in-memory implementation of every biz repository with
// transactions: InTx snapshots the state and restores it when fn fails, so
// tests see rollbacks exactly as with a database.
type memStore struct {
	mu           sync.Mutex
	products     map[string]Product
	reservations map[string]Reservation
	events       []Event
	pending      []Event
	failPublish  error // returned by Publish when set
}

func newMemStore(products ...Product) *memStore {
	s := &memStore{products: map[string]Product{}, reservations: map[string]Reservation{}}
	for _, p := range products {
		s.products[p.ID] = p
	}
	return s
}

func (s *memStore) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	prods, res := maps.Clone(s.products), maps.Clone(s.reservations)
	s.pending = nil
	if err := fn(ctx); err != nil {
		s.products, s.reservations, s.pending = prods, res, nil
		return err
	}
	s.events = append(s.events, s.pending...)
	s.pending = nil
	return nil
}

func (s *memStore) Get(_ context.Context, id string) (*Product, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.products[id]
	if !ok {
		return nil, ErrProductNotFound
	}
	return &p, nil
}

func (s *memStore) List(_ context.Context, after string, limit int) ([]*Product, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Product
	for _, id := range slices.Sorted(maps.Keys(s.products)) {
		if id > after && len(out) < limit {
			p := s.products[id]
			out = append(out, &p)
		}
	}
	return out, nil
}

// Lock, Move, reservation methods and Publish run inside InTx (s.mu held).

func (s *memStore) Lock(_ context.Context, ids []string) (map[string]*Product, error) {
	out := map[string]*Product{}
	for _, id := range ids {
		if p, ok := s.products[id]; ok {
			out[id] = &p
		}
	}
	return out, nil
}

func (s *memStore) Move(_ context.Context, id string, da, dr, ds int64) error {
	p, ok := s.products[id]
	if !ok {
		return ErrProductNotFound
	}
	p.Available += da
	p.Reserved += dr
	p.Sold += ds
	if p.Available < 0 || p.Reserved < 0 || p.Sold < 0 {
		return fmt.Errorf("negative stock for %s", id)
	}
	s.products[id] = p
	return nil
}

type reservationFake struct{ *memStore }

func (s reservationFake) GetForUpdate(_ context.Context, orderID string) (*Reservation, error) {
	r, ok := s.reservations[orderID]
	if !ok {
		return nil, nil
	}
	return &r, nil
}

func (s reservationFake) Create(_ context.Context, r *Reservation) error {
	if _, ok := s.reservations[r.OrderID]; ok {
		return errors.New("duplicate reservation")
	}
	s.reservations[r.OrderID] = *r
	return nil
}

func (s reservationFake) SetStatus(_ context.Context, orderID string, from, to Status, seq int64) error {
	r, ok := s.reservations[orderID]
	if !ok || r.Status != from {
		return fmt.Errorf("reservation %s not in %s", orderID, from)
	}
	r.Status, r.Seq = to, seq
	s.reservations[orderID] = r
	return nil
}

func (s reservationFake) List(_ context.Context, status Status, limit int) ([]*Reservation, error) {
	var out []*Reservation
	for _, r := range s.reservations {
		if r.Status == status && len(out) < limit {
			out = append(out, &r)
		}
	}
	return out, nil
}

func (s *memStore) Publish(_ context.Context, ev *Event) error {
	if s.failPublish != nil {
		return s.failPublish
	}
	s.pending = append(s.pending, *ev)
	return nil
}
