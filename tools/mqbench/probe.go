package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Limits is the machine's physical limits as measured by mqbench probe.
type Limits struct {
	Start          time.Time `json:"start"`
	Dir            string    `json:"dir"`
	SeqWriteMBps   float64   `json:"seq_write_mb_per_s"`   // 1 MiB buffered writes + one fdatasync
	FsyncPerSec    float64   `json:"fsync_per_s"`          // 1 KiB pwrite + fdatasync, preallocated file
	Fsync          Latency   `json:"fsync_latency"`        // per pwrite + fdatasync
	LoopbackMBps   float64   `json:"loopback_mb_per_s"`    // TCP bulk, 1 MiB writes
	LoopbackRTTps  float64   `json:"loopback_rtt_per_s"`   // 1 KiB request/response, one connection
	LoopbackRTT    Latency   `json:"loopback_rtt_latency"` // per round trip
	LimitMsgsPerSe float64   `json:"limit_1k_msgs_per_s"`  // min(disk, loopback) / 1 KiB
}

func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", os.TempDir(), "`directory` on the disk to probe (a file is created and removed)")
	size := fs.Int("mb", 512, "MiB written by the sequential probe")
	dur := fs.Duration("duration", 2*time.Second, "time per latency probe")
	jsonOut := fs.String("json", "", "also write JSON to this `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	l := Limits{Start: time.Now().UTC(), Dir: *dir}
	var err error
	if l.SeqWriteMBps, err = probeSeqWrite(*dir, *size); err != nil {
		return fmt.Errorf("sequential write: %w", err)
	}
	if l.FsyncPerSec, l.Fsync, err = probeFsync(*dir, *dur); err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	if l.LoopbackMBps, err = probeLoopbackBulk(*dur); err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if l.LoopbackRTTps, l.LoopbackRTT, err = probeLoopbackRTT(*dur); err != nil {
		return fmt.Errorf("loopback rtt: %w", err)
	}
	l.LimitMsgsPerSe = min(l.SeqWriteMBps, l.LoopbackMBps) * 1e6 / 1024
	fmt.Fprintf(stdout, "disk %s: sequential write %.0f MB/s; 1 KiB pwrite+fdatasync %.0f/s (%s)\n", *dir, l.SeqWriteMBps, l.FsyncPerSec, l.Fsync)
	fmt.Fprintf(stdout, "loopback TCP: bulk %.0f MB/s; 1 KiB request/response %.0f/s (%s)\n", l.LoopbackMBps, l.LoopbackRTTps, l.LoopbackRTT)
	fmt.Fprintf(stdout, "1 KiB ingestion limit (min of disk and loopback): %.0f msgs/s\n", l.LimitMsgsPerSe)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(l, "", "  ")
		return os.WriteFile(*jsonOut, append(b, '\n'), 0o644)
	}
	return nil
}

// probeSeqWrite writes mb MiB in 1 MiB writes to a new file and
// fdatasyncs it once: the bandwidth a log append can reach.
func probeSeqWrite(dir string, mb int) (float64, error) {
	f, err := os.CreateTemp(dir, "mqbench-probe-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	t0 := time.Now()
	for range mb {
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return 0, err
	}
	return float64(mb<<20) / time.Since(t0).Seconds() / 1e6, nil
}

// probeFsync appends 1 KiB with pwrite and fdatasyncs, one writer, on a
// preallocated zero-filled file (the way a SYNC_FLUSH commit log segment
// is prepared).
func probeFsync(dir string, d time.Duration) (float64, Latency, error) {
	f, err := os.CreateTemp(dir, "mqbench-fsync-*")
	if err != nil {
		return 0, Latency{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	const fileSize = 64 << 20
	zero := make([]byte, 1<<20)
	for range fileSize >> 20 {
		if _, err := f.Write(zero); err != nil {
			return 0, Latency{}, err
		}
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return 0, Latency{}, err
	}
	rec := newRecorder()
	rec1k := make([]byte, 1024)
	var off int64
	n := 0
	t0 := time.Now()
	for time.Since(t0) < d && off+1024 <= fileSize {
		s := time.Now()
		if _, err := f.WriteAt(rec1k, off); err != nil {
			return 0, Latency{}, err
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return 0, Latency{}, err
		}
		rec.Record(time.Since(s))
		off += 1024
		n++
	}
	return float64(n) / time.Since(t0).Seconds(), rec.Total(), nil
}

func probeLoopbackBulk(d time.Duration) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- 0
			return
		}
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		got <- n
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 1<<20)
	t0 := time.Now()
	for time.Since(t0) < d {
		if _, err := c.Write(buf); err != nil {
			c.Close()
			return 0, err
		}
	}
	c.Close()
	n := <-got
	return float64(n) / time.Since(t0).Seconds() / 1e6, nil
}

func probeLoopbackRTT(d time.Duration) (float64, Latency, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, Latency{}, err
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 1024)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, Latency{}, err
	}
	defer c.Close()
	buf := make([]byte, 1024)
	rec := newRecorder()
	n := 0
	t0 := time.Now()
	for time.Since(t0) < d {
		s := time.Now()
		if _, err := c.Write(buf); err != nil {
			return 0, Latency{}, err
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return 0, Latency{}, err
		}
		rec.Record(time.Since(s))
		n++
	}
	return float64(n) / time.Since(t0).Seconds(), rec.Total(), nil
}

var _ = filepath.Join
