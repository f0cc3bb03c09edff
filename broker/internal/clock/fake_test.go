//go:build chaosclock

package clock

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFakeOffset: a chaosclock build adds the offset read from the file to
// every Now, and strips the monotonic reading so readings compare by wall
// clock.
func TestFakeOffset(t *testing.T) {
	t.Cleanup(func() { Set(0) })
	path := filepath.Join(t.TempDir(), "offset")
	for _, d := range []time.Duration{2 * time.Minute, -5 * time.Second, 0} {
		if err := WriteOffset(path, d); err != nil {
			t.Fatal(err)
		}
		poll(path)
		before := time.Now().Round(0).Add(d)
		got := Now()
		after := time.Now().Round(0).Add(d)
		if got.Before(before) || got.After(after) {
			t.Fatalf("offset %v: Now() = %v, want between %v and %v", d, got, before, after)
		}
		if got != got.Round(0) {
			t.Fatalf("offset %v: Now() carries a monotonic reading", d)
		}
	}
	// a bad file keeps the offset in force
	Set(time.Minute)
	if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	poll(path)
	if off := Now().Sub(time.Now().Round(0)); off < 59*time.Second {
		t.Fatalf("a bad offset file changed the offset to %v", off)
	}
}
