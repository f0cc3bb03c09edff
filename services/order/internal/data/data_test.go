package data

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/testenv"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/order/internal/biz"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func newTestData(t *testing.T) *Data {
	t.Helper()
	db := testenv.MariaDB(t)
	rdb := testenv.Redis(t)
	d, cleanup, err := NewData(&kitconf.Data{
		Database: &kitconf.Data_Database{Driver: "mysql", Source: db.DSN},
		Redis:    &kitconf.Data_Redis{Addr: rdb.Addr()},
	}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return d
}

func TestMigrateTwice(t *testing.T) {
	db := testenv.MariaDB(t)
	for i := range 2 {
		if err := schema.Up(db.DSN); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if err := schema.Up("not a dsn"); err == nil {
		t.Fatal("bad DSN: no error")
	}
}

func TestDataReady(t *testing.T) {
	d := newTestData(t)
	if err := d.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func sampleOrder(id string, now time.Time) *biz.Order {
	return &biz.Order{ID: id, UserID: "u1", Status: biz.StatusCreated, Seq: 1, Total: 350,
		Items:    []biz.Item{{ProductID: "p1", Quantity: 2, UnitPrice: 100}, {ProductID: "p2", Quantity: 1, UnitPrice: 150}},
		CancelAt: now.Add(time.Minute), CancelTimer: `{"id":"x"}`, CreatedAt: now, UpdatedAt: now}
}

func TestOrderRepo(t *testing.T) {
	d := newTestData(t)
	repo := NewOrderRepo(d, slog.Default())
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	o := sampleOrder("00000000-0000-0000-0000-000000000001", now)
	if err := repo.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	if err := repo.Create(ctx, o); err == nil {
		t.Fatal("duplicate insert: no error")
	}
	got, err := repo.Get(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.UserID != o.UserID || got.Total != o.Total || len(got.Items) != 2 || got.Items[1] != o.Items[1] ||
		!got.CancelAt.Equal(o.CancelAt) || !got.CreatedAt.Equal(now) || got.CancelTimer != o.CancelTimer {
		t.Fatalf("Get = %+v, want %+v", got, o)
	}
	if _, err := repo.Get(ctx, "missing"); !errors.Is(err, biz.ErrOrderNotFound) {
		t.Fatalf("missing: %v", err)
	}

	tests := []struct {
		name  string
		topic string
		seq   int64
	}{
		{"own event", "order-events", 1},
		{"stock event", "inventory-events", 1},
		{"payment event", "payment-events", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := d.InTx(ctx, func(ctx context.Context) error {
				return repo.AddTimeline(ctx, &biz.TimelineEntry{OrderID: o.ID, Event: "E", Topic: tt.topic, Seq: tt.seq,
					Status: biz.StatusCreated, At: now})
			})
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := repo.HasEvent(ctx, o.ID, tt.topic, tt.seq); err != nil || !ok {
				t.Fatalf("HasEvent = %v %v", ok, err)
			}
			if ok, _ := repo.HasEvent(ctx, o.ID, tt.topic, tt.seq+1); ok {
				t.Fatal("HasEvent of the next seq")
			}
			if err := repo.AddTimeline(ctx, &biz.TimelineEntry{OrderID: o.ID, Event: "E", Topic: tt.topic, Seq: tt.seq,
				At: now}); err == nil {
				t.Fatal("duplicate timeline entry: no error")
			}
		})
	}
	tl, err := repo.Timeline(ctx, o.ID)
	if err != nil || len(tl) != 3 || tl[0].Topic != "order-events" || !tl[0].At.Equal(now) {
		t.Fatalf("Timeline = %+v %v", tl, err)
	}

	err = d.InTx(ctx, func(ctx context.Context) error {
		o, err := repo.Lock(ctx, o.ID)
		if err != nil {
			return err
		}
		o.Status, o.Seq, o.PaymentID, o.UpdatedAt = biz.StatusPaid, 2, "pay1", now.Add(time.Second)
		return repo.Update(ctx, o)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := repo.Get(ctx, o.ID); got.Status != biz.StatusPaid || got.Seq != 2 || got.PaymentID != "pay1" {
		t.Fatalf("after update %+v", got)
	}
	if err := repo.Update(ctx, sampleOrder("missing", now)); !errors.Is(err, biz.ErrOrderNotFound) {
		t.Fatalf("update missing: %v", err)
	}
}

func TestOrderRepoOverdue(t *testing.T) {
	d := newTestData(t)
	repo := NewOrderRepo(d, slog.Default())
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, tc := range []struct {
		id     string
		status biz.Status
		due    time.Duration
	}{
		{"a", biz.StatusCreated, -time.Minute},
		{"b", biz.StatusReserved, -time.Second},
		{"c", biz.StatusPaid, -time.Minute},
		{"d", biz.StatusCreated, time.Minute},
	} {
		o := sampleOrder(tc.id, now)
		o.Status, o.CancelAt = tc.status, now.Add(tc.due)
		if err := repo.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := repo.Overdue(ctx, now, 10)
	if err != nil || len(ids) != 2 || ids[0] != "a" || ids[1] != "b" {
		t.Fatalf("Overdue = %v %v", ids, err)
	}
	if ids, _ := repo.Overdue(ctx, now, 1); len(ids) != 1 {
		t.Fatalf("limit: %v", ids)
	}
}

func TestDataInTxRollback(t *testing.T) {
	d := newTestData(t)
	repo := NewOrderRepo(d, slog.Default())
	ctx := context.Background()
	boom := errors.New("boom")
	err := d.InTx(ctx, func(ctx context.Context) error {
		if err := repo.Create(ctx, sampleOrder("rolled-back", time.Now())); err != nil {
			return err
		}
		// A nested InTx joins the outer transaction.
		return d.InTx(ctx, func(ctx context.Context) error { return boom })
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, err := repo.Get(ctx, "rolled-back"); !errors.Is(err, biz.ErrOrderNotFound) {
		t.Fatalf("rolled back order exists: %v", err)
	}
}
