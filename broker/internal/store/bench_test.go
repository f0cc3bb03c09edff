package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
// and, independent of the disk, cpu_us/msg: the process's CPU time (user
// + system, every thread) per message over the timed part.
//
// The fdatasync rate drifts by several times within minutes, so it is
// probed right before and right after each SYNC_FLUSH run (the mean of
// the two is the reference), on a file of the commit log's kind: the
// benchmark's segment size, fallocated, zero-filled and synced like a
// SYNC_FLUSH segment, appended to 1 KiB at a time (never rewriting the
// same block).
//
// Run: go test -run '^$' -bench . -benchtime 2s ./internal/store/

type diskBaseline struct {
	seqMBps   float64 // sequential 1 MiB writes + final fdatasync, new file
	fsyncRate float64 // 1 KiB write + fdatasync per op, preallocated file
}

var (
	baselineOnce sync.Once
	baseline     diskBaseline
	probe        *fsyncProbe
	probeDir     string
)

// TestMain removes the disk probe's files, which outlive single benchmarks.
func TestMain(m *testing.M) {
	code := m.Run()
	if probe != nil {
		probe.fd.Close()
	}
	if probeDir != "" {
		os.RemoveAll(probeDir)
	}
	os.Exit(code)
}

func measureDisk(b *testing.B) diskBaseline {
	baselineOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tide-bench-disk")
		if err != nil {
			b.Fatal(err)
		}
		probeDir = dir
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

		probe = newFsyncProbe(b, filepath.Join(dir, "sync"), benchSegmentSize())
		baseline.fsyncRate = probe.rate(time.Second)
		b.Logf("disk baseline: sequential write %.0f MB/s, fdatasync %.0f/s", baseline.seqMBps, baseline.fsyncRate)
	})
	return baseline
}

// fsyncProbe measures the single-writer fdatasync rate: 1 KiB pwrite at
// the next offset, then fdatasync, on a preallocated zero-filled file. One
// file serves every probe of the process; TestMain removes it.
type fsyncProbe struct {
	fd   *os.File
	size int64
	off  int64
	rec  []byte
}

func newFsyncProbe(b *testing.B, path string, size int64) *fsyncProbe {
	g, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := syscall.Fallocate(int(g.Fd()), 0, 0, size); err != nil {
		b.Fatal(err)
	}
	zero := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(zero)) {
		if _, err := g.WriteAt(zero, off); err != nil {
			b.Fatal(err)
		}
	}
	syscall.Fdatasync(int(g.Fd()))
	rec := make([]byte, 1024)
	for i := range rec {
		rec[i] = byte(i)
	}
	return &fsyncProbe{fd: g, size: size, rec: rec}
}

func (p *fsyncProbe) rate(d time.Duration) float64 {
	start := time.Now()
	n := 0
	for time.Since(start) < d {
		if p.off+int64(len(p.rec)) > p.size {
			p.off = 0
		}
		p.fd.WriteAt(p.rec, p.off)
		syscall.Fdatasync(int(p.fd.Fd()))
		p.off += int64(len(p.rec))
		n++
	}
	return float64(n) / time.Since(start).Seconds()
}

// cpuTime returns the user + system CPU time the process has used so far
// (every thread: appenders, flusher, dispatcher, segment creation).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchSegmentSize() int64 {
	if v := os.Getenv("TIDE_BENCH_SEGMENT_MB"); v != "" {
		if mb, err := strconv.Atoi(v); err == nil && mb > 0 {
			return int64(mb) << 20
		}
	}
	return 256 << 20
}

func benchConfig(b *testing.B, flush string) Config {
	c := DefaultConfig()
	c.StorePathRootDir = b.TempDir()
	c.MappedFileSizeCommitLog = benchSegmentSize()
	c.FlushDiskType = flush
	c.MessageIndexEnable = false
	if w := os.Getenv("TIDE_BENCH_WARM"); w != "" {
		c.WarmMapedFileEnable = w == "1"
	}
	if v := os.Getenv("TIDE_BENCH_PRETOUCH_KB"); v != "" {
		kb, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		c.CommitLogPretouchAhead = int64(kb) << 10
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
	fsyncRate := base.fsyncRate
	probeRuns := flush == SyncFlush && b.N >= 100
	if probeRuns {
		fsyncRate = probe.rate(300 * time.Millisecond)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
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
	cpu := cpuTime() - cpu0
	b.StopTimer()
	rate := float64(b.N) / el
	st := s.Stats()
	if probeRuns {
		fsyncRate = (fsyncRate + probe.rate(300*time.Millisecond)) / 2
		b.ReportMetric(fsyncRate, "raw_fsync/s")
	}
	b.ReportMetric(rate, "msgs/s")
	b.ReportMetric(rate*float64(size)/1e6/base.seqMBps, "raw_bw_x")
	b.ReportMetric(rate/fsyncRate, "fsync_x")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu_us/msg")
	b.ReportMetric(cpu.Seconds()/el, "cpus")
	if flush == SyncFlush {
		b.ReportMetric(float64(st.Messages)/float64(max(1, st.Flushes)), "msgs/fsync")
		b.ReportMetric(float64(st.FlushTime.Microseconds())/float64(max(1, st.Flushes)), "us/round")
		b.ReportMetric(st.FlushTime.Seconds()/el, "flush_busy")
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
