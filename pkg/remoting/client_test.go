package remoting

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestServerPush: the server invokes the client on the connection the client
// opened (transaction check-back, NOTIFY_CONSUMER_IDS_CHANGED).
func TestServerPush(t *testing.T) {
	s := NewServer(ServerOptions{Logger: testLogger()})
	conns := make(chan *Conn, 1)
	s.HandleFunc(protocol.HeartBeat, func(_ context.Context, c *Conn, req *protocol.Command) *protocol.Command {
		conns <- c
		return protocol.NewResponse(req, protocol.Success, "")
	})
	addr := startServer(t, s)

	cl := newTestClient(t)
	notified := make(chan *protocol.Command, 1)
	cl.HandleFunc(protocol.CheckTransactionState, func(_ context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		resp := protocol.NewResponse(req, protocol.Success, "")
		resp.SetExt("msgId", req.Ext("msgId"))
		return resp
	})
	cl.HandleFunc(protocol.NotifyConsumerIDsChanged, func(_ context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		notified <- req
		return protocol.NewResponse(req, protocol.Success, "") // dropped: the request is oneway
	})
	if _, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, protocol.NewRequest(protocol.HeartBeat, nil, nil)); err != nil {
		t.Fatal(err)
	}
	sc := <-conns

	check := protocol.NewRequest(protocol.CheckTransactionState, map[string]string{"msgId": "ABC"}, nil)
	resp, err := sc.Invoke(ctxTimeout(t, 5*time.Second), check)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != protocol.Success || resp.Ext("msgId") != "ABC" || !resp.IsResponse() {
		t.Fatalf("check-back reply %+v", resp)
	}

	if err := sc.InvokeOneway(ctxTimeout(t, 5*time.Second), protocol.NewRequest(protocol.NotifyConsumerIDsChanged, map[string]string{"consumerGroup": "g"}, nil)); err != nil {
		t.Fatal(err)
	}
	if req := <-notified; req.Ext("consumerGroup") != "g" || !req.IsOneway() {
		t.Fatalf("notify %+v", req)
	}

	// The client ignores codes it has no handler for: no reply comes.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := sc.Invoke(ctx, protocol.NewRequest(protocol.GetConsumerRunningInfo, nil, nil)); !errors.Is(err, ErrTimeout) {
		t.Fatalf("unknown code at the client: %v, want a timeout", err)
	}
	// A flag-0 push whose handler answers is replied to.
	if _, err := sc.Invoke(ctxTimeout(t, 5*time.Second), check); err != nil {
		t.Fatal(err)
	}
}

func TestClientReconnect(t *testing.T) {
	ln, err := net.Listen("tcp", freeAddr(t)) // bound again after the first server stops
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	s1 := NewServer(ServerOptions{Logger: testLogger()})
	s1.Handle(testCode, echo)
	served := make(chan error, 1)
	go func() { served <- s1.Serve(ln) }()

	cl := newTestClient(t)
	if _, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(1)); err != nil {
		t.Fatal(err)
	}
	old, err := cl.Conn(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Shutdown(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("client did not notice the server going away")
	}
	if _, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(2)); !errors.Is(err, ErrDial) {
		t.Fatalf("with the server down: %v, want ErrDial", err)
	}

	s2 := NewServer(ServerOptions{Logger: testLogger()})
	s2.Handle(testCode, echo)
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	served2 := make(chan error, 1)
	go func() { served2 <- s2.Serve(ln2) }()
	defer func() {
		s2.Shutdown(ctxTimeout(t, 5*time.Second))
		<-served2
	}()
	resp, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(3))
	if err != nil || resp.Ext("i") != "3" {
		t.Fatalf("after restart: %v %v", resp, err)
	}
	if c, _ := cl.Conn(context.Background(), addr); c == old {
		t.Fatal("client reused the dead connection")
	}
}

// TestClientDialOnce: concurrent first calls share one dial.
func TestClientDialOnce(t *testing.T) {
	s, addr := newTestServer(t, ServerOptions{})
	cl := newTestClient(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := len(s.Conns()); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
	cl.CloseConn(addr)
	waitFor(t, "server to see the close", func() bool { return len(s.Conns()) == 0 })
	if _, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(1)); err != nil {
		t.Fatalf("after CloseConn: %v", err)
	}
}

// TestClientCloseFailsPending: Close fails waiting calls with ErrClosed and
// calls each async callback once with it.
func TestClientCloseFailsPending(t *testing.T) {
	s, addr := newTestServer(t, ServerOptions{})
	var entered sync.WaitGroup
	entered.Add(2)
	s.HandleFunc(protocol.PullMessage, func(ctx context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		entered.Done()
		<-ctx.Done()
		return nil
	})
	cl := NewClient(ClientOptions{Logger: testLogger()})
	ctx := ctxTimeout(t, 10*time.Second)
	syncErr := make(chan error, 1)
	go func() {
		_, err := cl.Invoke(ctx, addr, protocol.NewRequest(protocol.PullMessage, nil, nil))
		syncErr <- err
	}()
	asyncErr := make(chan error, 2)
	if err := cl.InvokeAsync(ctx, addr, protocol.NewRequest(protocol.PullMessage, nil, nil), func(_ *protocol.Command, err error) {
		asyncErr <- err
	}); err != nil {
		t.Fatal(err)
	}
	entered.Wait()
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-syncErr; !errors.Is(err, ErrClosed) {
		t.Fatalf("Invoke: %v", err)
	}
	if err := <-asyncErr; !errors.Is(err, ErrClosed) {
		t.Fatalf("InvokeAsync: %v", err)
	}
	if _, err := cl.Invoke(ctx, addr, request(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Invoke after Close: %v", err)
	}
	if err := cl.InvokeOneway(ctx, addr, request(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("InvokeOneway after Close: %v", err)
	}
	select {
	case err := <-asyncErr:
		t.Fatalf("callback called twice (%v)", err)
	default:
	}
}

func TestClientOneway(t *testing.T) {
	s, addr := newTestServer(t, ServerOptions{})
	got := make(chan *protocol.Command, 1)
	s.HandleFunc(protocol.UpdateConsumerOffset, func(_ context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		got <- req
		return protocol.NewResponse(req, protocol.Success, "")
	})
	cl := newTestClient(t)
	req := protocol.NewRequest(protocol.UpdateConsumerOffset, map[string]string{"queueId": "1"}, nil)
	if err := cl.InvokeOneway(ctxTimeout(t, 5*time.Second), addr, req); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.Flag != protocol.FlagOneway || r.Opaque != 1 || r.Ext("queueId") != "1" {
		t.Fatalf("server got %+v", r)
	}
	if req.Flag != 0 {
		t.Fatal("InvokeOneway modified the caller's request")
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	_, addr := newTestServer(b, ServerOptions{})
	cl := newTestClient(b)
	ctx := context.Background()
	req := protocol.NewRequest(testCode, map[string]string{"topic": "bench", "queueId": "1"}, make([]byte, 256))
	if _, err := cl.Invoke(ctx, addr, req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cl.Invoke(ctx, addr, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := cl.Invoke(ctx, addr, req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// TestClientOnDisconnect: the hook runs once with the dialled address when
// the server closes the connection, and the next call dials again.
func TestClientOnDisconnect(t *testing.T) {
	var server atomic.Pointer[Conn]
	s := NewServer(ServerOptions{Logger: testLogger()})
	s.HandleFunc(testCode, func(_ context.Context, c *Conn, req *protocol.Command) *protocol.Command {
		server.Store(c)
		return protocol.NewResponse(req, protocol.Success, "")
	})
	addr := startServer(t, s)
	cl := newTestClient(t)
	gone := make(chan string, 4)
	cl.OnDisconnect(func(a string) { gone <- a })
	if _, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(1)); err != nil {
		t.Fatal(err)
	}
	server.Load().Close()
	select {
	case a := <-gone:
		if a != addr {
			t.Fatalf("hook got %q, want %q", a, addr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnDisconnect hook not called")
	}
	if _, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(2)); err != nil {
		t.Fatalf("after the disconnect: %v", err)
	}
	select {
	case a := <-gone:
		t.Fatalf("hook called again (%q) without a disconnect", a)
	default:
	}
}
