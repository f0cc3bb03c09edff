package timer

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
)

func TestPendingOrderRecallAndLive(t *testing.T) {
	p := newPending()
	r := rand.New(rand.NewPCG(1, 2))
	const n = 5000
	var all []entry
	for i := range n {
		e := entry{at: int64(r.IntN(100)), phy: int64(i*10 + 1), hash: uint64(r.IntN(n/2) + 1)}
		p.add(e)
		all = append(all, e)
	}
	// Recall every entry whose hash is divisible by 7.
	gone := map[int64]bool{}
	for h := uint64(7); h <= n/2; h += 7 {
		for _, phy := range p.candidates(h) {
			p.recall(phy, h)
			gone[phy] = true
		}
	}
	want := 0
	for _, e := range all {
		if e.hash%7 == 0 {
			if !gone[e.phy] {
				t.Fatalf("entry %+v not recalled", e)
			}
		} else {
			want++
		}
	}
	if p.len() != want {
		t.Fatalf("len = %d, want %d", p.len(), want)
	}
	// The live list holds exactly the pending phys, ascending.
	var live []int64
	p.live.each(func(phy int64) { live = append(live, phy) })
	if len(live) != want || !slices.IsSorted(live) {
		t.Fatalf("live list: %d entries (want %d), sorted %v", len(live), want, slices.IsSorted(live))
	}
	var prev entry
	for i := 0; ; i++ {
		e, ok := p.peek()
		if !ok {
			if i != want {
				t.Fatalf("popped %d, want %d", i, want)
			}
			break
		}
		if gone[e.phy] {
			t.Fatalf("recalled entry %+v surfaced", e)
		}
		if i > 0 && e.before(prev) {
			t.Fatalf("order: %+v after %+v", e, prev)
		}
		if m, ok := p.live.min(); !ok || m > e.phy {
			t.Fatalf("live min %d > pending %d", m, e.phy)
		}
		prev = p.pop()
	}
	if len(p.keys) != 0 || len(p.dups) != 0 || len(p.gone) != 0 || p.live.n != 0 {
		t.Fatalf("leftovers: keys %d dups %d gone %d live %d", len(p.keys), len(p.dups), len(p.gone), p.live.n)
	}
}

func TestLatenessQuantile(t *testing.T) {
	var r latenessRecorder
	if q := r.snapshot().Quantile(0.5); q != 0 {
		t.Fatalf("empty quantile %v", q)
	}
	for range 98 {
		r.record(3 * time.Millisecond)
	}
	r.record(-time.Second) // clamped to 0
	r.record(time.Hour)
	l := r.snapshot()
	if l.Count != 100 || l.Max != time.Hour || l.Last != time.Hour || l.Buckets[len(l.Buckets)-1].Count != 100 || l.Buckets[len(l.Buckets)-1].Le != Inf {
		t.Fatalf("snapshot %+v", l)
	}
	if q := l.Quantile(0.5); q != 5*time.Millisecond {
		t.Fatalf("p50 = %v, want the 5ms bucket", q)
	}
	if q := l.Quantile(1); q != time.Hour {
		t.Fatalf("p100 = %v", q)
	}
}

// BenchmarkPendingMillion adds one million timers and pops them all,
// reporting the heap bytes per pending timer.
func BenchmarkPendingMillion(b *testing.B) {
	const n = 1_000_000
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		p := newPending()
		r := rand.New(rand.NewPCG(3, 4))
		for i := range n {
			p.add(entry{at: int64(r.IntN(3 * 86400 * 1000)), phy: int64(i) * 300, hash: r.Uint64() | 1})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "bytes/timer")
		for p.len() > 0 {
			if _, ok := p.peek(); !ok {
				b.Fatal("lost entries")
			}
			p.pop()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/timer")
}
