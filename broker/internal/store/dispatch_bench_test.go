package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The dispatcher's cost, apart from the appenders':
//
//	BenchmarkDispatch        per record dispatched (consume-queue unit,
//	                         index entries, hooks), the records appended
//	                         beforehand under a dispatch limit (untimed)
//	BenchmarkPutDispatched   appends by 1 or 64 writers, timed until all
//	                         are dispatched: allocs/op covers appender and
//	                         dispatcher
//	BenchmarkPutVisible      one writer that waits after each append until
//	                         the dispatch listener reports its record: the
//	                         latency a long-polling pull sees (ns/op)
//
// Run: go test -run '^$' -bench 'Dispatch|PutVisible' -benchtime 100000x ./internal/store/

func dispatchBenchConfig(b *testing.B) Config {
	c := benchConfig(b, AsyncFlush)
	c.MessageIndexEnable = true // the broker's default: the dispatcher indexes UNIQ_KEY
	return c
}

func benchProps() map[string]string {
	return map[string]string{"TAGS": "TagA", "UNIQ_KEY": "C0A8000100002A9F0000000000000000"}
}

func BenchmarkDispatch(b *testing.B) {
	for _, size := range []int{128, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			var limit atomic.Int64
			s, err := Open(dispatchBenchConfig(b), nil, WithDispatchLimit(limit.Load))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			// The listener a broker installs (it wakes held pulls).
			var notified atomic.Int64
			s.SetDispatchListener(func(string, int32, int64, int64, []byte) { notified.Add(1) })
			m := newMsg("bench", 0, "", benchProps())
			m.Body = make([]byte, size)
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				m.QueueID = int32(i % 8)
				put(b, s, m)
			}
			b.ReportAllocs()
			b.StartTimer()
			limit.Store(s.MaxPhyOffset())
			waitDispatched(b, s)
			b.StopTimer()
			if n := notified.Load(); n != int64(b.N) {
				b.Fatalf("listener called %d times, want %d", n, b.N)
			}
		})
	}
}

func BenchmarkPutDispatched(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("1024B/writers=%d", writers), func(b *testing.B) {
			s, err := Open(dispatchBenchConfig(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.SetDispatchListener(func(string, int32, int64, int64, []byte) {})
			body := make([]byte, 1024)
			put(b, s, newMsg("bench", 0, "warm-up", nil))
			s.cl.WaitPreallocated()
			waitDispatched(b, s)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m := newMsg("bench", int32(w%8), "", benchProps())
					m.Body = body
					for next.Add(1) <= int64(b.N) {
						if r, err := s.PutMessage(context.Background(), m); err != nil || r.Status != PutOK {
							b.Errorf("put: %v %v", r.Status, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			waitDispatched(b, s)
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu_us/msg")
		})
	}
}

func BenchmarkPutVisible(b *testing.B) {
	s, err := Open(dispatchBenchConfig(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	seen := make(chan int64, 1)
	s.SetDispatchListener(func(_ string, _ int32, qo, _ int64, _ []byte) { seen <- qo })
	m := newMsg("bench", 0, "", benchProps())
	m.Body = make([]byte, 1024)
	put(b, s, m)
	<-seen
	s.cl.WaitPreallocated()
	b.ReportAllocs()
	b.ResetTimer()
	var worst time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		r := put(b, s, m)
		if qo := <-seen; qo != r.QueueOffset {
			b.Fatalf("listener saw queue offset %d, want %d", qo, r.QueueOffset)
		}
		worst = max(worst, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(float64(worst.Microseconds()), "worst_us")
}
