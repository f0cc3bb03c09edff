package idempotent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"

	drv "github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/pkg/tidetest"
)

const (
	startBalance = 1_000_000
	amount       = 10
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.Cleanup()
	os.Exit(code)
}

// fixture is a real MariaDB database (dedup table, two accounts, an
// effects ledger) and a real Redis.
type fixture struct {
	dsn   string
	db    *gorm.DB
	redis *testenv.RedisServer
	rdb   *redis.Client
	reg   *prometheus.Registry
}

// withLockWait sets the session's innodb_lock_wait_timeout (seconds).
func withLockWait(t testing.TB, dsn, secs string) string {
	cfg, err := drv.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["innodb_lock_wait_timeout"] = secs
	return cfg.FormatDSN()
}

func openDB(t testing.TB, dsn string) *gorm.DB {
	db, err := gorm.Open(mysql.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	sqlDB.SetMaxOpenConns(40)
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	my := testenv.MariaDB(t)
	f := &fixture{dsn: withLockWait(t, my.DSN, "3"), reg: prometheus.NewRegistry()}
	f.db = openDB(t, f.dsn)
	ctx := context.Background()
	if err := Migrate(ctx, f.db, ""); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 1000000), (2, 0)",
		// n counts applications; no unique guard here, so a double
		// effect shows as n = 2.
		"CREATE TABLE effects (biz_key VARBINARY(255) PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB",
	} {
		if err := f.db.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	f.redis = testenv.Redis(t)
	f.rdb = newRedis(f.redis.Addr())
	t.Cleanup(func() { f.rdb.Close() })
	return f
}

// testRedisTimeout is the RedisTimeout of the tests' consumers. They
// count what each delivery found in Redis (claims, hits, fallbacks), and
// past RedisTimeout a call counts as Redis failing: on a loaded 2-core
// machine a healthy call (the first one dials and loads the scripts)
// took longer than the 200 ms default now and then, which made one
// fallback too many (TestRedisOutage), one Redis hit too few
// (TestRedisLostKeys) or a claim missing. The client's own timeouts
// (newRedis: dial 300 ms, read 3 s) still bound a call, and a stopped
// Redis fails at once. The tests of RedisTimeout itself set theirs.
const testRedisTimeout = 10 * time.Second

func newRedis(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 300 * time.Millisecond, MaxRetries: -1})
}

// transfer is the effect under test: it moves amount from account 1 to
// account 2 and counts the application of the key, all through tx.
func transfer(_ context.Context, tx *gorm.DB, m *mqclient.MessageExt) error {
	for _, q := range []string{
		"UPDATE accounts SET balance = balance - 10 WHERE id = 1",
		"UPDATE accounts SET balance = balance + 10 WHERE id = 2",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return tx.Exec("INSERT INTO effects (biz_key, n) VALUES (?, 1) ON DUPLICATE KEY UPDATE n = n + 1", m.Key()).Error
}

func (f *fixture) consumer(t testing.TB, rdb redis.UniversalClient, o Options) *Consumer {
	t.Helper()
	if o.Group == "" {
		o.Group = "payments"
	}
	if o.Handler == "" {
		o.Handler = "transfer"
	}
	if o.Logger == nil {
		o.Logger = tidetest.Logger()
	}
	if o.Registerer == nil {
		o.Registerer = f.reg
	}
	if o.RedisTimeout == 0 {
		o.RedisTimeout = testRedisTimeout
	}
	c, err := New(f.db, rdb, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newMsgID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func msg(key, body string) *mqclient.MessageExt {
	return &mqclient.MessageExt{Message: mqclient.Message{Topic: "payments", Keys: []string{key}, Body: []byte(body)},
		MsgID: newMsgID()}
}

// redeliver calls h until it acknowledges m, as the broker's retries
// would, and fails on errors that are not retryable by contract.
func redeliver(t testing.TB, h mqclient.Handler, m *mqclient.MessageExt, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := h(context.Background(), m)
		if err == nil {
			return
		}
		if !errors.Is(err, ErrInProgress) && !errors.Is(err, ErrTransient) && !errors.Is(err, ErrRedisUnavailable) {
			t.Errorf("key %s: unexpected error: %v", m.Key(), err)
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("key %s: not acknowledged within %v: %v", m.Key(), within, err)
			return
		}
		time.Sleep(10 * time.Millisecond) // retry backoff, not synchronisation
	}
}

// checkInvariant: every key applied exactly once, nothing else applied,
// balances conserved.
func (f *fixture) checkInvariant(t testing.TB, keys []string) {
	t.Helper()
	type row struct {
		BizKey string
		N      int
	}
	var rows []row
	if err := f.db.Raw("SELECT biz_key, n FROM effects").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, r := range rows {
		got[r.BizKey] = r.N
		if r.N != 1 {
			t.Errorf("key %s applied %d times", r.BizKey, r.N)
		}
	}
	for _, k := range keys {
		if got[k] != 1 {
			t.Errorf("key %s applied %d times, want 1", k, got[k])
		}
	}
	if len(got) != len(keys) {
		t.Errorf("%d keys applied, want %d", len(got), len(keys))
	}
	var b1, b2 int64
	f.db.Raw("SELECT balance FROM accounts WHERE id = 1").Scan(&b1)
	f.db.Raw("SELECT balance FROM accounts WHERE id = 2").Scan(&b2)
	if b1+b2 != startBalance || b2 != int64(amount*len(keys)) {
		t.Errorf("balances %d + %d: want %d moved of %d", b1, b2, amount*len(keys), startBalance)
	}
}

func (f *fixture) count(t testing.TB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := f.db.Raw(q, args...).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *fixture) metric(name string, labels ...string) float64 {
	mfs, _ := f.reg.Gather()
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != "idempotent_"+name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				ok := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						ok = true
					}
				}
				if !ok {
					continue next
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
