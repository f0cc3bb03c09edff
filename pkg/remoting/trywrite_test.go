package remoting

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// serverConn starts a server (WriteTimeout one hour: only the short
// deadline of TryInvokeOneway can end a write) and returns a raw client
// connection and the server's end of it.
func serverConn(t *testing.T) (net.Conn, *Conn) {
	t.Helper()
	got := make(chan *Conn, 1)
	s := NewServer(ServerOptions{Logger: testLogger(), WriteTimeout: time.Hour})
	s.HandleFunc(testCode, func(_ context.Context, c *Conn, req *protocol.Command) *protocol.Command {
		select {
		case got <- c:
		default:
		}
		return protocol.NewResponse(req, protocol.Success, "")
	})
	nc := dialRaw(t, startServer(t, s))
	writeCmd(t, nc, request(1))
	readCmd(t, nc)
	return nc, <-got
}

// TestTryInvokeOnewayPeerNotReading: to a peer that stops reading,
// TryInvokeOneway gives up within its short timeout, though the
// connection's write timeout is an hour. When it gave up before writing
// any byte (ErrTimeout) the connection stays open and every frame sent
// before arrives intact; a frame cut short closes the connection.
func TestTryInvokeOnewayPeerNotReading(t *testing.T) {
	nc, c := serverConn(t)
	body := make([]byte, 1000)
	sent := 0
	var err error
	for err == nil {
		start := time.Now()
		err = c.TryInvokeOneway(protocol.NewRequest(testCode, nil, body), 200*time.Millisecond)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("TryInvokeOneway took %v", d)
		}
		if err == nil {
			sent++
		}
	}
	t.Logf("%d frames taken before the peer's buffers filled; then %v", sent, err)
	switch {
	case errors.Is(err, ErrTimeout):
		if c.Err() != nil {
			t.Fatalf("connection closed after a timeout that wrote nothing: %v", c.Err())
		}
		for i := 0; i < sent; i++ {
			if cmd := readCmd(t, nc); cmd.Code != testCode || len(cmd.Body) != len(body) {
				t.Fatalf("frame %d: code %d, body %d bytes", i, cmd.Code, len(cmd.Body))
			}
		}
		// the connection still works both ways
		if err := c.TryInvokeOneway(protocol.NewRequest(testCode, nil, body), 5*time.Second); err != nil {
			t.Fatalf("after the reader caught up: %v", err)
		}
		readCmd(t, nc)
	case errors.Is(err, ErrClosed):
		<-c.Done()
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, rerr := io.Copy(io.Discard, nc); rerr != nil {
			t.Fatalf("draining a closed connection: %v", rerr)
		}
	default:
		t.Fatalf("unexpected error %v", err)
	}
}

// TestTryInvokeOnewayBusy: while another write to a peer that does not
// read is stuck, TryInvokeOneway sends nothing and returns ErrWriteBusy
// after its timeout, leaving the connection open.
func TestTryInvokeOnewayBusy(t *testing.T) {
	nc, c := serverConn(t)
	// A fixed receive buffer: with autotuning the peer's may grow to
	// net.ipv4.tcp_rmem's maximum (32 MiB on some kernels) and take the
	// whole 15 MiB, so the write would finish instead of staying busy.
	if err := nc.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	// The response to serverConn's request may still hold the queue for
	// a moment after the peer read it: wait until it is idle, so the busy
	// seen below is the big write's.
	waitFor(t, "the queue idle", func() bool {
		c.wq.mu.Lock()
		defer c.wq.mu.Unlock()
		return !c.wq.busy
	})
	stuck := make(chan error, 1)
	go func() { // 15 MiB: more than the socket buffers take
		stuck <- c.InvokeOneway(context.Background(), protocol.NewRequest(testCode, nil, make([]byte, 15<<20)))
	}()
	waitFor(t, "the big write to start", func() bool {
		c.wq.mu.Lock()
		defer c.wq.mu.Unlock()
		return c.wq.busy
	})
	start := time.Now()
	err := c.TryInvokeOneway(protocol.NewRequest(testCode, nil, nil), 300*time.Millisecond)
	if !errors.Is(err, ErrWriteBusy) {
		select {
		case e := <-stuck:
			t.Fatalf("err = %v, want ErrWriteBusy (the big write returned %v)", err, e)
		default:
		}
		t.Fatalf("err = %v, want ErrWriteBusy (the big write still running)", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("TryInvokeOneway took %v", d)
	}
	if c.Err() != nil {
		t.Fatalf("connection closed: %v", c.Err())
	}
	c.Close()
	<-stuck
}
