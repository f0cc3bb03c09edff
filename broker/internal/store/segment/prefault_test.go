package segment

import (
	"bytes"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// residentPages counts the pages of b (page aligned) that are in the page
// cache (mincore).
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

func TestPrefault(t *testing.T) {
	const size = 1 << 20
	tests := []struct {
		name    string
		mode    Mode
		off, n  int64
		closed  bool
		wantErr error
		pages   [2]int // page range expected resident afterwards
	}{
		{"map write, middle, widened to pages", MapWrite, 5000, 10000, false, nil, [2]int{1, 4}},
		{"map write, past the end is cut", MapWrite, size - 4096, 1 << 20, false, nil, [2]int{255, 256}},
		{"map write, empty range", MapWrite, 8192, 0, false, nil, [2]int{0, 0}},
		{"pwrite", PWrite, 0, 4096, false, ErrPrefaultUnsupported, [2]int{0, 0}},
		{"sparse", MapWriteSparse, 0, 4096, false, ErrPrefaultUnsupported, [2]int{0, 0}},
		{"closed", MapWrite, 0, 4096, true, ErrClosed, [2]int{0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Create(filepath.Join(t.TempDir(), Name(0)), 0, size, false, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Remove()
			if tc.closed {
				f.Close()
			}
			err = f.Prefault(tc.off, tc.n)
			if errors.Is(err, ErrPrefaultUnsupported) && tc.wantErr == nil {
				t.Skip("kernel without MADV_POPULATE_WRITE (Linux < 5.14)")
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Prefault = %v, want %v", err, tc.wantErr)
			}
			if tc.closed {
				return
			}
			lo, hi := tc.pages[0], tc.pages[1]
			if hi > lo {
				if got := residentPages(t, f.Data()[lo*4096:hi*4096]); got < hi-lo {
					t.Fatalf("%d of pages [%d, %d) resident after Prefault", got, lo, hi)
				}
			}
			if !bytes.Equal(f.Data(), make([]byte, size)) {
				t.Fatal("Prefault changed the file's bytes")
			}
		})
	}
}

// TestPrefaultKeepsData: prefaulting over written data leaves it as it is,
// in the mapping and on disk after a reopen.
func TestPrefaultKeepsData(t *testing.T) {
	p := filepath.Join(t.TempDir(), Name(0))
	f, err := Create(p, 0, 64<<10, false, MapWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteAt([]byte("hello"), 4090); err != nil {
		t.Fatal(err)
	}
	if err := f.Prefault(0, 64<<10); errors.Is(err, ErrPrefaultUnsupported) {
		t.Skip("kernel without MADV_POPULATE_WRITE (Linux < 5.14)")
	} else if err != nil {
		t.Fatal(err)
	}
	f.SetWrotePosition(4095)
	if _, err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	g, err := Open(p, 0, 64<<10, MapWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	want := make([]byte, 64<<10)
	copy(want[4090:], "hello")
	if !bytes.Equal(g.Data(), want) {
		t.Fatal("file content changed by Prefault")
	}
}
