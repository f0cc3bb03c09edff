// Package cleanuptest checks a periodic cleanup (package cleanup, or a
// service's wiring of it) against a real database: it seeds the pattern
// tables with rows older and younger than the retention and verifies that
// one pass deletes exactly the old ones.
package cleanuptest

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/durationpb"
	"gorm.io/gorm"

	"github.com/tidemq/tide/services/kit/cleanup"
	kitconf "github.com/tidemq/tide/services/kit/conf"
)

// Tables names the tables a cleanup covers; "" leaves one out.
type Tables struct {
	// Fence is a txmsg fence table (txmsg.Schema's columns).
	Fence string
	// Dedup is an idempotent dedup table (idempotent.Schema's columns).
	Dedup string
}

// Verify seeds each table of ts with the rows "old" (created a day more
// than retention ago) and "new" (an hour ago), with the clock each pattern
// writes created_at with (txmsg NOW(6), idempotent UTC_TIMESTAMP(6)),
// calls clean once and fails t unless clean reported one row deleted per
// table and only "new" is left. The tables must exist and be empty.
func Verify(t testing.TB, db *gorm.DB, retention time.Duration, ts Tables,
	clean func(context.Context) (map[string]int64, error)) {
	t.Helper()
	ages := map[string]time.Duration{"old": retention + 24*time.Hour, "new": time.Hour}
	for key, age := range ages {
		if ts.Fence != "" {
			Exec(t, db, "INSERT INTO "+ts.Fence+" (tx_key, attempt, producer_group, status, created_at) "+
				"VALUES (?, REPEAT('0', 32), 'g', 'committed', NOW(6) - INTERVAL ? MICROSECOND)", key, age.Microseconds())
		}
		if ts.Dedup != "" {
			Exec(t, db, "INSERT INTO "+ts.Dedup+" (consumer_group, handler, biz_key, fingerprint, status, created_at) "+
				"VALUES ('g', 'h', ?, REPEAT('0', 32), 1, UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND)", key, age.Microseconds())
		}
	}
	deleted, err := clean(context.Background())
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	for table, col := range map[string]string{ts.Fence: "tx_key", ts.Dedup: "biz_key"} {
		if table == "" {
			continue
		}
		var left []string
		if err := db.Raw("SELECT " + col + " FROM " + table).Scan(&left).Error; err != nil {
			t.Fatal(err)
		}
		if deleted[table] != 1 || !slices.Equal(left, []string{"new"}) {
			t.Errorf("%s: deleted %d, left %v; want 1 deleted and [new] left", table, deleted[table], left)
		}
	}
}

// Exec runs a statement on db and fails t on an error.
func Exec(t testing.TB, db *gorm.DB, sql string, args ...any) {
	t.Helper()
	if err := db.Exec(sql, args...).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// Wiring checks a service's wiring of its cleanup: newCleanup is the
// wire provider of the service's data layer (NewCleanup: the service's
// kitconf.Cleanup, its data d, a registry and a logger), called with a
// fresh registry and slog.Default(). With retention unset it passes Verify
// with cleanup.DefaultRetention; with a retention of an hour, below the
// floor, it fails with cleanup.ErrInvalidOptions.
func Wiring[D any](t testing.TB, db *gorm.DB, ts Tables,
	newCleanup func(*kitconf.Cleanup, D, prometheus.Registerer, *slog.Logger) (*cleanup.Service, error), d D) {
	t.Helper()
	build := func(retention *durationpb.Duration) (*cleanup.Service, error) {
		return newCleanup(&kitconf.Cleanup{Retention: retention}, d, prometheus.NewRegistry(), slog.Default())
	}
	s, err := build(nil)
	if err != nil {
		t.Fatal(err)
	}
	Verify(t, db, cleanup.DefaultRetention, ts, s.Clean)
	if _, err := build(durationpb.New(time.Hour)); !errors.Is(err, cleanup.ErrInvalidOptions) {
		t.Fatalf("retention 1h: %v, want %v", err, cleanup.ErrInvalidOptions)
	}
}
