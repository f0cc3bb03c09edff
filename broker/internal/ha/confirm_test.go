package ha

import (
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// TestConfirmOffsetBoundsSlaveDispatch: in controller mode every transfer
// carries the master's confirm offset, and a slave whose dispatch limit is
// the confirm offset it received dispatches (makes visible) nothing past
// it, although it holds the bytes; when the confirm offset rises on an
// idle master (heartbeats a minute apart), the slave learns it at once.
func TestConfirmOffsetBoundsSlaveDispatch(t *testing.T) {
	mst, _ := newStore(t)
	var confirm atomic.Int64
	srv := startServer(t, mst, ServerOptions{ExpectBrokerID: true, HeartbeatInterval: time.Minute, ConfirmOffset: confirm.Load})
	sst, _ := newStore(t)
	var cl atomic.Pointer[Client]
	sst.SetDispatchLimit(func() int64 {
		if c := cl.Load(); c != nil {
			return c.ConfirmOffset()
		}
		return 0
	})
	cl.Store(startClient(t, sst, srv.Addr(), ClientOptions{BrokerID: 2, HeartbeatInterval: time.Minute, OnConfirm: sst.WakeDispatcher}))
	p := newProducer(3)
	mid := p.put(t, mst, 10)
	end := p.put(t, mst, 10)
	waitFor(t, "the slave holds every byte", func() bool { return sst.MaxPhyOffset() == end })
	if got := sst.DispatchedOffset(); got != 0 {
		t.Fatalf("confirm offset 0: the slave dispatched to %d", got)
	}
	confirm.Store(mid)
	srv.Notify() // as an ack does
	waitFor(t, "the slave dispatches to the confirm offset", func() bool { return sst.DispatchedOffset() >= mid })
	if got := sst.DispatchedOffset(); got != mid {
		t.Fatalf("dispatched to %d, want exactly the confirm offset %d", got, mid)
	}
	if got := cl.Load().Status().ConfirmOffset; got != mid {
		t.Fatalf("status confirm offset %d, want %d", got, mid)
	}
	confirm.Store(end) // no new data, no ack, no Notify: the master's poll sees it
	waitFor(t, "the slave dispatches everything once confirmed", func() bool { return sst.DispatchedOffset() == end })
	assertSameQueues(t, mst, sst)

	cl.Load().SetMasterAddress("127.0.0.1:1")
	if got := cl.Load().ConfirmOffset(); got != 0 {
		t.Fatalf("confirm offset %d after the master address changed, want 0", got)
	}
}

// TestConfirmHeaderOnlyForTDH2: a slave whose hello is the older "TDH1"
// gets the 4.x 12-byte transfer headers (the data stream parses as
// before); a "TDH2" slave gets the confirm offset after them.
func TestConfirmHeaderOnlyForTDH2(t *testing.T) {
	mst, _ := newStore(t)
	srv := startServer(t, mst, ServerOptions{ExpectBrokerID: true, ConfirmOffset: func() int64 { return 77 }})
	end := newProducer(4).put(t, mst, 5)
	for _, tc := range []struct {
		magic uint32
		want  int
	}{{helloMagicV1, headerSize}, {helloMagic, confirmHeaderSize}} {
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		hello := binary.BigEndian.AppendUint32(nil, tc.magic)
		hello = binary.BigEndian.AppendUint64(hello, 9)
		if _, err := nc.Write(appendReport(hello, 0)); err != nil {
			t.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		hdr := make([]byte, tc.want)
		if _, err := io.ReadFull(nc, hdr); err != nil {
			t.Fatal(err)
		}
		off, size, err := decodeHeader(hdr, maxFrameBody)
		if err != nil || off != 0 || size == 0 || int64(size) > end {
			t.Fatalf("magic %#x: header %d %d %v", tc.magic, off, size, err)
		}
		if tc.want == confirmHeaderSize {
			if c, err := decodeConfirm(hdr); err != nil || c != 77 {
				t.Fatalf("confirm offset %d %v, want 77", c, err)
			}
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(nc, body); err != nil {
			t.Fatal(err)
		}
		if n, _ := wholeRecords(body); n != size {
			t.Fatalf("magic %#x: the body is not whole records (%d of %d): the header length is wrong", tc.magic, n, size)
		}
	}
}
