package delay_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/delay"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/pkg/tidetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.Cleanup()
	os.Exit(code)
}

// env is the shared in-process harness (pkg/tidetest) with a producer and
// a Scheduler on it.
type env struct {
	*tidetest.Env
	p *mqclient.Producer
	s *delay.Scheduler
}

func startEnv(t *testing.T, schedOpts []delay.Option, opts ...func(*broker.Options)) *env {
	t.Helper()
	e := &env{Env: tidetest.Start(t, opts...)}
	e.p = e.Producer(t)
	var err error
	if e.s, err = delay.New(e.p, e.Admin, append([]delay.Option{delay.WithLogger(tidetest.Logger())}, schedOpts...)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.s.Close() })
	serr := e.s.Start(context.Background())
	switch {
	case serr == nil:
	case errors.Is(serr, delay.ErrNoTimers) && !brokertest.Extensions():
		// A broker without Tide extensions behaves as RocketMQ 4.9: the
		// Scheduler must refuse timers at start, and does.
		t.Skipf("broker without timers (%s=off): Scheduler.Start refused as it must: %v", brokertest.ExtensionsEnv, serr)
	default:
		t.Fatalf("Scheduler.Start: %v", serr)
	}
	return e
}

// consumer starts a consumer of group on topic from the first message.
func (e *env) consumer(t *testing.T, group, topic string, h mqclient.Handler, opts ...mqclient.Option) {
	t.Helper()
	e.Consumer(t, group, topic, h, append([]mqclient.Option{mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst)}, opts...)...)
}

// arrivals records, before any handler logic, when each key's message
// arrived and when it was due, so that an early delivery cannot hide
// behind Handler's own ErrEarly refusal.
type arrivals struct {
	mu    sync.Mutex
	first map[string]time.Time
	due   map[string]time.Time
	n     map[string]int
	early []string
}

func newArrivals() *arrivals {
	return &arrivals{first: map[string]time.Time{}, due: map[string]time.Time{}, n: map[string]int{}}
}

func (a *arrivals) wrap(h mqclient.Handler) mqclient.Handler {
	return func(ctx context.Context, m *mqclient.MessageExt) error {
		now := time.Now()
		key := m.Properties[delay.PropKey]
		var ms int64
		fmt.Sscan(m.Properties[delay.PropAt], &ms)
		at := time.UnixMilli(ms)
		a.mu.Lock()
		if _, ok := a.first[key]; !ok {
			a.first[key] = now
			a.due[key] = at
		}
		a.n[key]++
		if now.Before(at) || m.StoreTimestamp.Before(at) {
			a.early = append(a.early, fmt.Sprintf("%s arrived %v (stored %v) before %v", key, now, m.StoreTimestamp, at))
		}
		a.mu.Unlock()
		if h == nil {
			return nil
		}
		return h(ctx, m)
	}
}

func (a *arrivals) has(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[key] > 0
}

func (a *arrivals) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.n)
}

// orders is the test service's database.
func openOrders(t *testing.T) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(mysql.Open(testenv.MariaDB(t).DSN), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	t.Cleanup(func() { sqlDB.Close() })
	for _, s := range []string{
		`CREATE TABLE orders (id VARCHAR(64) PRIMARY KEY, status VARCHAR(16) NOT NULL, deadline DATETIME(3) NOT NULL,
			timer_handle VARCHAR(255) NOT NULL DEFAULT '')`,
		`CREATE TABLE payments (order_id VARCHAR(64) PRIMARY KEY)`,
		`CREATE TABLE stock_releases (order_id VARCHAR(64) PRIMARY KEY)`,
		`CREATE TABLE refunds (order_id VARCHAR(64) PRIMARY KEY)`,
	} {
		if err := db.Exec(s).Error; err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// stillUnpaid and cancel are the order service's Check and Act.
func stillUnpaid(ctx context.Context, tx *gorm.DB, key string) (bool, error) {
	var st []string
	if err := tx.Raw("SELECT status FROM orders WHERE id = ? FOR UPDATE", key).Scan(&st).Error; err != nil {
		return false, err
	}
	return len(st) == 1 && st[0] == "UNPAID", nil
}

func cancelOrder(ctx context.Context, tx *gorm.DB, key string) error {
	if err := tx.Exec("UPDATE orders SET status = 'CANCELLED' WHERE id = ?", key).Error; err != nil {
		return err
	}
	return tx.Exec("INSERT INTO stock_releases (order_id) VALUES (?)", key).Error
}

func count(t *testing.T, db *gorm.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Raw(q, args...).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}
