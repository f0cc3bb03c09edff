package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDispatchSurvivesUnbackedPage: a consume-queue page the file system
// cannot back (here: its file truncated under the mapping; in production:
// a sparse file on a full disk) makes the dispatcher's write fault
// (SIGBUS). The store must not crash: dispatching pauses at that record
// and resumes once the page can be written (chaos finding 7: a slave on a
// full disk died with SIGBUS in the dispatcher). Without the recovery the
// test binary itself dies.
func TestDispatchSurvivesUnbackedPage(t *testing.T) {
	c := testConfig(t)
	c.MappedFileSizeConsumeQueue = 20 * 1000 // five pages
	s := openStore(t, c)
	const onFirstPage = 4096 / 20 // units 0-203 are on the file's first page
	for range onFirstPage + 1 {
		put(t, s, newMsg("T", 0, "first page", nil))
	}
	if err := s.WaitDispatched(context.Background(), s.MaxPhyOffset()); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(c.StorePathRootDir, "consumequeue", "T", "0", "*"))
	if err != nil || len(files) != 1 {
		t.Fatalf("consume queue files %v, %v", files, err)
	}
	// Only the first page stays backed: the next unit's page faults, as a
	// new page of a sparse file does on a full disk.
	if err := os.Truncate(files[0], 4096); err != nil {
		t.Fatal(err)
	}
	put(t, s, newMsg("T", 0, "second page", nil))
	// The record cannot be dispatched while its page faults.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err = s.WaitDispatched(ctx, s.MaxPhyOffset())
	cancel()
	if err == nil {
		t.Fatal("dispatched a record whose consume-queue page cannot be written")
	}
	if err := os.Truncate(files[0], int64(c.MappedFileSizeConsumeQueue)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitDispatched(ctx, s.MaxPhyOffset()); err != nil {
		t.Fatalf("dispatching did not resume: %v", err)
	}
	units, err := s.ReadQueue("T", 0, onFirstPage+1, 1)
	if err != nil || len(units) != 1 || units[0].Size == 0 {
		t.Fatalf("unit 1 after resuming: %v, %v", units, err)
	}
}
