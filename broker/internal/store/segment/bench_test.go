package segment

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// These benchmarks are the measurements behind the write modes chosen in
// the package comment (docs/store.md has results):
//
//	go test -run '^$' -bench . ./internal/store/segment/
//
// BenchmarkWrite: 1 KiB records written sequentially into a 64 MiB file,
// through a writable mapping (copy) or pwrite, on a file that is only
// fallocated (cold) or also zero-filled (warm).
// BenchmarkWriteFsync: one 1 KiB record then fdatasync per op.
// BenchmarkWritePretouch: appends through the mapping into a cold
// (fallocated only) file, with a goroutine keeping `ahead` bytes past the
// written end prefaulted (File.Prefault, as the commit log's pre-toucher
// does) or not (ahead=0); cpu-ns/op is the whole process's CPU (writer and
// pre-toucher) per op. flush=N fdatasyncs the file after every N MiB
// written, from another goroutine, as the ASYNC_FLUSH flusher does every
// flushIntervalCommitLog: a flush writes back prefaulted pages the writer
// has not reached yet and write-protects them, so the writer faults on
// them again (more cheaply).

const benchFile = 64 << 20

func BenchmarkWrite(b *testing.B) {
	for _, mode := range []Mode{MapWrite, PWrite} {
		for _, warm := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/warm=%v", modeName(mode), warm), func(b *testing.B) {
				rec := make([]byte, 1024)
				b.SetBytes(int64(len(rec)))
				var f *File
				pos := int64(benchFile)
				for i := 0; i < b.N; i++ {
					if pos+int64(len(rec)) > benchFile {
						b.StopTimer()
						if f != nil {
							f.Remove()
						}
						var err error
						f, err = Create(filepath.Join(b.TempDir(), Name(0)), 0, benchFile, warm, mode)
						if err != nil {
							b.Fatal(err)
						}
						pos = 0
						b.StartTimer()
					}
					if err := f.WriteAt(rec, pos); err != nil {
						b.Fatal(err)
					}
					pos += int64(len(rec))
				}
				b.StopTimer()
				f.Remove()
			})
		}
	}
}

func BenchmarkWriteFsync(b *testing.B) {
	for _, mode := range []Mode{MapWrite, PWrite} {
		b.Run(modeName(mode), func(b *testing.B) {
			f, err := Create(filepath.Join(b.TempDir(), Name(0)), 0, benchFile, true, mode)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Remove()
			rec := make([]byte, 1024)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				pos := int64(i%(benchFile/1024)) * 1024
				f.WriteAt(rec, pos)
				if err := syscall.Fdatasync(int(f.fd.Fd())); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fsyncs/s")
		})
	}
}

func BenchmarkWritePretouch(b *testing.B) {
	for _, flush := range []int64{0, 8} {
		for _, rec := range []int{1024, 16 << 10} {
			for _, ahead := range []int64{0, 1 << 20, 4 << 20} {
				b.Run(fmt.Sprintf("flush=%dMiB/rec=%d/ahead=%dKiB", flush, rec, ahead>>10), func(b *testing.B) {
					benchWritePretouch(b, rec, ahead, flush<<20, false)
				})
			}
			// The alternative not taken: populate read-only (the pages
			// stay clean, the writer still takes a write fault on each).
			b.Run(fmt.Sprintf("flush=%dMiB/rec=%d/ahead=1024KiB-read", flush, rec), func(b *testing.B) {
				benchWritePretouch(b, rec, 1<<20, flush<<20, true)
			})
		}
	}
}

// madvPopulateRead is MADV_POPULATE_READ (Linux 5.14).
const madvPopulateRead = 22

func benchWritePretouch(b *testing.B, rec int, ahead, flushEvery int64, read bool) {
	const size = 256 << 20
	buf := make([]byte, rec)
	for i := range buf {
		buf[i] = byte(i)
	}
	b.SetBytes(int64(rec))
	var (
		f     *File
		pos   = int64(size)
		wrote atomic.Int64
		stop  = func() {}
		cpu   time.Duration
		c0    time.Duration
	)
	// toucher mimics commitlog.touchAhead: keep [wrote, wrote+ahead)
	// prefaulted, woken by polling.
	toucher := func(f *File) func() {
		quit, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			var touched int64
			for {
				select {
				case <-quit:
					return
				default:
				}
				w := wrote.Load()
				if touched >= min(size, w+ahead/2) {
					time.Sleep(50 * time.Microsecond)
					continue
				}
				from := max(touched, w)
				to := min(size, w+ahead)
				if read {
					syscall.Madvise(f.data[from&^4095:(to+4095)&^4095], madvPopulateRead)
				} else if err := f.Prefault(from, to-from); errors.Is(err, ErrPrefaultUnsupported) {
					return
				}
				touched = to
			}
		}()
		return func() { close(quit); <-done }
	}
	flushReq := make(chan *File, 1)
	flushDone := make(chan struct{})
	var flushing sync.Mutex // held while a flush runs
	go func() {
		defer close(flushDone)
		for g := range flushReq {
			flushing.Lock()
			syscall.Fdatasync(int(g.fd.Fd()))
			flushing.Unlock()
		}
	}()
	defer func() { close(flushReq); <-flushDone }()
	nextFlush := int64(0)
	for i := 0; i < b.N; i++ {
		if flushEvery > 0 && pos >= nextFlush && f != nil {
			nextFlush = pos + flushEvery
			select {
			case flushReq <- f:
			default:
			}
		}
		if pos+int64(rec) > size {
			b.StopTimer()
			if f != nil {
				cpu += cpuTime() - c0
				stop()
				select { // no flush of the file once it is removed
				case <-flushReq:
				default:
				}
				flushing.Lock()
				flushing.Unlock()
				f.Remove()
			}
			var err error
			if f, err = Create(filepath.Join(b.TempDir(), Name(0)), 0, size, false, MapWrite); err != nil {
				b.Fatal(err)
			}
			pos = 0
			wrote.Store(0)
			if ahead > 0 {
				stop = toucher(f)
			}
			c0 = cpuTime()
			b.StartTimer()
		}
		if err := f.WriteAt(buf, pos); err != nil {
			b.Fatal(err)
		}
		pos += int64(rec)
		wrote.Store(pos)
	}
	b.StopTimer()
	cpu += cpuTime() - c0
	stop()
	f.Remove()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user + system CPU time so far (every thread).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func modeName(m Mode) string {
	switch m {
	case PWrite:
		return "pwrite"
	case MapWriteSparse:
		return "mmap-sparse"
	}
	return "mmap"
}
