package segment

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestParseName(t *testing.T) {
	tests := []struct {
		name    string
		want    int64
		wantErr bool
	}{
		{"00000000000000000000", 0, false},
		{"00000000001073741824", 1 << 30, false},
		{"1073741824", 0, true},
		{"0000000000000000000x", 0, true},
		{"-0000000000000000001", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseName(tc.name)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseName = %d, %v", got, err)
			}
			if err != nil && !errors.Is(err, ErrBadName) {
				t.Fatalf("error %v is not ErrBadName", err)
			}
		})
	}
	if Name(1<<30) != "00000000001073741824" {
		t.Fatal(Name(1 << 30))
	}
}

func TestFileCreateWriteReopen(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, Name(8192))
	f, err := Create(p, 8192, 8192, true, PWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteAt([]byte("hello"), 100); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteAt([]byte("x"), 8192); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("write past end: %v", err)
	}
	f.SetWrotePosition(105)
	if fl, err := f.Flush(); err != nil || fl != 105 {
		t.Fatalf("Flush = %d, %v", fl, err)
	}
	f.Close()
	st, err := os.Stat(p)
	if err != nil || st.Size() != 8192 {
		t.Fatalf("file size: %v %v", st, err)
	}
	g, err := Open(p, 8192, 8192, MapWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if !g.Acquire() {
		t.Fatal("Acquire failed")
	}
	if !bytes.Equal(g.Data()[100:105], []byte("hello")) {
		t.Fatal("data not persisted")
	}
	g.Release()
	if _, err := Open(p, 8192, 4096, MapWrite); err == nil {
		t.Fatal("opened a file larger than the configured size")
	}
}

func TestFileRemoveKeepsReadersMapping(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, Name(0)), 0, 4096, false, MapWrite)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("data"), 0)
	if !f.Acquire() {
		t.Fatal("Acquire")
	}
	f.Remove()
	if _, err := os.Stat(f.Path()); !os.IsNotExist(err) {
		t.Fatalf("file still on disk: %v", err)
	}
	if f.Acquire() {
		t.Fatal("Acquire succeeded after Remove")
	}
	if string(f.Data()[:4]) != "data" { // still mapped for the holder
		t.Fatal("mapping lost while referenced")
	}
	f.Release()
}

func TestQueueEnsureFindTruncateRemove(t *testing.T) {
	dir := t.TempDir()
	q, err := OpenQueue(dir, QueueOptions{FileSize: 4096, Warm: true, Preallocate: true})
	if err != nil {
		t.Fatal(err)
	}
	for base := int64(0); base < 4*4096; base += 4096 {
		f, err := q.Ensure(base)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte{1}, 0)
		f.SetWrotePosition(4096)
	}
	if _, err := q.Ensure(8 * 4096); err == nil {
		t.Fatal("Ensure accepted a gap")
	}
	if q.MaxOffset() != 4*4096 || q.MinOffset() != 0 || q.Len() != 4 {
		t.Fatalf("offsets %d..%d, %d files", q.MinOffset(), q.MaxOffset(), q.Len())
	}
	f := q.Find(5000)
	if f == nil || f.Base() != 4096 {
		t.Fatalf("Find(5000) = %v", f)
	}
	f.Release()
	if q.Find(4*4096) != nil {
		t.Fatal("Find past the end")
	}
	q.Truncate(2*4096 + 10)
	if q.Len() != 3 || q.MaxOffset() != 2*4096+10 {
		t.Fatalf("after truncate: %d files, max %d", q.Len(), q.MaxOffset())
	}
	if n := q.RemoveFront(5); n != 2 || q.MinOffset() != 2*4096 {
		t.Fatalf("RemoveFront = %d, min %d", n, q.MinOffset())
	}
	if q.Find(100) != nil {
		t.Fatal("found a removed offset")
	}
	q.Close()
	// Reopen: the remaining file plus possibly a preallocated one.
	q, err = OpenQueue(dir, QueueOptions{FileSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.MinOffset() != 2*4096 {
		t.Fatalf("reopened min %d", q.MinOffset())
	}
	// A gap between files is refused.
	os.WriteFile(filepath.Join(dir, Name(10*4096)), make([]byte, 4096), 0o644)
	if _, err := OpenQueue(dir, QueueOptions{FileSize: 4096}); err == nil {
		t.Fatal("opened a queue with a gap")
	}
}

// TestFileCreateWarm: a warm file reads as zeros whatever the fill path
// (O_DIRECT for PWrite files with a page-multiple size, buffered
// otherwise, and buffered when O_DIRECT is refused), and a PWrite file
// takes writes that end inside a page of an uncached, direct-filled file.
func TestFileCreateWarm(t *testing.T) {
	tests := []struct {
		name string
		size int64
		mode Mode
	}{
		{"pwrite-direct", 3 << 20, PWrite},
		{"pwrite-odd-size", 3<<20 + 512, PWrite},
		{"mapwrite", 3 << 20, MapWrite},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), Name(0))
			f, err := Create(path, 0, tc.size, true, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if st, err := os.Stat(path); err != nil || st.Size() != tc.size {
				t.Fatalf("stat: %v, %v", st, err)
			}
			if !bytes.Equal(f.Data(), make([]byte, tc.size)) {
				t.Fatal("warm file is not all zeros")
			}
			rec := bytes.Repeat([]byte("r"), 1000)
			if err := f.WriteAt(rec, 4000); err != nil {
				t.Fatal(err)
			}
			f.SetWrotePosition(5000)
			if _, err := f.Flush(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[4000:5000], rec) || !bytes.Equal(got[:4000], make([]byte, 4000)) || !bytes.Equal(got[5000:], make([]byte, tc.size-5000)) {
				t.Fatal("file content after write")
			}
		})
	}
}

// TestDataEnd: everything written lies below DataEnd, through the mapping
// and unflushed, and everything past it reads as zero.
func TestDataEnd(t *testing.T) {
	const size = 4 << 20
	f, err := Create(filepath.Join(t.TempDir(), Name(0)), 0, size, false, MapWriteSparse)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if end := f.DataEnd(); !bytes.Equal(f.Data()[end:], make([]byte, size-end)) {
		t.Fatalf("empty file: non-zero bytes past DataEnd %d", end)
	}
	for _, at := range []int64{100, 1<<20 + 7, size - 20} {
		if err := f.WriteAt([]byte("unit-of-twenty-bytes"), at); err != nil {
			t.Fatal(err)
		}
		end := f.DataEnd()
		if end < at+20 || end > size {
			t.Fatalf("after a write at %d: DataEnd %d", at, end)
		}
		if !bytes.Equal(f.Data()[end:], make([]byte, size-end)) {
			t.Fatalf("after a write at %d: non-zero bytes past DataEnd %d", at, end)
		}
		t.Logf("write at %d: DataEnd %d", at, end)
	}
}
