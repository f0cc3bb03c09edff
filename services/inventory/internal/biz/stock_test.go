package biz

import (
	"context"
	"errors"
	"testing"
)

type step struct {
	cmd     string // reserve, release, sell
	order   string
	items   []Item
	want    Outcome
	wantErr error
}

func seedProducts() []Product {
	return []Product{
		{ID: "p1", Name: "apple", Price: 100, Available: 10},
		{ID: "p2", Name: "pear", Price: 200, Available: 3},
	}
}

func run(t *testing.T, uc *StockUsecase, s step) {
	t.Helper()
	ctx := context.Background()
	var (
		got Outcome
		err error
	)
	switch s.cmd {
	case "reserve":
		got, err = uc.Reserve(ctx, s.order, s.items)
	case "release":
		got, err = uc.Release(ctx, s.order)
	case "sell":
		got, err = uc.Sell(ctx, s.order)
	default:
		t.Fatalf("bad command %q", s.cmd)
	}
	if s.wantErr != nil {
		if !errors.Is(err, s.wantErr) {
			t.Fatalf("%s %s: err = %v, want %v", s.cmd, s.order, err, s.wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s %s: %v", s.cmd, s.order, err)
	}
	if got != s.want {
		t.Fatalf("%s %s: outcome %v, want %v", s.cmd, s.order, got, s.want)
	}
}

func TestStockUsecaseStateMachine(t *testing.T) {
	two := []Item{{ProductID: "p1", Quantity: 2}, {ProductID: "p2", Quantity: 1}}
	tests := []struct {
		name       string
		steps      []step
		wantStatus Status
		wantEvents []EventKind
		want       map[string][3]int64 // available, reserved, sold
	}{
		{
			name:       "reserve",
			steps:      []step{{cmd: "reserve", order: "o1", items: two, want: Applied}},
			wantStatus: StatusReserved, wantEvents: []EventKind{EventStockReserved},
			want: map[string][3]int64{"p1": {8, 2, 0}, "p2": {2, 1, 0}},
		},
		{
			name: "reserve twice",
			steps: []step{
				{cmd: "reserve", order: "o1", items: two, want: Applied},
				{cmd: "reserve", order: "o1", items: two, want: Duplicate},
			},
			wantStatus: StatusReserved, wantEvents: []EventKind{EventStockReserved},
			want: map[string][3]int64{"p1": {8, 2, 0}, "p2": {2, 1, 0}},
		},
		{
			name: "reserve then sell twice",
			steps: []step{
				{cmd: "reserve", order: "o1", items: two, want: Applied},
				{cmd: "sell", order: "o1", want: Applied},
				{cmd: "sell", order: "o1", want: Duplicate},
			},
			wantStatus: StatusSold, wantEvents: []EventKind{EventStockReserved},
			want: map[string][3]int64{"p1": {8, 0, 2}, "p2": {2, 0, 1}},
		},
		{
			name: "reserve then release twice",
			steps: []step{
				{cmd: "reserve", order: "o1", items: two, want: Applied},
				{cmd: "release", order: "o1", want: Applied},
				{cmd: "release", order: "o1", want: Duplicate},
			},
			wantStatus: StatusReleased, wantEvents: []EventKind{EventStockReserved, EventStockReleased},
			want: map[string][3]int64{"p1": {10, 0, 0}, "p2": {3, 0, 0}},
		},
		{
			name: "sell after release is a conflict",
			steps: []step{
				{cmd: "reserve", order: "o1", items: two, want: Applied},
				{cmd: "release", order: "o1", want: Applied},
				{cmd: "sell", order: "o1", want: Conflict},
			},
			wantStatus: StatusReleased, wantEvents: []EventKind{EventStockReserved, EventStockReleased},
			want: map[string][3]int64{"p1": {10, 0, 0}, "p2": {3, 0, 0}},
		},
		{
			name: "release after sell is a conflict",
			steps: []step{
				{cmd: "reserve", order: "o1", items: two, want: Applied},
				{cmd: "sell", order: "o1", want: Applied},
				{cmd: "release", order: "o1", want: Conflict},
			},
			wantStatus: StatusSold, wantEvents: []EventKind{EventStockReserved},
			want: map[string][3]int64{"p1": {8, 0, 2}, "p2": {2, 0, 1}},
		},
		{
			name:       "short stock rejects and reserves nothing",
			steps:      []step{{cmd: "reserve", order: "o1", items: []Item{{ProductID: "p1", Quantity: 1}, {ProductID: "p2", Quantity: 4}}, want: Applied}},
			wantStatus: StatusRejected, wantEvents: []EventKind{EventStockRejected},
			want: map[string][3]int64{"p1": {10, 0, 0}, "p2": {3, 0, 0}},
		},
		{
			name:       "unknown product rejects",
			steps:      []step{{cmd: "reserve", order: "o1", items: []Item{{ProductID: "nope", Quantity: 1}}, want: Applied}},
			wantStatus: StatusRejected, wantEvents: []EventKind{EventStockRejected},
			want: map[string][3]int64{"p1": {10, 0, 0}, "p2": {3, 0, 0}},
		},
		{
			name:       "bad quantity rejects",
			steps:      []step{{cmd: "reserve", order: "o1", items: []Item{{ProductID: "p1", Quantity: 0}}, want: Applied}},
			wantStatus: StatusRejected, wantEvents: []EventKind{EventStockRejected},
			want: map[string][3]int64{"p1": {10, 0, 0}, "p2": {3, 0, 0}},
		},
		{
			name: "release of rejected order does nothing",
			steps: []step{
				{cmd: "reserve", order: "o1", items: []Item{{ProductID: "p2", Quantity: 9}}, want: Applied},
				{cmd: "release", order: "o1", want: Duplicate},
			},
			wantStatus: StatusRejected, wantEvents: []EventKind{EventStockRejected},
			want: map[string][3]int64{"p1": {10, 0, 0}, "p2": {3, 0, 0}},
		},
		{
			name: "release before reserve leaves a tombstone",
			steps: []step{
				{cmd: "release", order: "o1", want: Applied},
				{cmd: "reserve", order: "o1", items: two, want: Conflict},
			},
			wantStatus: StatusCancelled,
			want:       map[string][3]int64{"p1": {10, 0, 0}, "p2": {3, 0, 0}},
		},
		{
			name:       "sell before reserve is retried",
			steps:      []step{{cmd: "sell", order: "o1", wantErr: ErrReservationNotFound}},
			wantStatus: "",
			want:       map[string][3]int64{"p1": {10, 0, 0}, "p2": {3, 0, 0}},
		},
		{
			name: "merged lines of one product",
			steps: []step{
				{cmd: "reserve", order: "o1", items: []Item{{ProductID: "p2", Quantity: 2}, {ProductID: "p2", Quantity: 1}}, want: Applied},
			},
			wantStatus: StatusReserved, wantEvents: []EventKind{EventStockReserved},
			want: map[string][3]int64{"p1": {10, 0, 0}, "p2": {0, 3, 0}},
		},
	}
	for _, tt := range tests {
		{
			t.Run(tt.name, func(t *testing.T) {
				s := newMemStore(seedProducts()...)
				uc := NewStockUsecase(s, reservationFake{s}, s, s, nil)
				for _, st := range tt.steps {
					run(t, uc, st)
				}
				if r, ok := s.reservations["o1"]; ok != (tt.wantStatus != "") || r.Status != tt.wantStatus {
					t.Errorf("status = %q (exists %v), want %q", r.Status, ok, tt.wantStatus)
				}
				var kinds []EventKind
				for i, ev := range s.events {
					kinds = append(kinds, ev.Kind)
					if ev.Seq != int64(i+1) {
						t.Errorf("event %d seq = %d, want %d", i, ev.Seq, i+1)
					}
				}
				if len(kinds) != len(tt.wantEvents) {
					t.Fatalf("events = %v, want %v", kinds, tt.wantEvents)
				}
				for i := range kinds {
					if kinds[i] != tt.wantEvents[i] {
						t.Fatalf("events = %v, want %v", kinds, tt.wantEvents)
					}
				}
				for id, w := range tt.want {
					p := s.products[id]
					if got := [3]int64{p.Available, p.Reserved, p.Sold}; got != w {
						t.Errorf("%s: (available, reserved, sold) = %v, want %v", id, got, w)
					}
				}
				assertConserved(t, s)
			})
		}
	}
}

func assertConserved(t *testing.T, s *memStore) {
	t.Helper()
	for _, seed := range seedProducts() {
		p := s.products[seed.ID]
		if p.Total() != seed.Total() {
			t.Errorf("%s: total %d, want %d (stock not conserved)", seed.ID, p.Total(), seed.Total())
		}
	}
}

// A failing publish rolls the stock move back: nothing reserved, nothing
// announced, and a redelivery applies the command.
func TestStockUsecasePublishFailureRollsBack(t *testing.T) {
	s := newMemStore(seedProducts()...)
	uc := NewStockUsecase(s, reservationFake{s}, s, s, nil)
	s.failPublish = errors.New("outbox down")
	items := []Item{{ProductID: "p1", Quantity: 4}}
	if _, err := uc.Reserve(context.Background(), "o1", items); err == nil {
		t.Fatal("Reserve succeeded with a failing publisher")
	}
	if p := s.products["p1"]; p.Available != 10 || p.Reserved != 0 {
		t.Fatalf("after rollback p1 = %+v", p)
	}
	if len(s.reservations) != 0 {
		t.Fatalf("rollback left reservations %v", s.reservations)
	}
	s.failPublish = nil
	if out, err := uc.Reserve(context.Background(), "o1", items); err != nil || out != Applied {
		t.Fatalf("redelivery: %v %v", out, err)
	}
	assertConserved(t, s)
}

// Many orders competing for little stock: stock is conserved, never
// oversold, and each order is either reserved or rejected.
func TestStockUsecaseNoOversell(t *testing.T) {
	s := newMemStore(seedProducts()...)
	uc := NewStockUsecase(s, reservationFake{s}, s, s, nil)
	ctx := context.Background()
	reserved := 0
	for i := range 20 {
		order := string(rune('a' + i))
		if _, err := uc.Reserve(ctx, order, []Item{{ProductID: "p2", Quantity: 1}}); err != nil {
			t.Fatal(err)
		}
		if s.reservations[order].Status == StatusReserved {
			reserved++
		}
		if i%3 == 0 {
			if _, err := uc.Release(ctx, order); err != nil {
				t.Fatal(err)
			}
		}
	}
	p := s.products["p2"]
	if p.Available < 0 || p.Total() != 3 {
		t.Fatalf("p2 = %+v", p)
	}
	if reserved < 3 {
		t.Fatalf("only %d orders reserved", reserved)
	}
	assertConserved(t, s)
}

func TestStockUsecaseListClamp(t *testing.T) {
	s := newMemStore(seedProducts()...)
	uc := NewStockUsecase(s, reservationFake{s}, s, s, nil)
	ps, err := uc.ListProducts(context.Background(), "p1", 0)
	if err != nil || len(ps) != 1 || ps[0].ID != "p2" {
		t.Fatalf("ListProducts after p1 = %v, %v", ps, err)
	}
	if _, err := uc.GetProduct(context.Background(), "zz"); !errors.Is(err, ErrProductNotFound) {
		t.Fatalf("GetProduct(zz) err = %v", err)
	}
}
