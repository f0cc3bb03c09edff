package data

import (
	"testing"

	"github.com/tidemq/tide/services/kit/cleanup/cleanuptest"
)

// The wired cleanup deletes the tide_tx_fence and mq_dedup rows older than
// the default retention from the migrated database and keeps the recent
// ones; a retention below the floor is refused.
func TestCleanupDeletesOldRows(t *testing.T) {
	d := newTestData(t)
	cleanuptest.Wiring(t, d.Gorm(), cleanuptest.Tables{Fence: "tide_tx_fence", Dedup: "mq_dedup"}, NewCleanup, d)
}
