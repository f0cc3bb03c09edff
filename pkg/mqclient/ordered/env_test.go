package ordered_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
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
	ns    string
	admin *mqclient.Admin
	db    *gorm.DB
	dsn   string
}

var seq atomic.Int64

func openDB(t testing.TB, dsn string) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(mysql.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

func startEnv(t *testing.T) *env {
	t.Helper()
	my := testenv.MariaDB(t)
	db := openDB(t, my.DSN)
	ctx := context.Background()
	if err := ordered.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(`CREATE TABLE applied (id BIGINT AUTO_INCREMENT PRIMARY KEY, biz_key VARCHAR(64) NOT NULL,
		version BIGINT NOT NULL, UNIQUE KEY uk (biz_key, version))`).Error; err != nil {
		t.Fatal(err)
	}
	ns := nameservertest.Start(t)
	brokertest.Start(t, ns)
	e := &env{ns: ns, db: db, dsn: my.DSN}
	a, err := mqclient.NewAdmin(e.fast()...)
	if err != nil {
		t.Fatal(err)
	}
	a.Start(ctx)
	t.Cleanup(func() { a.Shutdown(context.Background()) })
	e.admin = a
	return e
}

func fastOptions(ns string, extra ...mqclient.Option) []mqclient.Option {
	return append([]mqclient.Option{
		mqclient.WithNameServers(ns),
		mqclient.WithLogger(testLogger()),
		mqclient.WithRouteRefreshInterval(time.Second),
		mqclient.WithHeartbeatInterval(time.Second),
		mqclient.WithRebalanceInterval(500 * time.Millisecond),
		mqclient.WithCommitInterval(200 * time.Millisecond),
		mqclient.WithLockInterval(time.Second),
		mqclient.WithPollTimeout(2 * time.Second),
		mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
	}, extra...)
}

func (e *env) fast(extra ...mqclient.Option) []mqclient.Option { return fastOptions(e.ns, extra...) }

func (e *env) topic(t *testing.T, queues int) string {
	t.Helper()
	name := fmt.Sprintf("ord%d-%d", time.Now().UnixNano()%1e6, seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.admin.CreateTopic(ctx, name, mqclient.TopicConfig{Queues: queues, Order: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.WaitTopic(ctx, name); err != nil {
		t.Fatal(err)
	}
	return name
}

func (e *env) producer(t *testing.T) *mqclient.Producer {
	t.Helper()
	p, err := mqclient.NewProducer(e.fast()...)
	if err != nil {
		t.Fatal(err)
	}
	p.Start(context.Background())
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	return p
}

// consumer starts an ordered consumer; stop shuts it down (also run at
// the end of the test).
func (e *env) consumer(t *testing.T, group, topic string, h mqclient.Handler, opts ...mqclient.Option) (stop func()) {
	t.Helper()
	c, err := ordered.NewConsumer(group, e.fast(opts...)...)
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
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Shutdown(ctx)
	}
	t.Cleanup(stop)
	return stop
}

func send(t *testing.T, p *mqclient.Producer, topic, key string, version int64, body string) *mqclient.SendResult {
	t.Helper()
	res, err := p.Send(context.Background(), ordered.NewMessage(topic, key, version, []byte(body)))
	if err != nil {
		t.Errorf("send %s v%d: %v", key, version, err)
	}
	return res
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

func count(t *testing.T, db *gorm.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Raw(q, args...).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// checkApplied asserts the invariant: for every key the applied versions,
// in commit order, are exactly 1..want[key].
func checkApplied(t *testing.T, db *gorm.DB, want map[string]int64) {
	t.Helper()
	var rows []struct {
		BizKey  string
		Version int64
	}
	if err := db.Raw("SELECT biz_key, version FROM applied ORDER BY id").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	next := map[string]int64{}
	for _, r := range rows {
		if r.Version != next[r.BizKey]+1 {
			t.Errorf("key %s: applied version %d after %d", r.BizKey, r.Version, next[r.BizKey])
		}
		next[r.BizKey] = r.Version
	}
	for k, v := range want {
		if next[k] != v {
			t.Errorf("key %s: applied up to %d, want %d", k, next[k], v)
		}
	}
	if len(next) != len(want) {
		t.Errorf("%d keys applied, want %d", len(next), len(want))
	}
}
