package ha

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/internal/store"
)

// fakeSlave dials the server and sends the handshake report.
func fakeSlave(t *testing.T, addr string, report int64) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if _, err := nc.Write(appendReport(nil, report)); err != nil {
		t.Fatal(err)
	}
	return nc
}

func readySlaves(s *Server) int {
	n := 0
	for _, sl := range s.Status().Slaves {
		if sl.Ready {
			n++
		}
	}
	return n
}

// drain reads transfers from a fake slave connection until the data
// reaches end; it returns the end of what was read.
func drain(t *testing.T, nc net.Conn, end int64) {
	t.Helper()
	var got int64 = -1
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for got < end {
		var hdr [headerSize]byte
		if _, err := io.ReadFull(nc, hdr[:]); err != nil {
			t.Fatalf("fake slave read: %v", err)
		}
		off, size, err := decodeHeader(hdr[:], maxFrameBody)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(io.Discard, nc, int64(size)); err != nil {
			t.Fatal(err)
		}
		got = off + int64(size)
	}
}

func TestWaitSlaveAckRealSlave(t *testing.T) {
	for _, flush := range []string{store.AsyncFlush, store.SyncFlush} {
		t.Run(flush, func(t *testing.T) {
			mcfg := storeConfig(t.TempDir())
			mcfg.FlushDiskType = flush
			master := openStore(t, mcfg)
			srv := startServer(t, master, ServerOptions{PollInterval: time.Hour}) // only the waiters wake the sender
			slave, _ := newStore(t)
			startClient(t, slave, srv.Addr(), ClientOptions{})
			waitFor(t, "slave ready", func() bool { return readySlaves(srv) == 1 })
			p := newProducer(7)
			for range 100 {
				end := p.put(t, master, 1)
				if err := srv.WaitSlaveAck(context.Background(), end); err != nil {
					t.Fatalf("WaitSlaveAck(%d): %v", end, err)
				}
				if got := slave.MaxPhyOffset(); got < end {
					t.Fatalf("acked %d but the slave has %d", end, got)
				}
			}
			assertSameLog(t, master, slave)
			assertSameQueues(t, master, slave)
		})
	}
}

func TestWaitSlaveAckErrors(t *testing.T) {
	tests := []struct {
		name  string
		opts  ServerOptions
		slave bool // connect a stalled fake slave
		ctx   func() (context.Context, context.CancelFunc)
		want  error
	}{
		{name: "no slave", want: ErrSlaveNotAvailable},
		{name: "stalled slave times out", opts: ServerOptions{SlaveTimeout: 30 * time.Millisecond}, slave: true, want: ErrFlushSlaveTimeout},
		{name: "slave too far behind", opts: ServerOptions{MaxGapNotInSync: 1024, SlaveTimeout: time.Hour}, slave: true, want: ErrSlaveNotAvailable},
		{name: "context canceled", opts: ServerOptions{SlaveTimeout: time.Hour}, slave: true,
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			}, want: context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			master, _ := newStore(t)
			end := newProducer(8).put(t, master, 30)
			srv := startServer(t, master, tc.opts)
			if tc.slave {
				fakeSlave(t, srv.Addr(), 0) // never reads nor acks
				waitFor(t, "slave ready", func() bool { return readySlaves(srv) == 1 })
			}
			ctx, cancel := context.WithCancel(context.Background())
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			if err := srv.WaitSlaveAck(ctx, end); !errors.Is(err, tc.want) {
				t.Fatalf("WaitSlaveAck = %v, want %v", err, tc.want)
			}
			srv.acks.mu.Lock()
			n := len(srv.acks.h)
			srv.acks.mu.Unlock()
			if n != 0 {
				t.Fatalf("%d waiters left behind", n)
			}
		})
	}
}

func TestWaitSlaveAckCloseReleases(t *testing.T) {
	master, _ := newStore(t)
	end := newProducer(9).put(t, master, 5)
	srv := startServer(t, master, ServerOptions{SlaveTimeout: time.Hour})
	fakeSlave(t, srv.Addr(), 0)
	waitFor(t, "slave ready", func() bool { return readySlaves(srv) == 1 })
	errc := make(chan error, 1)
	go func() { errc <- srv.WaitSlaveAck(context.Background(), end) }()
	waitFor(t, "waiter registered", func() bool { srv.acks.mu.Lock(); defer srv.acks.mu.Unlock(); return len(srv.acks.h) == 1 })
	srv.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitSlaveAck after Close = %v, want ErrClosed", err)
	}
	if err := srv.WaitSlaveAck(context.Background(), end); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitSlaveAck on a closed server = %v", err)
	}
}

// TestWaitSlaveAckGrouping: one ack releases exactly the waiters at or
// below it, in one step.
func TestWaitSlaveAckGrouping(t *testing.T) {
	master, _ := newStore(t)
	p := newProducer(10)
	ends := []int64{p.put(t, master, 3), p.put(t, master, 3), p.put(t, master, 3), p.put(t, master, 3)}
	srv := startServer(t, master, ServerOptions{SlaveTimeout: time.Hour})
	nc := fakeSlave(t, srv.Addr(), 0)
	waitFor(t, "slave ready", func() bool { return readySlaves(srv) == 1 })
	drain(t, nc, ends[3]) // everything sent: acks up to it are legal
	type result struct {
		i   int
		err error
	}
	res := make(chan result, len(ends))
	for i, e := range ends {
		go func() { res <- result{i, srv.WaitSlaveAck(context.Background(), e)} }()
	}
	waitFor(t, "4 waiters", func() bool { srv.acks.mu.Lock(); defer srv.acks.mu.Unlock(); return len(srv.acks.h) == 4 })
	nc.Write(appendReport(nil, ends[1]))
	got := map[int]bool{}
	for range 2 {
		r := <-res
		if r.err != nil || r.i > 1 {
			t.Fatalf("waiter %d released with %v after ack %d", r.i, r.err, ends[1])
		}
		got[r.i] = true
	}
	srv.acks.mu.Lock()
	left := len(srv.acks.h)
	srv.acks.mu.Unlock()
	if left != 2 || len(got) != 2 {
		t.Fatalf("after the first ack: released %v, %d still waiting", got, left)
	}
	nc.Write(appendReport(nil, ends[3]))
	for range 2 {
		if r := <-res; r.err != nil {
			t.Fatalf("waiter %d: %v", r.i, r.err)
		}
	}
}

func TestDivergentSlaveRefused(t *testing.T) {
	master, _ := newStore(t)
	end := newProducer(11).put(t, master, 10)
	srv := startServer(t, master, ServerOptions{})

	t.Run("fake slave ahead", func(t *testing.T) {
		nc := fakeSlave(t, srv.Addr(), end+1000)
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := nc.Read(make([]byte, 64)); err == nil {
			t.Fatalf("the master sent %d bytes to a divergent slave", n)
		} else if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("the master kept the divergent slave connected")
		}
		if err := srv.WaitSlaveAck(context.Background(), end); !errors.Is(err, ErrSlaveNotAvailable) {
			t.Fatalf("WaitSlaveAck = %v", err)
		}
	})
	t.Run("real slave with another history", func(t *testing.T) {
		other, _ := newStore(t)
		newProducer(99).put(t, other, 40) // more data than the master
		before := other.MaxPhyOffset()
		cl := startClient(t, other, srv.Addr(), ClientOptions{})
		waitFor(t, "refusals", func() bool { return cl.Status().Sessions >= 3 })
		if got := other.MaxPhyOffset(); got != before {
			t.Fatalf("divergent slave changed: %d -> %d", before, got)
		}
	})
}

func TestServerRejectsBadAcks(t *testing.T) {
	master, _ := newStore(t)
	end := newProducer(12).put(t, master, 10)
	srv := startServer(t, master, ServerOptions{})
	for _, tc := range []struct {
		name string
		ack  int64
	}{
		{"ack past what was sent", end + 1},
		{"ack going backwards", end / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := fakeSlave(t, srv.Addr(), end/2+1)
			waitFor(t, "slave ready", func() bool { return readySlaves(srv) >= 1 })
			drain(t, nc, end)
			nc.Write(appendReport(nil, end))
			nc.Write(appendReport(nil, tc.ack))
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			for {
				if _, err := nc.Read(make([]byte, 64)); err != nil {
					if errors.Is(err, os.ErrDeadlineExceeded) {
						t.Fatal("connection kept after a bad ack")
					}
					break
				}
			}
		})
	}
}

func TestStatus(t *testing.T) {
	master, _ := newStore(t)
	p := newProducer(13)
	p.put(t, master, 20)
	srv := startServer(t, master, ServerOptions{})
	slave, _ := newStore(t)
	cl := startClient(t, slave, srv.Addr(), ClientOptions{})
	waitCaughtUp(t, master, slave)
	waitFor(t, "final ack", func() bool {
		st := srv.Status()
		return len(st.Slaves) == 1 && st.Slaves[0].AckedOffset == master.MaxPhyOffset()
	})
	st := srv.Status()
	sl := st.Slaves[0]
	if !sl.Ready || sl.LagBytes != 0 || sl.LagTime != 0 || sl.ConnectedSince.IsZero() || sl.LastAck.IsZero() ||
		st.MaxOffset != master.MaxPhyOffset() || st.Addr != srv.Addr() || st.Acked != st.MaxOffset {
		t.Fatalf("caught-up server status: %+v", st)
	}
	cs := cl.Status()
	if !cs.Connected || cs.MasterAddr != srv.Addr() || cs.MaxOffset != master.MaxPhyOffset() || cs.LastReport.IsZero() ||
		cs.LastReceive.IsZero() || cs.Sessions != 1 {
		t.Fatalf("client status: %+v", cs)
	}

	// A stalled slave shows its lag in bytes and time.
	fakeSlave(t, srv.Addr(), 0)
	waitFor(t, "lag time", func() bool {
		for _, s := range srv.Status().Slaves {
			if s.Ready && s.AckedOffset == 0 && s.LagBytes == master.MaxPhyOffset() && s.LagTime > 0 {
				return true
			}
		}
		return false
	})
	srv.logStatus() // exercised for coverage; output discarded
}

func TestHeartbeatsKeepIdleConnection(t *testing.T) {
	const hb, timeout = 10 * time.Millisecond, 300 * time.Millisecond
	master, _ := newStore(t)
	newProducer(14).put(t, master, 5)
	srv := startServer(t, master, ServerOptions{HeartbeatInterval: hb, ReadTimeout: timeout})
	slave, _ := newStore(t)
	cl := startClient(t, slave, srv.Addr(), ClientOptions{HeartbeatInterval: hb, ReadTimeout: timeout})
	waitCaughtUp(t, master, slave)
	// Heartbeats flow both ways on the idle connection...
	recv, ack := cl.Status().LastReceive, srv.Status().Slaves[0].LastAck
	waitFor(t, "heartbeats", func() bool {
		sl := srv.Status().Slaves
		return cl.Status().LastReceive.After(recv) && len(sl) == 1 && sl[0].LastAck.After(ack)
	})
	// ...and keep it up for several read timeouts: still one session.
	waitFor(t, "idle time", func() bool { return time.Since(cl.Status().ConnectedSince) > 4*timeout })
	if st := cl.Status(); st.Sessions != 1 || !st.Connected {
		t.Fatalf("the idle connection was dropped: %+v", st)
	}
}

// fakeMaster accepts connections and hands each to serve.
func fakeMaster(t *testing.T, serve func(nc net.Conn, report int64)) (addr string, accepted chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = make(chan struct{}, 100)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case accepted <- struct{}{}:
			default:
			}
			go func() {
				defer nc.Close()
				var b [reportSize]byte
				if _, err := io.ReadFull(nc, b[:]); err != nil {
					return
				}
				serve(nc, decodeReport(b[:]))
			}()
		}
	}()
	return ln.Addr().String(), accepted
}

func TestClientReconnects(t *testing.T) {
	hold := func(nc net.Conn) { io.Copy(io.Discard, nc) } // read reports until closed
	tests := []struct {
		name  string
		serve func(nc net.Conn, report int64)
	}{
		{"silent master: read timeout", func(nc net.Conn, _ int64) { hold(nc) }},
		{"transfer leaving a gap", func(nc net.Conn, r int64) {
			nc.Write(append(appendHeader(nil, r+100, 4), 1, 2, 3, 4))
			hold(nc)
		}},
		{"heartbeat at another offset", func(nc net.Conn, r int64) {
			nc.Write(appendHeader(nil, r-1, 0))
			hold(nc)
		}},
		{"negative body size", func(nc net.Conn, r int64) {
			nc.Write(append(appendHeader(nil, r, 0)[:8], 0xff, 0xff, 0xff, 0xf0))
			hold(nc)
		}},
		{"body larger than the limit", func(nc net.Conn, r int64) {
			nc.Write(appendHeader(nil, r, maxFrameBody+1))
			hold(nc)
		}},
		{"transfer crossing a segment end", func(nc net.Conn, r int64) {
			nc.Write(append(appendHeader(nil, r, segSize), make([]byte, segSize)...))
			hold(nc)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			slave, _ := newStore(t)
			newProducer(15).put(t, slave, 5) // a slave with data
			before := slave.MaxPhyOffset()
			addr, accepted := fakeMaster(t, tc.serve)
			startClient(t, slave, addr, ClientOptions{ReadTimeout: 50 * time.Millisecond})
			for range 3 {
				select {
				case <-accepted:
				case <-time.After(20 * time.Second):
					t.Fatal("the client did not reconnect")
				}
			}
			if got := slave.MaxPhyOffset(); got != before {
				t.Fatalf("slave changed: %d -> %d", before, got)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	bad := []ServerOptions{{MaxTransfer: 10}, {HeartbeatInterval: -1}, {MaxGapNotInSync: -1}, {SlaveTimeout: -time.Second}}
	for _, o := range bad {
		if err := o.Validate(); !errors.Is(err, ErrBadOptions) {
			t.Errorf("ServerOptions%+v.Validate() = %v", o, err)
		}
	}
	badC := []ClientOptions{{ReadTimeout: -1}, {MinBackoff: time.Second, MaxBackoff: time.Millisecond}, {SegmentSize: -1}}
	for _, o := range badC {
		if err := o.Validate(); !errors.Is(err, ErrBadOptions) {
			t.Errorf("ClientOptions%+v.Validate() = %v", o, err)
		}
	}
	if _, err := NewServer(nil, ServerOptions{}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("NewServer(nil) = %v", err)
	}
	if _, err := NewClient(nil, ClientOptions{}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("NewClient(nil) = %v", err)
	}
	if err := (&ServerOptions{}).Validate(); err != nil {
		t.Errorf("zero ServerOptions: %v", err)
	}
	if err := (&ClientOptions{}).Validate(); err != nil {
		t.Errorf("zero ClientOptions: %v", err)
	}
}
