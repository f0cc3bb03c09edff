//go:build chaosclock

package clock

import (
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// Faked reports whether Now can be offset (the chaosclock build).
const Faked = true

// PollInterval is how often a chaosclock build re-reads its offset file: a
// new offset is in force at most this long after the file changed.
const PollInterval = 50 * time.Millisecond

var offset atomic.Int64 // nanoseconds added to the wall clock

func init() {
	path := os.Getenv(OffsetFileEnv)
	if path == "" {
		return
	}
	poll(path)
	go func() {
		for range time.Tick(PollInterval) {
			poll(path)
		}
	}()
}

func poll(path string) {
	d, err := ReadOffset(path)
	if err != nil {
		slog.Warn("clock: offset file unreadable, offset kept", "path", path, "offset", time.Duration(offset.Load()), "err", err)
		return
	}
	if old := offset.Swap(int64(d)); old != int64(d) {
		slog.Info("clock: wall clock offset changed", "from", time.Duration(old), "to", d)
	}
}

// Set sets the offset directly (tests of a chaosclock build).
func Set(d time.Duration) { offset.Store(int64(d)) }

// Now returns the wall clock plus the offset. The monotonic reading is
// stripped: a time from Now compares with another by wall clock, as two
// readings of a stepped machine clock would in a program that keeps Unix
// times (and as every caller of Now does: it keeps Unix milliseconds).
func Now() time.Time { return time.Now().Round(0).Add(time.Duration(offset.Load())) }
