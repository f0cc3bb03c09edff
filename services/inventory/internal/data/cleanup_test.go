package data

import (
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tidemq/tide/services/kit/cleanup"
	"github.com/tidemq/tide/services/kit/cleanup/cleanuptest"
	kitconf "github.com/tidemq/tide/services/kit/conf"
)

// The wired cleanup deletes the mq_dedup rows older than the default
// retention from the migrated database and keeps the recent ones; a
// retention below the floor is refused.
func TestCleanupDeletesOldRows(t *testing.T) {
	d, _ := newTestData(t)
	cleanuptest.Wiring(t, d.Gorm(), cleanuptest.Tables{Dedup: "mq_dedup"}, cleanup.DefaultRetention, cleanup.ErrInvalidOptions,
		func(r *durationpb.Duration) (*cleanup.Service, error) {
			return NewCleanup(&kitconf.Cleanup{Retention: r}, d, prometheus.NewRegistry(), slog.Default())
		})
}
