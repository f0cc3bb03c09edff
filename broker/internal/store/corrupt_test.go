package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidemq/tide/broker/internal/store/checkpoint"
	"github.com/tidemq/tide/broker/internal/store/segment"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// fillStore writes n messages to t/0 and returns their encoded records.
func fillStore(t *testing.T, s *Store, n int) [][]byte {
	t.Helper()
	var recs [][]byte
	for i := 0; i < n; i++ {
		m := newMsg("t", 0, fmt.Sprintf("message-%d-%s", i, bytes.Repeat([]byte{'p'}, 200+i%50)), map[string]string{"TAGS": "a"})
		put(t, s, m)
		recs = append(recs, encoded(t, m))
	}
	waitDispatched(t, s)
	return recs
}

func segmentPath(c Config, base int64) string {
	return filepath.Join(c.commitLogDir(), segment.Name(base))
}

func corruptFile(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// crashMarkers makes the next Open take the abnormal path, as if the
// store had been killed, with a checkpoint from before offset from.
func crashMarkers(t *testing.T, c Config, from int64) {
	t.Helper()
	if err := os.WriteFile(c.abortPath(), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Save(c.checkpointPath(), checkpoint.Checkpoint{PhysicOffset: from, LogicsOffset: from}); err != nil {
		t.Fatal(err)
	}
}

// readAll reads t/0 end to end and returns the records served, failing if
// anything served differs from what was written.
func readAll(t *testing.T, s *Store, want [][]byte) int {
	t.Helper()
	served := 0
	for off := s.MinOffset("t", 0); off < s.MaxOffset("t", 0); {
		r := s.GetMessage("t", 0, off, 32, 0, nil)
		if r.Status != Found && r.Status != NoMatchedMessage {
			t.Fatalf("@%d: %v", off, r.Status)
		}
		pos := 0
		for _, rec := range r.Records {
			if rec.QueueOffset >= int64(len(want)) || !bytes.Equal(r.Data[pos:pos+int(rec.Size)], want[rec.QueueOffset]) {
				t.Fatalf("@%d: served bytes that were never written", rec.QueueOffset)
			}
			pos += int(rec.Size)
			served++
		}
		off = r.NextBeginOffset
	}
	return served
}

// The RocketMQ record format checksums only the body; damage is detected
// by the CRC (body) and by the structure checks (sizes, magic, offsets,
// topic, queue), which is what these cases exercise. A bit flip inside a
// property value keeps the record well-formed and cannot be detected.
func TestStoreCorruptTailOfLastSegment(t *testing.T) {
	tests := []struct {
		name   string
		crash  bool
		damage func(rec []byte) (off int, b []byte) // relative to the last record
	}{
		{"torn tail, clean shutdown", false, func(rec []byte) (int, []byte) { return len(rec) - 30, make([]byte, 30) }},
		{"torn tail, after crash", true, func(rec []byte) (int, []byte) { return len(rec) - 30, make([]byte, 30) }},
		{"body garbage, clean shutdown", false, func(rec []byte) (int, []byte) { return 100, []byte{0xde, 0xad, 0xbe, 0xef} }},
		{"body garbage, after crash", true, func(rec []byte) (int, []byte) { return 100, []byte{0xde, 0xad, 0xbe, 0xef} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig(t)
			s, err := Open(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := fillStore(t, s, 500)
			end := s.MaxPhyOffset()
			last := want[len(want)-1]
			lastStart := end - int64(len(last))
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			base := end - end%c.MappedFileSizeCommitLog
			off, b := tc.damage(last)
			corruptFile(t, segmentPath(c, base), lastStart-base+int64(off), b)
			if tc.crash {
				crashMarkers(t, c, base)
			}
			s = openStore(t, c)
			served := readAll(t, s, want)
			if tc.crash {
				// Recovery truncated the damaged last record.
				if s.MaxPhyOffset() != lastStart || s.MaxOffset("t", 0) != int64(len(want)-1) || served != len(want)-1 {
					t.Fatalf("end %d (want %d), max offset %d, served %d", s.MaxPhyOffset(), lastStart, s.MaxOffset("t", 0), served)
				}
			} else {
				// The fast path trusts the checkpoint; the read path
				// refuses the damaged record and reports it.
				if served != len(want)-1 || s.Stats().CorruptRecords == 0 {
					t.Fatalf("served %d of %d, corrupt %d", served, len(want), s.Stats().CorruptRecords)
				}
			}
			// The store keeps working after the damage.
			m := newMsg("t", 0, "after", nil)
			put(t, s, m)
			waitDispatched(t, s)
			r := s.GetMessage("t", 0, m.QueueOffset, 1, 0, nil)
			if r.Status != Found || !bytes.Equal(r.Data, encoded(t, m)) {
				t.Fatalf("append after repair: %v", r.Status)
			}
		})
	}
}

// blankPos returns where the blank filler of a full segment starts.
func blankPos(t *testing.T, path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pos := 0
	for {
		v, err := protocol.ViewRecord(data[pos:], false)
		if errors.Is(err, protocol.ErrBlank) {
			return int64(pos)
		}
		if err != nil {
			t.Fatalf("no blank filler: %v", err)
		}
		pos += int(v.Size)
	}
}

func TestStoreCorruptEndOfEarlierSegment(t *testing.T) {
	for _, what := range []string{"blank filler", "last record"} {
		t.Run(what, func(t *testing.T) {
			c := testConfig(t)
			s, err := Open(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := fillStore(t, s, 500)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// Damage the end of the first segment and recover from a
			// checkpoint before it: later segments must survive and
			// nothing damaged may be served.
			p := blankPos(t, segmentPath(c, 0))
			if what == "blank filler" {
				corruptFile(t, segmentPath(c, 0), p, bytes.Repeat([]byte{0x77}, 8))
			} else {
				corruptFile(t, segmentPath(c, 0), p-8, bytes.Repeat([]byte{0x77}, 8))
			}
			crashMarkers(t, c, 0)
			s = openStore(t, c)
			served := readAll(t, s, want)
			if served < len(want)-1 || s.MaxOffset("t", 0) != int64(len(want)) {
				t.Fatalf("served %d of %d, max offset %d", served, len(want), s.MaxOffset("t", 0))
			}
			if s.Stats().CorruptRecords == 0 {
				t.Fatal("damage not reported")
			}
		})
	}
}

func TestStoreCorruptConsumeQueueMiddle(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			c := testConfig(t)
			s, err := Open(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := fillStore(t, s, 250)
			end := s.MaxPhyOffset()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// Units 20..24 of the second file get garbage: wrong offsets,
			// sizes and tags.
			cq := filepath.Join(c.consumeQueueDir(), "t", "0", segment.Name(c.MappedFileSizeConsumeQueue))
			garbage := []byte{0, 0, 0, 0, 0, 0, 1, 7, 0, 0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8}
			for k := 20; k < 25; k++ {
				corruptFile(t, cq, int64(k*20), garbage)
			}
			corruptFile(t, cq, 30*20, bytes.Repeat([]byte{0xff}, 20)) // negative offset and size
			if crash {
				crashMarkers(t, c, end)
			}
			s = openStore(t, c)
			served := readAll(t, s, want)
			if served != len(want)-6 || s.Stats().CorruptRecords != 5 {
				t.Fatalf("served %d of %d, corrupt %d", served, len(want), s.Stats().CorruptRecords)
			}
		})
	}
}

func TestStoreTornTailAfterCrash(t *testing.T) {
	c := testConfig(t)
	s, err := Open(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := fillStore(t, s, 120)
	end := s.MaxPhyOffset()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A record half written when the process died: a plausible header
	// followed by zeros, and stray bytes further on.
	base := end - end%c.MappedFileSizeCommitLog
	torn := append([]byte(nil), want[0][:40]...)
	corruptFile(t, segmentPath(c, base), end-base, torn)
	corruptFile(t, segmentPath(c, base), end-base+700, []byte("stray"))
	crashMarkers(t, c, 0)
	s = openStore(t, c)
	if s.MaxPhyOffset() != end {
		t.Fatalf("end %d, want %d", s.MaxPhyOffset(), end)
	}
	if served := readAll(t, s, want); served != len(want) {
		t.Fatalf("served %d", served)
	}
	for i := 0; i < 20; i++ {
		m := newMsg("t", 0, "x", nil)
		put(t, s, m)
		want = append(want, encoded(t, m))
	}
	s.Close()
	crashMarkers(t, c, 0)
	s = openStore(t, c)
	if served := readAll(t, s, want); served != len(want) {
		t.Fatalf("served %d of %d after second recovery", served, len(want))
	}
}
