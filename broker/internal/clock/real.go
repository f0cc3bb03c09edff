//go:build !chaosclock

package clock

import "time"

// Now returns the wall clock: time.Now (the build has no chaosclock tag).
func Now() time.Time { return time.Now() }

// Faked reports whether Now can be offset (the chaosclock build).
const Faked = false
