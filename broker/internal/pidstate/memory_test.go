package pidstate

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// header plays a decoded request header: the decoder slices field values
// out of one string per frame, so a topic taken from it shares the frame's
// memory.
func header(topic string) string {
	h := `{"code":310,"extFields":{"b":"` + topic + `","n":"` + strings.Repeat("k=v\x01", 200) + `"}}`
	i := strings.Index(h, topic)
	return h[i : i+len(topic)]
}

// fill sends runs single messages to each of queues queues of producer id.
func fill(tb testing.TB, t *Table, id, epoch int64, queues, runs int) {
	tb.Helper()
	for q := range queues {
		key := QueueKey{Topic: header(fmt.Sprintf("topic-%04d", q/8)), QueueID: int32(q % 8)}
		for seq := range int64(runs) {
			s, err := t.Acquire(id, epoch, key, 0)
			if err != nil {
				tb.Fatal(err)
			}
			phy := int64(q)<<20 + seq*100
			s.Record(Run{FirstSeq: seq, QueueOffset: seq, Phys: []int64{phy}, Born: seq, End: phy + 100})
			s.Release()
		}
	}
}

func TestSnapshotRoundTripManyQueues(t *testing.T) {
	tb := New()
	a, ea := tb.Init("g", "a")
	b, eb := tb.Init("g", "")
	fill(t, tb, a, ea, 40, MaxRuns+3) // evicted runs: floor set
	fill(t, tb, b, eb, 9, 2)
	path := filepath.Join(t.TempDir(), "producers.json")
	for range 2 { // the second save keeps the first as .bak
		if err := tb.Save(path, 99); err != nil {
			t.Fatal(err)
		}
	}
	back := New()
	if off, found, err := back.Load(path); err != nil || !found || off != 99 {
		t.Fatalf("Load = %d %v %v", off, found, err)
	}
	cases := []struct {
		name        string
		id, epoch   int64
		queues      int
		seq         int64
		wantDup     bool
		wantErrText string
	}{
		{"remembered run of a", a, ea, 40, MaxRuns + 2, true, ""},
		{"oldest remembered run of a", a, ea, 40, 3, true, ""},
		{"evicted run of a", a, ea, 40, 2, false, ErrForgotten.Error()},
		{"run of b", b, eb, 9, 1, true, ""},
		{"new sequence of b", b, eb, 9, 2, false, ""},
	}
	for _, c := range cases {
		for _, tbl := range []*Table{tb, back} {
			for q := range c.queues {
				s, err := tbl.Acquire(c.id, c.epoch, QueueKey{Topic: fmt.Sprintf("topic-%04d", q/8), QueueID: int32(q % 8)}, 0)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				r, _, err := s.Lookup(c.seq, 1)
				s.Release()
				gotErr := ""
				if err != nil {
					gotErr = err.Error()
				}
				if (r != nil) != c.wantDup || gotErr != c.wantErrText {
					t.Fatalf("%s, queue %d: dup=%v err=%q, want dup=%v err=%q", c.name, q, r != nil, gotErr, c.wantDup, c.wantErrText)
				}
			}
		}
	}
}

// BenchmarkQueueStateBytes reports the live heap the table keeps per
// (producer, queue) ("B/queue") once each of 4,000 queues holds its full
// window, the topics sliced from 1 KiB request headers as the broker's
// decoder gives them. Not asserted (the runtime's allocator decides the
// exact figure); on 2026-12-02: 1,542 B before the table copied the key's
// topic and evicted runs in place, 642 B after.
func BenchmarkQueueStateBytes(b *testing.B) {
	const queues = 4000
	var perQueue float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tb := New()
		id, ep := tb.Init("g", "")
		fill(b, tb, id, ep, queues, MaxRuns+3)
		runtime.GC()
		runtime.ReadMemStats(&after)
		perQueue = float64(after.HeapAlloc-before.HeapAlloc) / queues
		runtime.KeepAlive(tb)
	}
	b.ReportMetric(perQueue, "B/queue")
}
