package commitlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func record(t testing.TB, body string) []byte {
	m := &protocol.MessageExt{BornHost: netip.MustParseAddrPort("1.2.3.4:5"), StoreHost: netip.MustParseAddrPort("5.6.7.8:9")}
	m.Topic, m.Body = "t", []byte(body)
	b, err := protocol.AppendStored(nil, m, "")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// setPhy is the prepare callback for single-record appends.
func setPhy(phy int64, data []byte) error {
	for i := 0; i < 8; i++ {
		data[protocol.RecordPhyOffsetPos+i] = byte(phy >> (56 - 8*i))
	}
	return nil
}

func openLog(t testing.TB, dir string, size int64, sync bool) *Log {
	t.Helper()
	l, err := Open(Options{Dir: dir, FileSize: size, SyncFlush: sync, Warm: true, Interval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Recover(-1, true); err != nil {
		t.Fatal(err)
	}
	l.Start()
	t.Cleanup(func() { l.Shutdown(); l.Close() })
	return l
}

func TestLogAppendRollsWithBlankFiller(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, 4096, false)
	var offs []int64
	var recs [][]byte
	for i := 0; i < 40; i++ {
		r := record(t, fmt.Sprintf("%03d%s", i, bytes.Repeat([]byte("b"), 200)))
		off, err := l.Append(r, setPhy)
		if err != nil {
			t.Fatal(err)
		}
		offs, recs = append(offs, off), append(recs, r)
	}
	if len(l.Segments()) < 3 {
		t.Fatalf("%d segments", len(l.Segments()))
	}
	for i, off := range offs {
		got, err := l.ReadRecord(nil, off)
		if err != nil || !bytes.Equal(got, recs[i]) {
			t.Fatalf("record %d at %d: %v", i, off, err)
		}
		if off%4096+int64(len(got))+8 > 4096 {
			t.Fatalf("record %d at %d leaves no room for a filler", i, off)
		}
	}
	// The end of the first segment holds a filler up to its end.
	first := l.Segments()[0]
	end := offs[1]
	for _, o := range offs {
		if o < 4096 {
			end = o + int64(len(recs[0]))
		}
	}
	size, magic, _ := protocol.PeekRecord(first.Data()[end:])
	if magic != protocol.BlankMagic || int64(size) != 4096-end {
		t.Fatalf("filler at %d: size %d magic %x", end, size, magic)
	}
	if _, err := l.Append(make([]byte, 4096), setPhy); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized append: %v", err)
	}
	if _, err := l.ReadRecord(nil, l.MaxOffset()); !errors.Is(err, ErrOffsetBeyond) {
		t.Fatalf("read past end: %v", err)
	}
	l.RemoveFront(1)
	if _, err := l.ReadRecord(nil, 0); !errors.Is(err, ErrOffsetRemoved) {
		t.Fatalf("read removed: %v", err)
	}
}

func TestLogRecover(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(b []byte, last int) // b is the first segment, last the last record's start
		records int64
		reason  bool
	}{
		{"clean", func(b []byte, last int) {}, 10, false},
		{"bad crc in last", func(b []byte, last int) { b[last+100] ^= 0xff }, 9, true},
		{"zeroed header of last", func(b []byte, last int) { clear(b[last : last+8]) }, 9, false},
		{"bad magic", func(b []byte, last int) { b[last+5] = 0 }, 9, true},
		{"size too big", func(b []byte, last int) { b[last+1] = 0x7f }, 9, true},
		{"wrong physical offset", func(b []byte, last int) { b[last+protocol.RecordPhyOffsetPos+7]++ }, 9, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(Options{Dir: dir, FileSize: 1 << 16})
			if err != nil {
				t.Fatal(err)
			}
			l.Recover(-1, true)
			last := int64(0)
			for i := 0; i < 10; i++ {
				last, _ = l.Append(record(t, fmt.Sprintf("body %d %s", i, bytes.Repeat([]byte("z"), 150))), setPhy)
			}
			end := l.MaxOffset()
			l.Shutdown()
			path := l.Segments()[0].Path()
			l.Close()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(b, int(last))
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			l, err = Open(Options{Dir: dir, FileSize: 1 << 16})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			res, err := l.Recover(0, true)
			if err != nil {
				t.Fatal(err)
			}
			if res.Records != tc.records || (res.Reason != nil) != tc.reason {
				t.Fatalf("records %d reason %v", res.Records, res.Reason)
			}
			wantEnd := end
			if tc.records < 10 {
				wantEnd = last
			}
			if res.End != wantEnd || l.MaxOffset() != wantEnd {
				t.Fatalf("end %d / %d, want %d", res.End, l.MaxOffset(), wantEnd)
			}
			if tc.records < 10 && !isZero(l.Segments()[0].Data()[last:end]) {
				t.Fatal("torn tail not cleared")
			}
		})
	}
}

func TestLogGroupCommit(t *testing.T) {
	l := openLog(t, t.TempDir(), 1<<20, true)
	const n = 64
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			off, err := l.Append(record(t, "x"), setPhy)
			if err == nil {
				err = l.WaitFlushed(context.Background(), off+1, 5*time.Second)
			}
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if l.FlushedOffset() < l.MaxOffset() {
		t.Fatalf("flushed %d < %d", l.FlushedOffset(), l.MaxOffset())
	}
	t.Logf("%d appends, %d fsyncs", n, l.Flushes.Load())
}

func TestLogAppendRaw(t *testing.T) {
	src := openLog(t, t.TempDir(), 4096, false)
	for i := 0; i < 30; i++ {
		src.Append(record(t, fmt.Sprintf("%d%s", i, bytes.Repeat([]byte("q"), 300))), setPhy)
	}
	dst := openLog(t, t.TempDir(), 4096, false)
	if err := dst.AppendRaw(5, []byte("x")); !errors.Is(err, ErrWrongOffset) {
		t.Fatalf("misaligned raw append: %v", err)
	}
	for off := int64(0); off < src.MaxOffset(); {
		b, err := src.ReadRaw(off, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if err := dst.AppendRaw(off, b); err != nil {
			t.Fatal(err)
		}
		off += int64(len(b))
	}
	if dst.MaxOffset() != src.MaxOffset() {
		t.Fatalf("dst end %d, src %d", dst.MaxOffset(), src.MaxOffset())
	}
	for i, f := range src.Segments() {
		if !bytes.Equal(f.Data()[:f.WrotePosition()], dst.Segments()[i].Data()[:f.WrotePosition()]) {
			t.Fatalf("segment %d differs", i)
		}
	}
}

// TestLogWaitFlushedFollowerTimeout: while a flush leader is stuck (here:
// blocked on the append lock the test holds), followers get
// ErrFlushTimeout after their timeout, or ctx's error, and the leader
// still finishes its flush once unblocked.
func TestLogWaitFlushedFollowerTimeout(t *testing.T) {
	l := openLog(t, t.TempDir(), 1<<20, true)
	off, err := l.Append(record(t, "x"), setPhy)
	if err != nil {
		t.Fatal(err)
	}
	end := off + 1
	// Stall every flush in writeStage (as a stuck write would) without
	// holding the append lock, which the background flusher also takes.
	stall := func(on bool) {
		l.mu.Lock()
		l.writing = on
		if !on {
			l.cond.Broadcast()
		}
		l.mu.Unlock()
	}
	stall(true)
	stalled := true
	defer func() {
		if stalled {
			stall(false)
		}
	}()
	leader := make(chan error, 1)
	go func() { leader <- l.WaitFlushed(context.Background(), end, 5*time.Second) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.fmu.Lock()
		running := l.flushing
		l.fmu.Unlock()
		if running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no flush started")
		}
		runtime.Gosched()
	}

	const timeout = 50 * time.Millisecond
	start := time.Now()
	if err := l.WaitFlushed(context.Background(), end, timeout); !errors.Is(err, ErrFlushTimeout) {
		t.Fatalf("follower: %v, want ErrFlushTimeout", err)
	}
	if el := time.Since(start); el < timeout {
		t.Fatalf("follower timed out after %v < %v", el, timeout)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.WaitFlushed(ctx, end, 5*time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled follower: %v", err)
	}

	stall(false)
	stalled = false
	if err := <-leader; err != nil {
		t.Fatalf("leader: %v", err)
	}
	if l.FlushedOffset() < end {
		t.Fatalf("flushed %d < %d", l.FlushedOffset(), end)
	}
}
