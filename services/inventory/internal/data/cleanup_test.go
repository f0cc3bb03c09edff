package data

import (
	"testing"

	"github.com/tidemq/tide/services/kit/cleanup/cleanuptest"
)

// The wired cleanup deletes the mq_dedup rows older than the default
// retention from the migrated database and keeps the recent ones; a
// retention below the floor is refused.
func TestCleanupDeletesOldRows(t *testing.T) {
	d, _ := newTestData(t)
	cleanuptest.Wiring(t, d.Gorm(), cleanuptest.Tables{Dedup: "mq_dedup"}, NewCleanup, d)
}
