package ordered_test

import (
	"context"
	"os"
	"testing"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/pkg/tidetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.Cleanup()
	os.Exit(code)
}

// env is the shared in-process harness (pkg/tidetest) and a MariaDB
// database with the guard's table and the test's applied table.
type env struct {
	*tidetest.Env
	db  *gorm.DB
	dsn string
}

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
	if err := ordered.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(`CREATE TABLE applied (id BIGINT AUTO_INCREMENT PRIMARY KEY, biz_key VARCHAR(64) NOT NULL,
		version BIGINT NOT NULL, UNIQUE KEY uk (biz_key, version))`).Error; err != nil {
		t.Fatal(err)
	}
	return &env{Env: tidetest.Start(t), db: db, dsn: my.DSN}
}

// fast are the harness's options, consuming from the first message.
func (e *env) fast(extra ...mqclient.Option) []mqclient.Option {
	return e.Options(append([]mqclient.Option{mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst)}, extra...)...)
}

// topic creates a fresh ordered topic.
func (e *env) topic(t *testing.T, queues int) string {
	t.Helper()
	return e.CreateTopic(t, "ord", mqclient.TopicConfig{Queues: queues, Order: true})
}

// consumer starts an ordered consumer; stop shuts it down (also run at
// the end of the test).
func (e *env) consumer(t *testing.T, group, topic string, h mqclient.Handler, opts ...mqclient.Option) (stop func()) {
	t.Helper()
	c, err := ordered.NewConsumer(group, e.fast(opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return tidetest.StartConsumer(t, c, topic, h)
}

func send(t *testing.T, p *mqclient.Producer, topic, key string, version int64, body string) *mqclient.SendResult {
	t.Helper()
	res, err := p.Send(context.Background(), ordered.NewMessage(topic, key, version, []byte(body)))
	if err != nil {
		t.Errorf("send %s v%d: %v", key, version, err)
	}
	return res
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
