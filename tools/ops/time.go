package ops

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseTime reads a point in time as operators type it: Unix
// milliseconds, "now", RocketMQ's yyyy-MM-dd#HH:mm:ss:SSS, RFC 3339, or
// yyyy-MM-dd HH:mm:ss / yyyy-MM-ddTHH:mm[:ss] (what an HTML
// datetime-local input sends) in local time.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "now" {
		return time.Now(), nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	if i := strings.LastIndexByte(s, ':'); strings.Contains(s, "#") && i > 0 {
		// Go layouts need a '.' before fractional seconds.
		if t, err := time.ParseInLocation("2006-01-02#15:04:05.000", s[:i]+"."+s[i+1:], time.Local); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w %q: want Unix ms, now, yyyy-MM-dd#HH:mm:ss:SSS, RFC 3339 or yyyy-MM-ddTHH:mm[:ss]", ErrBadTime, s)
}
