package timer

import (
	"bytes"
	"path/filepath"
	"testing"
)

func TestCheckpointRoundTrip(t *testing.T) {
	for _, c := range []checkpoint{
		{},
		{scan: 10, done: 10},
		{scan: 1 << 40, done: 5, pending: []int64{0, 1, 300, 1 << 35}},
	} {
		got, err := decodeCheckpoint(c.encode())
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if got.scan != c.scan || got.done != c.done || len(got.pending) != len(c.pending) {
			t.Fatalf("got %+v, want %+v", got, c)
		}
		for i := range c.pending {
			if got.pending[i] != c.pending[i] {
				t.Fatalf("pending[%d] = %d, want %d", i, got.pending[i], c.pending[i])
			}
		}
	}
	p := filepath.Join(t.TempDir(), "sub", "cp")
	if _, found, err := loadCheckpoint(p); found || err != nil {
		t.Fatalf("missing: found=%v err=%v", found, err)
	}
	for i := range 3 {
		if err := saveCheckpoint(p, &checkpoint{scan: int64(i), done: 0}); err != nil {
			t.Fatal(err)
		}
	}
	if c, found, err := loadCheckpoint(p); !found || err != nil || c.scan != 2 {
		t.Fatalf("load: %+v %v %v", c, found, err)
	}
	// Every single-byte corruption is detected.
	b := (&checkpoint{scan: 7, done: 2, pending: []int64{40, 90}}).encode()
	for i := range b {
		bad := bytes.Clone(b)
		bad[i] ^= 0x20
		if _, err := decodeCheckpoint(bad); err == nil {
			t.Fatalf("flip at %d not detected", i)
		}
	}
}

func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add((&checkpoint{}).encode())
	f.Add((&checkpoint{scan: 9, done: 3, pending: []int64{100, 250}}).encode())
	f.Add([]byte("TTCK"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCheckpoint(b)
		if err != nil {
			return
		}
		if c.scan < c.done {
			t.Fatalf("accepted scan %d < done %d", c.scan, c.done)
		}
		for i := 1; i < len(c.pending); i++ {
			if c.pending[i] <= c.pending[i-1] {
				t.Fatalf("accepted unsorted pending %v", c.pending)
			}
		}
		if !bytes.Equal(c.encode(), b) {
			t.Fatalf("re-encoding differs")
		}
	})
}
