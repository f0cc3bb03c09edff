package segment

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
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

func modeName(m Mode) string {
	switch m {
	case PWrite:
		return "pwrite"
	case MapWriteSparse:
		return "mmap-sparse"
	}
	return "mmap"
}
