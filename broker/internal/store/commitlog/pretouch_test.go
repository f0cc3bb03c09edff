package commitlog

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// residentPages counts the pages of b (page aligned) in the page cache.
func residentPages(t testing.TB, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+4095)/4096)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// waitTouched waits until the pre-toucher has caught up with the end: it
// keeps at least half its window prefaulted (it is woken when less is
// left), never more than the window.
func waitTouched(t *testing.T, l *Log) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		end := l.MaxOffset()
		want := min(end+l.opts.PretouchAhead/2, l.q.Last().Base()+l.opts.FileSize)
		if l.touchOff.Load() {
			t.Skip("kernel without MADV_POPULATE_WRITE (Linux < 5.14)")
		}
		if got := l.touched.Load(); got >= want && got <= end+l.opts.PretouchAhead {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pre-toucher at %d, want %d (end %d)", l.touched.Load(), want, end)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLogPretouch: with PretouchAhead set, the pages past the written end
// are in the page cache before any append reaches them, in the first
// segment and after roll-overs; they still read as zeros, and a reopened
// log recovers exactly the records appended (a prefaulted page is never
// taken for data). Truncating back restarts the pre-toucher from the new
// end.
func TestLogPretouch(t *testing.T) {
	const size, ahead = 256 << 10, 64 << 10
	tests := []struct {
		name    string
		records int // 1 KiB records appended before the checks
	}{
		{"empty log", 0},
		{"inside the first segment", 20},
		{"after two roll-overs", 600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(Options{Dir: dir, FileSize: size, PretouchAhead: ahead, Interval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Recover(-1, true); err != nil {
				t.Fatal(err)
			}
			l.Start()
			rec := record(t, string(bytes.Repeat([]byte("p"), 900)))
			if _, err := l.Append(append([]byte(nil), rec...), setPhy); err != nil {
				t.Fatal(err)
			}
			for i := 1; i < tc.records; i++ {
				if _, err := l.Append(append([]byte(nil), rec...), setPhy); err != nil {
					t.Fatal(err)
				}
			}
			waitTouched(t, l)
			f := l.q.Last()
			pos := f.WrotePosition()
			from := (pos + 4095) &^ 4095
			to := min(pos+ahead/2, size) &^ 4095
			if got := residentPages(t, f.Data()[from:to]); to > from && got < int(to-from)/4096 {
				t.Fatalf("%d of %d pages ahead of the end resident", got, (to-from)/4096)
			}
			if !bytes.Equal(f.Data()[pos:], make([]byte, size-pos)) {
				t.Fatal("bytes past the written end are not zero")
			}
			end := l.MaxOffset()
			if err := l.Shutdown(); err != nil {
				t.Fatal(err)
			}
			l.Close()

			r, err := Open(Options{Dir: dir, FileSize: size, PretouchAhead: ahead})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if _, err := r.Recover(-1, true); err != nil {
				t.Fatal(err)
			}
			if r.MaxOffset() != end {
				t.Fatalf("recovered end %d, appended to %d", r.MaxOffset(), end)
			}
		})
	}
}

// TestLogPretouchAfterTruncate: a truncation moves the end back below the
// touched offset; the pre-toucher follows the new end.
func TestLogPretouchAfterTruncate(t *testing.T) {
	const size, ahead = 256 << 10, 64 << 10
	l, err := Open(Options{Dir: t.TempDir(), FileSize: size, PretouchAhead: ahead, Interval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Recover(-1, true); err != nil {
		t.Fatal(err)
	}
	l.Start()
	t.Cleanup(func() { l.Shutdown(); l.Close() })
	var offs []int64
	for i := 0; i < 400; i++ {
		off, err := l.Append(record(t, fmt.Sprintf("%d%s", i, bytes.Repeat([]byte("t"), 900))), setPhy)
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	waitTouched(t, l)
	if err := l.Truncate(offs[10]); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(record(t, "after"), setPhy); err != nil {
		t.Fatal(err)
	}
	waitTouched(t, l)
	if _, err := l.ReadRecord(nil, offs[10]); err != nil {
		t.Fatalf("record appended after the truncation: %v", err)
	}
}
