package cleanup_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/services/kit/cleanup"
	"github.com/tidemq/tide/services/kit/cleanup/cleanuptest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// openDB returns a fresh MariaDB database with the pattern tables.
func openDB(t *testing.T) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(mysql.Open(testenv.MariaDB(t).DSN), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := txmsg.Migrate(ctx, db, ""); err != nil {
		t.Fatal(err)
	}
	if err := idempotent.Migrate(ctx, db, ""); err != nil {
		t.Fatal(err)
	}
	return db
}

func count(t *testing.T, db *gorm.DB, table string) int64 {
	t.Helper()
	var n int64
	if err := db.Raw("SELECT COUNT(*) FROM " + table).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// TestClean: rows older than the retention go, recent ones stay, in both
// tables (batches of one row: the pass goes on while batches are full);
// the counter adds what was deleted; a second pass deletes nothing.
func TestClean(t *testing.T) {
	db := openDB(t)
	reg := prometheus.NewRegistry()
	c, err := cleanup.New(db, cleanup.Options{FenceTable: txmsg.DefaultTable, DedupTable: idempotent.DefaultTable, BatchSize: 1, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if c.Retention() != cleanup.DefaultRetention {
		t.Fatalf("retention %v", c.Retention())
	}
	cleanuptest.Verify(t, db, c.Retention(), cleanuptest.Tables{Fence: txmsg.DefaultTable, Dedup: idempotent.DefaultTable}, c.Clean)
	for _, table := range []string{txmsg.DefaultTable, idempotent.DefaultTable} {
		if v := testutil.ToFloat64(cleanup.Deleted(c).WithLabelValues(table)); v != 1 {
			t.Errorf("%s: counter %v, want 1", table, v)
		}
	}
	if got, err := c.Clean(context.Background()); err != nil || got[txmsg.DefaultTable]+got[idempotent.DefaultTable] != 0 {
		t.Fatalf("second pass: %v %v", got, err)
	}
}

// TestRun: Run cleans at once (only the configured table), and its Kratos
// server stops cleanly.
func TestRun(t *testing.T) {
	db := openDB(t)
	cleanuptest.Exec(t, db, "INSERT INTO tide_tx_fence (tx_key, attempt, producer_group, status, created_at) "+
		"VALUES ('x', REPEAT('0', 32), 'g', 'committed', NOW(6) - INTERVAL 10 DAY)")
	cleanuptest.Exec(t, db, "INSERT INTO mq_dedup (consumer_group, handler, biz_key, fingerprint, status, created_at) "+
		"VALUES ('g', 'h', 'x', REPEAT('0', 32), 1, UTC_TIMESTAMP(6) - INTERVAL 10 DAY)")
	c, err := cleanup.New(db, cleanup.Options{DedupTable: idempotent.DefaultTable, Retention: 9 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := c.Server("cleanup")
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for count(t, db, idempotent.DefaultTable) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("Run did not clean at start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, txmsg.DefaultTable); n != 1 {
		t.Fatalf("fence table not configured but cleaned: %d rows", n)
	}
}

func TestOptions(t *testing.T) {
	db := &gorm.DB{}
	tests := []struct {
		name string
		db   *gorm.DB
		o    cleanup.Options
		is   error
	}{
		{"nil db", nil, cleanup.Options{DedupTable: "mq_dedup"}, cleanup.ErrInvalidOptions},
		{"no table", db, cleanup.Options{}, cleanup.ErrInvalidOptions},
		{"short retention", db, cleanup.Options{DedupTable: "mq_dedup", Retention: time.Hour}, cleanup.ErrInvalidOptions},
		{"negative interval", db, cleanup.Options{DedupTable: "mq_dedup", Interval: -time.Second}, cleanup.ErrInvalidOptions},
		{"bad table", db, cleanup.Options{DedupTable: "x y"}, idempotent.ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := cleanup.New(tt.db, tt.o); !errors.Is(err, tt.is) {
				t.Fatalf("error %v, want %v", err, tt.is)
			}
		})
	}
}
