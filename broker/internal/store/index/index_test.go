package index

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyHash(t *testing.T) {
	tests := []struct {
		key  string
		want int32
	}{
		{"", 0},
		{"hello", 99162322}, // Java "hello".hashCode()
		{"TopicTest#KEY1", abs32(int32(javaHash("TopicTest#KEY1")))},
		{"polygenelubricants", 0}, // hashCode is Integer.MIN_VALUE: |h| overflows to 0
	}
	for _, tc := range tests {
		if got := keyHash(tc.key); got != tc.want {
			t.Errorf("keyHash(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}

func TestAbsHash(t *testing.T) {
	tests := []struct{ h, want int32 }{
		{0, 0},
		{99162322, 99162322},
		{-99162322, 99162322},
		{math.MaxInt32, math.MaxInt32},
		{-math.MaxInt32, math.MaxInt32},
		{math.MinInt32, 0}, // |h| overflows
	}
	for _, tc := range tests {
		if got := absHash(tc.h); got != tc.want {
			t.Errorf("absHash(%d) = %d, want %d", tc.h, got, tc.want)
		}
	}
}

func TestTopicKeyHash(t *testing.T) {
	tests := []struct {
		topic, key string
	}{
		{"", ""},
		{"TopicTest", "KEY1"},
		{"bench", "C0A8000100002A9F0000000000000000"},
		{"t", "polygenelubricant"}, // long enough to overflow int32 several times
		{"主题", "KEY1"},             // non-ASCII topic: UTF-16 code units
		{"TopicTest", "键"},
		{"TopicTest", "\xff\xfe"}, // invalid UTF-8
		{"TopicTest", "😀"},        // a surrogate pair in Java
	}
	for _, tc := range tests {
		if got, want := topicKeyHash(tc.topic, []byte(tc.key)), keyHash(tc.topic+"#"+tc.key); got != want {
			t.Errorf("topicKeyHash(%q, %q) = %d, want keyHash = %d", tc.topic, tc.key, got, want)
		}
	}
	// PutTopicKey writes the entry Put writes.
	a, err := Open(Options{Dir: t.TempDir(), SlotNum: 8, IndexNum: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(Options{Dir: t.TempDir(), SlotNum: 8, IndexNum: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a.Put("t#a", 100, 5000)
	b.PutTopicKey("t", []byte("a"), 100, 5000)
	if string(a.files[0].data) != string(b.files[0].data) {
		t.Error("PutTopicKey wrote a different file than Put")
	}
}

func javaHash(s string) int32 {
	var h int32
	for _, c := range s {
		h = 31*h + int32(c)
	}
	return h
}

func abs32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}

func TestFileLayout(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), SlotNum: 8, IndexNum: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Put("t#a", 100, 5000)
	s.Put("t#a", 200, 7500)
	x := s.files[0]
	be := binary.BigEndian
	h := keyHash("t#a")
	slot := int(h) % 8
	checks := []struct {
		name string
		got  int64
		want int64
	}{
		{"beginTimestamp", int64(be.Uint64(x.data[0:])), 5000},
		{"endTimestamp", int64(be.Uint64(x.data[8:])), 7500},
		{"beginPhyOffset", int64(be.Uint64(x.data[16:])), 100},
		{"endPhyOffset", int64(be.Uint64(x.data[24:])), 200},
		{"hashSlotCount", int64(be.Uint32(x.data[32:])), 1},
		{"indexCount", int64(be.Uint32(x.data[36:])), 3},
		{"slot", int64(be.Uint32(x.data[40+4*slot:])), 2},
		{"entry2 hash", int64(be.Uint32(x.data[x.entryPos(2):])), int64(h)},
		{"entry2 offset", int64(be.Uint64(x.data[x.entryPos(2)+4:])), 200},
		{"entry2 time diff", int64(be.Uint32(x.data[x.entryPos(2)+12:])), 2},
		{"entry2 prev", int64(be.Uint32(x.data[x.entryPos(2)+16:])), 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if FileSize(8, 4) != 40+32+80 {
		t.Fatal("FileSize")
	}
}

func TestServiceQueryRollReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, SlotNum: 4, IndexNum: 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if err := s.Put(fmt.Sprintf("t#k%d", i%5), int64(i), int64(1000+i*1000)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Files() < 5 {
		t.Fatalf("%d files, want a roll every 9 entries", s.Files())
	}
	got := s.Query("t#k3", 100, 0, 1<<62)
	if len(got) != 10 || got[0] != 48 {
		t.Fatalf("k3: %v", got)
	}
	// Time range: entries stored in [20000, 30000] ms.
	got = s.Query("t#k0", 100, 20000, 30000)
	for _, off := range got {
		if ts := 1000 + off*1000; ts < 19000 || ts > 30000 {
			t.Fatalf("offset %d outside the range", off)
		}
	}
	if len(got) == 0 {
		t.Fatal("time range query found nothing")
	}
	if got := s.Query("t#k1", 3, 0, 1<<62); len(got) != 3 {
		t.Fatalf("max 3: %v", got)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	n := s.RemoveBefore(20)
	if n == 0 {
		t.Fatal("RemoveBefore removed nothing")
	}
	for _, off := range s.Query("t#k0", 100, 0, 1<<62) {
		if off < 9 {
			t.Fatalf("entry %d from a removed file", off)
		}
	}
	s.Close()
	s, err = Open(Options{Dir: dir, SlotNum: 4, IndexNum: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Query("t#k3", 100, 0, 1<<62); len(got) == 0 || got[0] != 48 {
		t.Fatalf("after reopen: %v", got)
	}
}

// TestOpenHeaderless covers the files a crash can leave: one renamed into
// place before its header was written (count 0) opens empty and takes
// entries; one with a count past the geometry is refused with an error
// (before the fix, building that error read the unmapped header and the
// process died of SIGSEGV).
func TestOpenHeaderless(t *testing.T) {
	tests := []struct {
		name    string
		count   uint32
		wantErr bool
	}{
		{"never initialised", 0, false},
		{"count past max", 11, true},
		{"negative count", 1 << 31, true},
		{"valid empty", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			hdr := make([]byte, FileSize(4, 10))
			binary.BigEndian.PutUint32(hdr[36:], tt.count)
			if err := os.WriteFile(filepath.Join(dir, "20261202190000000"), hdr, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(Options{Dir: dir, SlotNum: 4, IndexNum: 10})
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "bad index count") {
					s.Close()
					t.Fatalf("Open = %v, want a bad index count error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Put("t#a", 100, 5000); err != nil {
				t.Fatal(err)
			}
			if got := s.Query("t#a", 10, 0, 1<<62); len(got) != 1 || got[0] != 100 {
				t.Fatalf("Query = %v, want [100]", got)
			}
			if s.Files() != 1 {
				t.Fatalf("%d files, want the existing one reused", s.Files())
			}
		})
	}
}
