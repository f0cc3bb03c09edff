package data

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/services/inventory/internal/biz"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	kitconf "github.com/tidemq/tide/services/kit/conf"
)

// newTestData returns Data on a fresh migrated MariaDB database and a
// private Redis.
func newTestData(t *testing.T) (*Data, *testenv.RedisServer) {
	t.Helper()
	db := testenv.MariaDB(t)
	r := testenv.Redis(t)
	d, cleanup, err := NewData(&kitconf.Data{
		Database: &kitconf.Data_Database{Source: db.DSN, Migrate: proto.Bool(true)},
		Redis:    &kitconf.Data_Redis{Addr: r.Addr()},
	}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return d, r
}

func newTestUsecase(t *testing.T) (*biz.StockUsecase, *Data, *Outbox, *testenv.RedisServer) {
	t.Helper()
	d, r := newTestData(t)
	ob := NewOutbox(d, nil, nil, &conf.Messaging{}, slog.Default())
	uc := biz.NewStockUsecase(NewProductRepo(d), NewReservationRepo(d), d, ob, slog.Default())
	return uc, d, ob, r
}

func TestDataMigrateSeedsProductsOnce(t *testing.T) {
	db := testenv.MariaDB(t)
	for range 2 { // a second start finds nothing to do
		if err := schema.Up(db.DSN); err != nil {
			t.Fatal(err)
		}
	}
	d, cleanup, err := NewData(&kitconf.Data{Database: &kitconf.Data_Database{Source: db.DSN, Migrate: proto.Bool(true)},
		Redis: &kitconf.Data_Redis{Addr: testenv.Redis(t).Addr()}}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	ps, err := NewProductRepo(d).List(context.Background(), "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 5 || ps[0].ID != "p-apple" || ps[0].Available != 1000 {
		t.Fatalf("seeded products = %+v", ps)
	}
	if err := d.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func stock(t *testing.T, d *Data, id string) [3]int64 {
	t.Helper()
	p, err := NewProductRepo(d).Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return [3]int64{p.Available, p.Reserved, p.Sold}
}

func TestStockOnMariaDBLifecycle(t *testing.T) {
	uc, d, ob, _ := newTestUsecase(t)
	ctx := context.Background()
	items := []biz.Item{{ProductID: "p-mug", Quantity: 2}, {ProductID: "p-apple", Quantity: 5}}
	steps := []struct {
		name  string
		do    func() (biz.Outcome, error)
		want  biz.Outcome
		mug   [3]int64
		apple [3]int64
	}{
		{"reserve", func() (biz.Outcome, error) { return uc.Reserve(ctx, "o1", items) }, biz.Applied, [3]int64{48, 2, 0}, [3]int64{995, 5, 0}},
		{"reserve again", func() (biz.Outcome, error) { return uc.Reserve(ctx, "o1", items) }, biz.Duplicate, [3]int64{48, 2, 0}, [3]int64{995, 5, 0}},
		{"sell", func() (biz.Outcome, error) { return uc.Sell(ctx, "o1") }, biz.Applied, [3]int64{48, 0, 2}, [3]int64{995, 0, 5}},
		{"release after sell", func() (biz.Outcome, error) { return uc.Release(ctx, "o1") }, biz.Conflict, [3]int64{48, 0, 2}, [3]int64{995, 0, 5}},
		{"reserve o2", func() (biz.Outcome, error) { return uc.Reserve(ctx, "o2", items) }, biz.Applied, [3]int64{46, 2, 2}, [3]int64{990, 5, 5}},
		{"release o2", func() (biz.Outcome, error) { return uc.Release(ctx, "o2") }, biz.Applied, [3]int64{48, 0, 2}, [3]int64{995, 0, 5}},
		{"reject o3", func() (biz.Outcome, error) {
			return uc.Reserve(ctx, "o3", []biz.Item{{ProductID: "p-rare", Quantity: 4}})
		}, biz.Applied, [3]int64{48, 0, 2}, [3]int64{995, 0, 5}},
	}
	for _, s := range steps {
		got, err := s.do()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got != s.want {
			t.Fatalf("%s: outcome %v, want %v", s.name, got, s.want)
		}
		if m, a := stock(t, d, "p-mug"), stock(t, d, "p-apple"); m != s.mug || a != s.apple {
			t.Fatalf("%s: mug %v apple %v, want %v %v", s.name, m, a, s.mug, s.apple)
		}
	}
	// StockReserved(o1), StockReserved(o2), StockReleased(o2), StockRejected(o3).
	var rows []outboxRow
	if err := d.db.Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	want := []string{"o1/StockReserved/1", "o2/StockReserved/1", "o2/StockReleased/2", "o3/StockRejected/1"}
	if len(rows) != len(want) {
		t.Fatalf("outbox has %d rows, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		if got := fmt.Sprintf("%s/%s/%d", r.ShardingKey, r.Tag, r.Seq); got != want[i] {
			t.Errorf("outbox row %d = %s, want %s", i, got, want[i])
		}
	}
	if n, err := ob.Pending(ctx); err != nil || n != 4 {
		t.Fatalf("Pending = %d, %v", n, err)
	}
}

// With Redis killed, commands still apply once: the reservation's state
// machine in the database decides (Redis is only the consumer's fast path).
func TestStockOnMariaDBRedisOutage(t *testing.T) {
	uc, d, _, r := newTestUsecase(t)
	ctx := context.Background()
	r.Stop()
	items := []biz.Item{{ProductID: "p-rare", Quantity: 1}}
	for i := range 3 {
		out, err := uc.Reserve(ctx, "o1", items)
		if err != nil {
			t.Fatal(err)
		}
		if (i == 0) != (out == biz.Applied) {
			t.Fatalf("delivery %d: %v", i, out)
		}
	}
	if got := stock(t, d, "p-rare"); got != [3]int64{2, 1, 0} {
		t.Fatalf("p-rare = %v", got)
	}
}

// Concurrent orders for a scarce product never oversell and conserve
// stock; concurrent duplicates of one order apply once.
func TestStockOnMariaDBConcurrentNoOversell(t *testing.T) {
	uc, d, _, _ := newTestUsecase(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		for range 2 { // every order delivered twice, concurrently
			wg.Go(func() {
				// Retry like a consumer: duplicate-key losers and deadlock
				// victims succeed (as duplicates) on redelivery.
				var err error
				for range 10 {
					if _, err = uc.Reserve(ctx, fmt.Sprintf("o%d", i), []biz.Item{{ProductID: "p-rare", Quantity: 1}, {ProductID: "p-mug", Quantity: 1}}); err == nil {
						return
					}
				}
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("still failing after retries: %v", err)
	}
	rare, mug := stock(t, d, "p-rare"), stock(t, d, "p-mug")
	if rare != [3]int64{0, 3, 0} {
		t.Fatalf("p-rare = %v, want all 3 reserved", rare)
	}
	if mug[0]+mug[1] != 50 || mug[1] != 3 {
		t.Fatalf("p-mug = %v", mug)
	}
	var reserved int64
	d.db.Model(&reservationRow{}).Where("status = ?", "RESERVED").Count(&reserved)
	if reserved != 3 {
		t.Fatalf("%d RESERVED reservations, want 3", reserved)
	}
}

func TestOutboxPublishNeedsTransaction(t *testing.T) {
	d, _ := newTestData(t)
	ob := NewOutbox(d, nil, nil, &conf.Messaging{}, slog.Default())
	ev := &biz.Event{Kind: biz.EventStockReserved, OrderID: "o1", Seq: 1}
	if err := ob.Publish(context.Background(), ev); !errors.Is(err, ErrNoTransaction) {
		t.Fatalf("Publish outside a tx: %v", err)
	}
	boom := errors.New("boom")
	err := d.InTx(context.Background(), func(ctx context.Context) error {
		if err := ob.Publish(ctx, ev); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if n, _ := ob.Pending(context.Background()); n != 0 {
		t.Fatalf("a rolled-back publish left %d outbox rows", n)
	}
}

// Every connection runs at READ COMMITTED (the consumers' transactions
// are opened by pkg/mqclient/idempotent, not by InTx).
func TestDataSessionsReadCommitted(t *testing.T) {
	d, _ := newTestData(t)
	var level string
	err := d.Gorm().Raw("SELECT @@transaction_isolation").Scan(&level).Error
	if err != nil {
		err = d.Gorm().Raw("SELECT @@tx_isolation").Scan(&level).Error
	}
	if err != nil || level != "READ-COMMITTED" {
		t.Fatalf("isolation %q, %v", level, err)
	}
}
