package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// The machine is noisy (perf.md), so the benchmarks measure the disk's
// raw sequential write bandwidth and single-writer fdatasync rate in the
// same process and report the store's figures as ratios to them:
//
//	raw_bw_x    store append MB/s / raw sequential write MB/s
//	fsync_x     store appends per second / raw fdatasync per second
//
// Run: go test -run '^$' -bench . -benchtime 2s ./internal/store/

type diskBaseline struct {
	seqMBps   float64 // sequential 1 MiB writes + final fdatasync, new file
	fsyncRate float64 // 1 KiB write + fdatasync per op, preallocated file
}

var (
	baselineOnce sync.Once
	baseline     diskBaseline
)

func measureDisk(b *testing.B) diskBaseline {
	baselineOnce.Do(func() {
		dir := b.TempDir()
		// Sequential bandwidth: 512 MiB, 1 MiB writes, durable at the end.
		f, err := os.Create(filepath.Join(dir, "seq"))
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 1<<20)
		for i := range buf {
			buf[i] = byte(i)
		}
		const total = 512 << 20
		start := time.Now()
		for n := 0; n < total; n += len(buf) {
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		syscall.Fdatasync(int(f.Fd()))
		baseline.seqMBps = total / 1e6 / time.Since(start).Seconds()
		f.Close()
		os.Remove(f.Name())

		// fdatasync rate: preallocated, zero-filled file, 1 KiB per sync.
		g, err := os.Create(filepath.Join(dir, "sync"))
		if err != nil {
			b.Fatal(err)
		}
		g.Write(make([]byte, 8<<20))
		syscall.Fdatasync(int(g.Fd()))
		rec := buf[:1024]
		start = time.Now()
		n := 0
		for time.Since(start) < time.Second {
			g.WriteAt(rec, int64(n%8000)*1024)
			syscall.Fdatasync(int(g.Fd()))
			n++
		}
		baseline.fsyncRate = float64(n) / time.Since(start).Seconds()
		g.Close()
		b.Logf("disk baseline: sequential write %.0f MB/s, fdatasync %.0f/s", baseline.seqMBps, baseline.fsyncRate)
	})
	return baseline
}

func benchConfig(b *testing.B, flush string) Config {
	c := DefaultConfig()
	c.StorePathRootDir = b.TempDir()
	c.MappedFileSizeCommitLog = 256 << 20
	c.FlushDiskType = flush
	c.MessageIndexEnable = false
	if w := os.Getenv("TIDE_BENCH_WARM"); w != "" {
		c.WarmMapedFileEnable = w == "1"
	}
	return c
}

func BenchmarkPut(b *testing.B) {
	for _, flush := range []string{AsyncFlush, SyncFlush} {
		for _, size := range []int{128, 1024, 4096} {
			for _, writers := range []int{1, 8, 64} {
				name := fmt.Sprintf("%s/%dB/writers=%d", map[string]string{AsyncFlush: "async", SyncFlush: "sync"}[flush], size, writers)
				b.Run(name, func(b *testing.B) { benchPut(b, flush, size, writers) })
			}
		}
	}
}

func benchPut(b *testing.B, flush string, size, writers int) {
	base := measureDisk(b)
	s, err := Open(benchConfig(b, flush), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	body := make([]byte, size)
	// Start measuring once the first segment exists and the next one has
	// been created in the background.
	put(b, s, newMsg("bench", 0, "warm-up", nil))
	s.cl.WaitPreallocated()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := newMsg("bench", int32(w%8), "", map[string]string{"TAGS": "TagA", "UNIQ_KEY": "C0A8000100002A9F0000000000000000"})
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
	el := time.Since(start).Seconds()
	b.StopTimer()
	rate := float64(b.N) / el
	st := s.Stats()
	b.ReportMetric(rate, "msgs/s")
	b.ReportMetric(rate*float64(size)/1e6/base.seqMBps, "raw_bw_x")
	b.ReportMetric(rate/base.fsyncRate, "fsync_x")
	if flush == SyncFlush {
		b.ReportMetric(float64(st.Messages)/float64(max(1, st.Flushes)), "msgs/fsync")
	}
}

func BenchmarkGetMessage(b *testing.B) {
	for _, size := range []int{128, 1024, 4096} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			s, err := Open(benchConfig(b, AsyncFlush), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const n = 50000
			batch := make([]*protocol.MessageExt, 32)
			for i := 0; i < n; i += len(batch) {
				for k := range batch {
					batch[k] = newMsg("bench", 0, "", map[string]string{"TAGS": "TagA"})
					batch[k].Body = make([]byte, size)
				}
				if _, err := s.PutMessages(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
			}
			waitDispatched(b, s)
			max := s.MaxOffset("bench", 0)
			b.SetBytes(int64(size) * 32)
			b.ReportAllocs()
			b.ResetTimer()
			off := int64(0)
			msgs := 0
			for i := 0; i < b.N; i++ {
				if off >= max {
					off = 0
				}
				r := s.GetMessage("bench", 0, off, 32, 0, nil)
				if r.Status != Found {
					b.Fatalf("status %v", r.Status)
				}
				msgs += len(r.Records)
				off = r.NextBeginOffset
			}
			b.ReportMetric(float64(msgs)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkOpen measures restart time of a store holding 1 GiB of 1 KiB
// messages: after a clean shutdown, after a crash with a recent
// checkpoint, and after a crash with no checkpoint at all (full scan with
// CRC and full re-dispatch).
func BenchmarkOpen(b *testing.B) {
	c := benchConfig(b, AsyncFlush)
	c.MappedFileSizeCommitLog = 1 << 30
	c.MessageIndexEnable = true
	s, err := Open(c, nil)
	if err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 1024-150)
	batch := make([]*protocol.MessageExt, 64)
	for s.MaxPhyOffset() < 1<<30-(1<<20) {
		for k := range batch {
			batch[k] = newMsg("bench", 0, "", map[string]string{"KEYS": "k"})
			batch[k].Body = body
		}
		if _, err := s.PutMessages(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"clean", "crash", "crash-no-checkpoint"} {
		b.Run(mode, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				switch mode {
				case "crash":
					os.WriteFile(c.abortPath(), nil, 0o644)
				case "crash-no-checkpoint":
					os.WriteFile(c.abortPath(), nil, 0o644)
					os.Remove(c.checkpointPath())
				}
				b.StartTimer()
				s, err := Open(c, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if s.MaxOffset("bench", 0) == 0 {
					b.Fatal("data lost")
				}
				s.Close()
				b.StartTimer()
			}
		})
	}
}
