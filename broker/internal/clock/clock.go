// Package clock is the broker's wall clock: every reading of the time of
// day that has a meaning beyond "how long did this take" goes through
// Now — store timestamps, delay-level and timer due times, the age of a
// half transaction message, file names and expiry by time, idle producer
// state, data versions, times sent to other daemons.
//
// Elapsed-time measurements (time.Since for timeouts, lock and heartbeat
// expiry, deadlines on connections) keep using time.Now directly: Go
// measures them on the monotonic clock, which a step of the machine's
// wall clock (an NTP correction, an operator's date -s) does not move.
// The distinction is the one the machine makes: a clock jump moves what
// Now returns, never how long a timeout waits.
//
// A production build's Now is time.Now. Built with the chaosclock tag (the
// chaos tool's brokers are), Now adds an offset read from the file named
// by OffsetFileEnv, so a campaign can step one running broker's clock
// forwards or backwards without a network API (docs/reliability.md).
// (Not "faketime": that tag is the Go runtime's own, the playground's
// fake clock, which starts every program in 2009.)
//
// Left on the monotonic clock on purpose: queue-lock expiry (queuelock),
// client liveness (clientmgr), long-poll deadlines, HA and flush
// timeouts, metrics. The NameServer and the controller read time only so
// (broker liveness by time.Now differences), so they need no seam.
package clock

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"
)

// OffsetFileEnv names the environment variable that names the offset file
// of a chaosclock build. The file holds one Go duration ("90s", "-2m",
// "0s"); an absent or empty file is offset 0.
const OffsetFileEnv = "TIDE_CLOCK_OFFSET_FILE"

// ErrBadOffset: the offset file does not hold a duration.
var ErrBadOffset = errors.New("clock: bad offset file")

// ReadOffset reads an offset file: 0 when it does not exist or is empty.
func ReadOffset(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	s := string(bytes.TrimSpace(b))
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %q: %v", ErrBadOffset, s, err)
	}
	return d, nil
}

// WriteOffset replaces the offset file atomically (a reader never sees a
// half-written duration).
func WriteOffset(path string, d time.Duration) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(d.String()+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
