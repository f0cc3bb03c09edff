package delay_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/delay"
	"github.com/tidemq/tide/pkg/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.Cleanup()
	os.Exit(code)
}

func testLogger() *slog.Logger {
	var w io.Writer = io.Discard
	if os.Getenv("TIDE_TEST_LOG") != "" {
		w = os.Stderr
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type env struct {
	ns     string
	broker *broker.Broker
	admin  *mqclient.Admin
	p      *mqclient.Producer
	s      *delay.Scheduler
}

var seq atomic.Int64

func fastOptions(ns string, extra ...mqclient.Option) []mqclient.Option {
	return append([]mqclient.Option{
		mqclient.WithNameServers(ns),
		mqclient.WithLogger(testLogger()),
		mqclient.WithRouteRefreshInterval(time.Second),
		mqclient.WithHeartbeatInterval(time.Second),
		mqclient.WithRebalanceInterval(500 * time.Millisecond),
		mqclient.WithCommitInterval(200 * time.Millisecond),
		mqclient.WithPollTimeout(2 * time.Second),
		mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
	}, extra...)
}

func startEnv(t *testing.T, schedOpts []delay.Option, opts ...func(*broker.Options)) *env {
	t.Helper()
	ns := nameservertest.Start(t)
	e := &env{ns: ns, broker: brokertest.Start(t, ns, opts...)}
	ctx := context.Background()
	var err error
	if e.admin, err = mqclient.NewAdmin(fastOptions(ns)...); err != nil {
		t.Fatal(err)
	}
	e.admin.Start(ctx)
	t.Cleanup(func() { e.admin.Shutdown(context.Background()) })
	if e.p, err = mqclient.NewProducer(fastOptions(ns)...); err != nil {
		t.Fatal(err)
	}
	e.p.Start(ctx)
	t.Cleanup(func() { e.p.Shutdown(context.Background()) })
	if e.s, err = delay.New(e.p, e.admin, append([]delay.Option{delay.WithLogger(testLogger())}, schedOpts...)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.s.Close() })
	serr := e.s.Start(ctx)
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

func (e *env) topic(t *testing.T, queues int) string {
	t.Helper()
	name := fmt.Sprintf("dly%d-%d", time.Now().UnixNano()%1e6, seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.admin.CreateTopic(ctx, name, mqclient.TopicConfig{Queues: queues}); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.WaitTopic(ctx, name); err != nil {
		t.Fatal(err)
	}
	return name
}

func (e *env) consumer(t *testing.T, group, topic string, h mqclient.Handler, opts ...mqclient.Option) {
	t.Helper()
	c, err := mqclient.NewPushConsumer(group, fastOptions(e.ns, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, "*", h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Shutdown(ctx)
	})
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
