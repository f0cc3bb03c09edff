package data

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/kit/cleanup"
	"github.com/tidemq/tide/services/kit/cleanup/cleanuptest"
)

// The wired cleanup deletes the mq_dedup rows older than the default
// retention from the migrated database and keeps the recent ones; a
// retention below the floor is refused.
func TestCleanupDeletesOldRows(t *testing.T) {
	d, _ := newTestData(t)
	c, err := NewCleanup(&conf.Cleanup{}, d, prometheus.NewRegistry(), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	cleanuptest.Verify(t, d.Gorm(), cleanup.DefaultRetention, cleanuptest.Tables{Dedup: "mq_dedup"}, c.Cleaner.Clean)
	short := &conf.Cleanup{Retention: durationpb.New(time.Hour)}
	if _, err := NewCleanup(short, d, prometheus.NewRegistry(), slog.Default()); !errors.Is(err, cleanup.ErrInvalidOptions) {
		t.Fatalf("retention 1h: %v, want ErrInvalidOptions", err)
	}
}
