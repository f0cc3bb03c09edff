package epoch

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func mem(t *testing.T, es ...Entry) *File {
	t.Helper()
	f, err := NewMemory(es)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestAppendAndLookups(t *testing.T) {
	f := mem(t)
	if _, ok := f.Last(); ok || f.LastEpoch() != -1 {
		t.Fatal("empty file has a last entry")
	}
	for _, e := range []Entry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 100}, {Epoch: 5, StartOffset: 300}} {
		if err := f.Append(e.Epoch, e.StartOffset); err != nil {
			t.Fatal(err)
		}
	}
	want := []Entry{{1, 0, 100}, {2, 100, 300}, {5, 300, OpenEnd}}
	if got := f.Entries(); !reflect.DeepEqual(got, want) {
		t.Fatalf("entries = %v, want %v", got, want)
	}
	bad := []struct {
		epoch int32
		start int64
	}{{5, 400}, {4, 400}, {6, 300}, {6, 200}}
	for _, b := range bad {
		if err := f.Append(b.epoch, b.start); !errors.Is(err, ErrNotIncreasing) {
			t.Errorf("Append(%d, %d) = %v, want ErrNotIncreasing", b.epoch, b.start, err)
		}
	}
	if e, ok := f.Get(2); !ok || e != want[1] {
		t.Fatalf("Get(2) = %v %v", e, ok)
	}
	if _, ok := f.Get(3); ok {
		t.Fatal("Get(3) found an entry")
	}
	if e, ok := f.Next(2); !ok || e.Epoch != 5 {
		t.Fatalf("Next(2) = %v %v", e, ok)
	}
	if _, ok := f.Next(5); ok {
		t.Fatal("Next(5) found an entry")
	}
	for off, ep := range map[int64]int32{0: 1, 99: 1, 100: 2, 299: 2, 300: 5, 1 << 50: 5} {
		if e, ok := f.FindByOffset(off); !ok || e.Epoch != ep {
			t.Errorf("FindByOffset(%d) = %v %v, want epoch %d", off, e, ok, ep)
		}
	}
	f.SetLastEndOffset(250) // below the start: ignored
	f.SetLastEndOffset(450)
	if e, _ := f.Last(); e.EndOffset != 450 {
		t.Fatalf("last end = %d", e.EndOffset)
	}
	if _, ok := f.FindByOffset(450); ok {
		t.Fatal("offset past the bounded end found")
	}
	if first, _ := f.First(); first.Epoch != 1 || f.Len() != 3 {
		t.Fatalf("first %v len %d", first, f.Len())
	}
}

func TestConsistentPoint(t *testing.T) {
	cases := []struct {
		name        string
		local, peer []Entry
		localEnd    int64
		peerEnd     int64
		want        int64
	}{
		{"same history, replica behind", []Entry{{1, 0, 0}, {2, 100, 0}}, []Entry{{1, 0, 0}, {2, 100, 0}}, 150, 400, 150},
		{"same history, replica ahead (old master)", []Entry{{1, 0, 0}, {2, 100, 0}}, []Entry{{1, 0, 0}, {2, 100, 0}}, 400, 150, 150},
		{"replica missed an epoch", []Entry{{1, 0, 0}}, []Entry{{1, 0, 0}, {3, 200, 0}}, 250, 500, 200},
		{"old master wrote under a dead epoch", []Entry{{1, 0, 0}, {2, 100, 0}}, []Entry{{1, 0, 0}, {3, 80, 0}}, 130, 300, 80},
		{"same epoch, different start: look further down", []Entry{{1, 0, 0}, {2, 100, 0}}, []Entry{{1, 0, 0}, {2, 90, 0}}, 130, 300, 90},
		{"nothing shared", []Entry{{2, 0, 0}}, []Entry{{3, 0, 0}}, 10, 10, -1},
		{"empty replica", nil, []Entry{{1, 0, 0}}, 0, 10, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, p := mem(t, tc.local...), mem(t, tc.peer...)
			l.SetLastEndOffset(tc.localEnd)
			p.SetLastEndOffset(tc.peerEnd)
			if got := l.ConsistentPoint(p.Entries()); got != tc.want {
				t.Fatalf("ConsistentPoint = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	f := mem(t, Entry{Epoch: 1, StartOffset: 0}, Entry{Epoch: 2, StartOffset: 100}, Entry{Epoch: 3, StartOffset: 200})
	if err := f.TruncateSuffixByOffset(150); err != nil {
		t.Fatal(err)
	}
	if got := f.Entries(); !reflect.DeepEqual(got, []Entry{{1, 0, 100}, {2, 100, OpenEnd}}) {
		t.Fatalf("after suffix by offset: %v", got)
	}
	if err := f.Append(4, 150); err != nil { // the replica then follows a new epoch
		t.Fatal(err)
	}
	if err := f.TruncateSuffixByEpoch(2); err != nil {
		t.Fatal(err)
	}
	if got := f.Entries(); !reflect.DeepEqual(got, []Entry{{1, 0, OpenEnd}}) {
		t.Fatalf("after suffix by epoch: %v", got)
	}
	g := mem(t, Entry{Epoch: 1, StartOffset: 0}, Entry{Epoch: 2, StartOffset: 100}, Entry{Epoch: 3, StartOffset: 200})
	if err := g.TruncatePrefixByOffset(100); err != nil {
		t.Fatal(err)
	}
	if got := g.Entries(); !reflect.DeepEqual(got, []Entry{{2, 100, 200}, {3, 200, OpenEnd}}) {
		t.Fatalf("after prefix: %v", got)
	}
	if _, err := NewMemory([]Entry{{Epoch: 2, StartOffset: 5}, {Epoch: 1, StartOffset: 9}}); !errors.Is(err, ErrNotIncreasing) {
		t.Fatalf("unordered reset: %v", err)
	}
}

func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	f, err := Open(path)
	if err != nil || f.Len() != 0 {
		t.Fatalf("open missing: %v %v", f, err)
	}
	if err := f.Append(1, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Append(3, 1024); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// RocketMQ's CheckpointFile layout; the CRC is Java's UtilAll.crc32
	// of the entry lines (computed independently of this package)
	if want := "2\n905091821\n1-0\n3-1024\n"; string(b) != want {
		t.Fatalf("file = %q, want %q", b, want)
	}
	g, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Entries(); !reflect.DeepEqual(got, []Entry{{1, 0, 1024}, {3, 1024, OpenEnd}}) {
		t.Fatalf("reopened: %v", got)
	}
	// truncating everything leaves an empty file, not the old entries
	if err := g.TruncateSuffixByEpoch(0); err != nil {
		t.Fatal(err)
	}
	h, err := Open(path)
	if err != nil || h.Len() != 0 {
		t.Fatalf("after truncating all: %v %v", h.Entries(), err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
}

func TestOpenCorrupt(t *testing.T) {
	cases := map[string]string{
		"bad crc":       "1\n12345\n1-0\n",
		"count":         "2\n0\n1-0\n",
		"bad line":      "1\n0\n1:0\n",
		"no header":     "1\n",
		"not ascending": "2\n0\n2-0\n1-5\n",
		"bad count":     "x\n0\n",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(path); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open = %v, want ErrCorrupt", err)
			}
		})
	}
	// CRC 0 is RocketMQ's "not checked"
	path := filepath.Join(t.TempDir(), FileName)
	os.WriteFile(path, []byte("1\n0\n7-42\n"), 0o644)
	if f, err := Open(path); err != nil || f.LastEpoch() != 7 {
		t.Fatalf("crc 0: %v %v", f, err)
	}
}

func TestWriteFailureKeepsEntries(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(filepath.Join(dir, "missing-dir", FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Append(1, 0); err == nil {
		t.Fatal("append into a missing directory succeeded")
	}
	if f.Len() != 0 {
		t.Fatalf("entries changed after a failed write: %v", f.Entries())
	}
}
