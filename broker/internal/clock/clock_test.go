package clock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestReadOffset(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body string // body "-" = no file
		want       time.Duration
		err        error
	}{
		{"absent", "-", 0, nil},
		{"empty", "", 0, nil},
		{"forward", "90s\n", 90 * time.Second, nil},
		{"backward", " -2m ", -2 * time.Minute, nil},
		{"zero", "0s", 0, nil},
		{"not a duration", "ninety", 0, ErrBadOffset},
		{"no unit", "90", 0, ErrBadOffset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if tc.body != "-" {
				if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ReadOffset(path)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("ReadOffset(%q) error %v, want %v", tc.body, err, tc.err)
			}
			if got != tc.want {
				t.Fatalf("ReadOffset(%q) = %v, want %v", tc.body, got, tc.want)
			}
		})
	}
}

func TestWriteOffsetRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offset")
	for _, d := range []time.Duration{37 * time.Second, -2 * time.Minute, 0} {
		if err := WriteOffset(path, d); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadOffset(path); err != nil || got != d {
			t.Fatalf("wrote %v, read %v (%v)", d, got, err)
		}
	}
}

// TestNowIsWallClock: without an offset (production, or a chaosclock build
// at offset 0) Now reads the machine's wall clock.
func TestNowIsWallClock(t *testing.T) {
	before := time.Now().Round(0)
	got := Now()
	after := time.Now().Round(0)
	if got.Before(before) || got.After(after) {
		t.Fatalf("Now() = %v, not between %v and %v (faked build: %v)", got, before, after, Faked)
	}
}
