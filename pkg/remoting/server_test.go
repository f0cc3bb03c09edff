package remoting

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func TestRoundTrip(t *testing.T) {
	_, addr := newTestServer(t, ServerOptions{})
	// The client sends ROCKETMQ binary headers unless told JSONHeaders;
	// the server answers in the type the request came in.
	binCl := newTestClient(t)
	jsonCl := NewClient(ClientOptions{Logger: testLogger(), JSONHeaders: true})
	t.Cleanup(func() { jsonCl.Close() })
	typed := &protocol.PullMessageResponseHeader{NextBeginOffset: 8, MaxOffset: 9}
	tests := []struct {
		name  string
		st    byte
		body  []byte
		ext   map[string]string
		typed protocol.ExtAppender
		want  map[string]string
	}{
		{"json empty", protocol.SerializeJSON, nil, nil, nil, nil},
		{"json body and ext", protocol.SerializeJSON, []byte("hello"), map[string]string{"topic": "t", "queueId": "3"}, nil, nil},
		{"json typed header and ext", protocol.SerializeJSON, nil, map[string]string{"k": "v"}, typed,
			map[string]string{"nextBeginOffset": "8", "maxOffset": "9", "minOffset": "0", "suggestWhichBrokerId": "0"}},
		{"binary empty", protocol.SerializeRocketMQ, nil, nil, nil, nil},
		{"binary body and ext", protocol.SerializeRocketMQ, bytes.Repeat([]byte{0, 1, 2}, 50000), map[string]string{"k": "v"}, nil, nil},
		{"binary typed header and ext", protocol.SerializeRocketMQ, nil, map[string]string{"k": "v"}, typed,
			map[string]string{"nextBeginOffset": "8", "maxOffset": "9", "minOffset": "0", "suggestWhichBrokerId": "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := binCl
			if tt.st == protocol.SerializeJSON {
				cl = jsonCl
			}
			req := protocol.NewRequest(testCode, tt.ext, tt.body)
			req.Header = tt.typed
			before := *req
			resp, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, req)
			if err != nil {
				t.Fatal(err)
			}
			if !resp.IsResponse() || resp.Code != protocol.Success || resp.SerializeType != tt.st {
				t.Fatalf("resp = %+v", resp)
			}
			if !bytes.Equal(resp.Body, tt.body) {
				t.Fatalf("body: got %d bytes, want %d", len(resp.Body), len(tt.body))
			}
			for _, m := range []map[string]string{tt.ext, tt.want} {
				for k, v := range m {
					if resp.Ext(k) != v {
						t.Fatalf("ext %s = %q, want %q", k, resp.Ext(k), v)
					}
				}
			}
			if req.Opaque != before.Opaque || req.Flag != before.Flag || req.SerializeType != before.SerializeType {
				t.Fatal("Invoke modified the caller's request")
			}
		})
	}
}

func TestClientOpaqueStartsAtOne(t *testing.T) {
	s, addr := newTestServer(t, ServerOptions{})
	seen := make(chan int32, 2)
	s.HandleFunc(protocol.HeartBeat, func(_ context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		seen <- req.Opaque
		return protocol.NewResponse(req, protocol.Success, "")
	})
	cl := newTestClient(t)
	for range 2 {
		if _, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, protocol.NewRequest(protocol.HeartBeat, nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := <-seen, <-seen; a != 1 || b != 2 {
		t.Fatalf("opaques %d, %d; want 1, 2", a, b)
	}
}

// TestConcurrentOutOfOrder completes many requests on one connection in the
// reverse order of their arrival and checks each caller gets its own reply.
func TestConcurrentOutOfOrder(t *testing.T) {
	const n = 50
	s, addr := newTestServer(t, ServerOptions{})
	var arrived sync.WaitGroup
	arrived.Add(n)
	var gates [n + 1]chan struct{}
	for i := range gates {
		gates[i] = make(chan struct{})
	}
	close(gates[n])
	s.HandleFunc(protocol.PullMessage, func(ctx context.Context, c *Conn, req *protocol.Command) *protocol.Command {
		i, _ := strconv.Atoi(req.Ext("i"))
		arrived.Done()
		arrived.Wait()
		<-gates[i+1] // request i finishes after request i+1
		resp := echo(ctx, c, req)
		close(gates[i])
		return resp
	})
	cl := newTestClient(t)
	ctx := ctxTimeout(t, 10*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := request(i)
			req.Code = protocol.PullMessage
			resp, err := cl.Invoke(ctx, addr, req)
			if err != nil {
				errs <- err
				return
			}
			if resp.Ext("i") != strconv.Itoa(i) || string(resp.Body) != "body-"+strconv.Itoa(i) {
				errs <- fmt.Errorf("request %d got the reply of %s", i, resp.Ext("i"))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(s.Conns()) != 1 {
		t.Fatalf("%d server connections, want 1", len(s.Conns()))
	}
}

func TestInvokeTimeout(t *testing.T) {
	s, addr := newTestServer(t, ServerOptions{})
	release := make(chan struct{})
	s.HandleFunc(protocol.PullMessage, func(_ context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		<-release
		return protocol.NewResponse(req, protocol.Success, "late")
	})
	cl := newTestClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := cl.Invoke(ctx, addr, protocol.NewRequest(protocol.PullMessage, nil, nil))
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrTimeout and DeadlineExceeded", err)
	}
	c, err := cl.Conn(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if pending := pendingFutures(c); pending != 0 {
		t.Fatalf("%d futures left after the timeout", pending)
	}
	close(release) // the late reply is dropped; the connection keeps working
	resp, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(1))
	if err != nil || resp.Ext("i") != "1" {
		t.Fatalf("after timeout: resp %+v err %v", resp, err)
	}

	// A cancelled (not timed out) context is not ErrTimeout.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	_, err = cl.Invoke(cctx, addr, request(2))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("cancelled: err = %v", err)
	}
}

// InvokeTimeout bounds a call without a context deadline, leaves no
// future behind, and its pooled timers do not fire into later calls.
func TestInvokeTimeoutParameter(t *testing.T) {
	s, addr := newTestServer(t, ServerOptions{})
	release := make(chan struct{})
	s.HandleFunc(protocol.PullMessage, func(_ context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		<-release
		return protocol.NewResponse(req, protocol.Success, "late")
	})
	cl := newTestClient(t)
	// The first call also dials, under the same bound.
	_, err := cl.InvokeTimeout(context.Background(), addr, protocol.NewRequest(protocol.PullMessage, nil, nil), 50*time.Millisecond)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrTimeout and DeadlineExceeded", err)
	}
	c, err := cl.Conn(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if pending := pendingFutures(c); pending != 0 {
		t.Fatalf("%d futures left after the timeout", pending)
	}
	close(release)
	// Many quick calls with short timeouts reuse timers: none may time out
	// because of an earlier call's timer.
	for i := range 200 {
		resp, err := cl.InvokeTimeout(context.Background(), addr, request(i), 5*time.Second)
		if err != nil || resp.Ext("i") != strconv.Itoa(i) {
			t.Fatalf("call %d: resp %+v err %v", i, resp, err)
		}
	}
	// ctx still ends the call first when it is done first.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := cl.InvokeTimeout(cctx, addr, request(1), time.Minute); !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("cancelled: err = %v", err)
	}
}

func TestInvokeAsync(t *testing.T) {
	s, addr := newTestServer(t, ServerOptions{})
	release := make(chan struct{})
	defer close(release)
	s.HandleFunc(protocol.PullMessage, func(_ context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		<-release
		return nil
	})
	cl := newTestClient(t)

	type outcome struct {
		resp *protocol.Command
		err  error
	}
	tests := []struct {
		name    string
		req     *protocol.Command
		timeout time.Duration
		check   func(outcome) error
	}{
		{"response", request(7), 5 * time.Second, func(o outcome) error {
			if o.err != nil || o.resp.Ext("i") != "7" {
				return fmt.Errorf("got %+v", o)
			}
			return nil
		}},
		{"timeout", protocol.NewRequest(protocol.PullMessage, nil, nil), 30 * time.Millisecond, func(o outcome) error {
			if o.resp != nil || !errors.Is(o.err, ErrTimeout) {
				return fmt.Errorf("got %+v", o)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			got := make(chan outcome, 2)
			ctx := ctxTimeout(t, tt.timeout)
			err := cl.InvokeAsync(ctx, addr, tt.req, func(resp *protocol.Command, err error) {
				calls.Add(1)
				got <- outcome{resp, err}
			})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case o := <-got:
				if err := tt.check(o); err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("callback not called")
			}
			// A second call would have to come from the same futures,
			// which are gone: check the table is empty.
			c, _ := cl.Conn(context.Background(), addr)
			if n := pendingFutures(c); n != 0 || calls.Load() != 1 {
				t.Fatalf("futures %d, calls %d", pendingFutures(c), calls.Load())
			}
		})
	}
}

// TestOnewayNoReply checks at the byte level that a request with flag bit 1
// is never answered, even when its handler returns a response.
func TestOnewayNoReply(t *testing.T) {
	s, addr := newTestServer(t, ServerOptions{})
	called := make(chan struct{}, 1)
	s.HandleFunc(protocol.UpdateConsumerOffset, func(_ context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		called <- struct{}{}
		return protocol.NewResponse(req, protocol.Success, "must not be sent")
	})
	nc := dialRaw(t, addr)
	oneway := protocol.NewRequest(protocol.UpdateConsumerOffset, nil, nil)
	oneway.Opaque, oneway.Flag = 1, protocol.FlagOneway
	writeCmd(t, nc, oneway)
	<-called
	// Unknown codes and malformed frames are not answered either.
	unknown := protocol.NewRequest(12345, nil, nil)
	unknown.Opaque, unknown.Flag = 2, protocol.FlagOneway
	writeCmd(t, nc, unknown)

	ping := request(3)
	ping.Opaque = 3
	writeCmd(t, nc, ping)
	if resp := readCmd(t, nc); resp.Opaque != 3 {
		t.Fatalf("first reply has opaque %d, want 3 (the oneway requests must not be answered)", resp.Opaque)
	}
	expectSilence(t, nc, 100*time.Millisecond)
}

// TestFlagZeroAlwaysReplied: rocketmq-client-go v2.1.2 sends its "oneway"
// calls with flag 0 and the server must answer them like any request.
func TestFlagZeroAlwaysReplied(t *testing.T) {
	s, addr := newTestServer(t, ServerOptions{})
	s.HandleFunc(protocol.UpdateConsumerOffset, func(_ context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		return &protocol.Command{Code: protocol.Success, Language: protocol.LangGo} // no opaque or flag set
	})
	nc := dialRaw(t, addr)
	for i, code := range []int16{protocol.UpdateConsumerOffset, protocol.EndTransaction, testCode} {
		req := protocol.NewRequest(code, nil, nil)
		req.Opaque = int32(100 + i)
		req.Language, req.Version = protocol.LangGo, protocol.VersionV4_5_2
		writeCmd(t, nc, req)
		resp := readCmd(t, nc)
		if resp.Opaque != req.Opaque || resp.Flag&protocol.FlagResponse == 0 {
			t.Fatalf("code %d: reply opaque %d flag %d", code, resp.Opaque, resp.Flag)
		}
		want := protocol.Success
		if code == protocol.EndTransaction {
			want = protocol.RequestCodeNotSupported
		}
		if resp.Code != want {
			t.Fatalf("code %d: reply code %d, want %d", code, resp.Code, want)
		}
	}
}

func TestUnknownCode(t *testing.T) {
	_, addr := newTestServer(t, ServerOptions{})
	cl := newTestClient(t)
	resp, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, protocol.NewRequest(4242, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != protocol.RequestCodeNotSupported || resp.Remark != "request type 4242 not supported" {
		t.Fatalf("resp = %d %q", resp.Code, resp.Remark)
	}
}

func TestHandlerPanic(t *testing.T) {
	s, addr := newTestServer(t, ServerOptions{})
	s.HandleFunc(protocol.SendMessage, func(context.Context, *Conn, *protocol.Command) *protocol.Command {
		panic("boom")
	})
	cl := newTestClient(t)
	resp, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, protocol.NewRequest(protocol.SendMessage, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != protocol.SystemError || !bytes.Contains([]byte(resp.Remark), []byte("boom")) {
		t.Fatalf("resp = %d %q", resp.Code, resp.Remark)
	}
	if _, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(1)); err != nil {
		t.Fatalf("server unusable after a panic: %v", err)
	}
}

func TestServerBusy(t *testing.T) {
	s, addr := newTestServer(t, ServerOptions{MaxConcurrentRequestsPerConn: 1})
	entered, release := make(chan struct{}), make(chan struct{})
	s.HandleFunc(protocol.PullMessage, func(_ context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		close(entered)
		<-release
		return protocol.NewResponse(req, protocol.Success, "")
	})
	cl := newTestClient(t)
	ctx := ctxTimeout(t, 5*time.Second)
	first := make(chan error, 1)
	go func() {
		_, err := cl.Invoke(ctx, addr, protocol.NewRequest(protocol.PullMessage, nil, nil))
		first <- err
	}()
	<-entered
	resp, err := cl.Invoke(ctx, addr, request(1))
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(resp.Err(), ErrServerBusy) {
		t.Fatalf("resp = %d %q, want SYSTEM_BUSY", resp.Code, resp.Remark)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// The slot is freed just after the reply is written.
	sc := s.Conns()[0]
	waitFor(t, "the handler slot to be released", func() bool { return sc.inflight.Load() == 0 })
	if resp, err := cl.Invoke(ctx, addr, request(2)); err != nil || resp.Code != protocol.Success {
		t.Fatalf("after release: %v %v", resp, err)
	}
}

// TestBadInput sends malformed frames on a raw connection: the server
// answers SYSTEM_ERROR when it can tell the opaque and closes the
// connection otherwise, and other connections are unaffected.
func TestBadInput(t *testing.T) {
	s, addr := newTestServer(t, ServerOptions{MaxFrameSize: 1 << 20})
	closedConns := make(chan uint64, 16)
	s.OnDisconnect(func(c *Conn) { closedConns <- c.ID() })
	cl := newTestClient(t)
	binHdr := func(opaque int32) []byte { // a binary header cut short after its flag
		h := (&protocol.Command{Code: testCode, Opaque: opaque, SerializeType: protocol.SerializeRocketMQ})
		f, _ := h.Encode()
		return f[8 : 8+13]
	}
	tests := []struct {
		name       string
		input      []byte
		wantOpaque int32 // 0: the connection must be closed
	}{
		{"http request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), 0},
		{"oversized frame", []byte{0x00, 0x20, 0x00, 0x00, 0, 0, 0, 0}, 0},
		{"frame shorter than header word", []byte{0, 0, 0, 2, 0, 0}, 0},
		{"unknown serialize type", rawFrame(7, 4, []byte("abcd")), 0},
		{"header length larger than frame", rawFrame(0, 500, []byte(`{"code":10,"opaque":41,"flag":0,"ext`)), 41},
		{"invalid json header", rawFrame(0, 33, []byte(`{"code":10,"opaque":42,"flag":0,]`)), 42},
		{"json header not an object", rawFrame(0, 2, []byte(`[]`)), 0},
		{"truncated binary header", rawFrame(1, 13, binHdr(43)), 43},
		{"unknown serialize type with json opaque", rawFrame(5, 14, []byte(`{"opaque":44}x`)), 44},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := dialRaw(t, addr)
			if _, err := nc.Write(tt.input); err != nil {
				t.Fatal(err)
			}
			if tt.wantOpaque == 0 {
				expectClosed(t, nc)
			} else {
				resp := readCmd(t, nc)
				if resp.Opaque != tt.wantOpaque || resp.Code != protocol.SystemError || !resp.IsResponse() || resp.Remark == "" {
					t.Fatalf("reply %+v", resp)
				}
				t.Logf("remark: %s", resp.Remark)
				// The connection stays usable.
				req := request(5)
				req.Opaque = 5
				writeCmd(t, nc, req)
				if r := readCmd(t, nc); r.Opaque != 5 || r.Code != protocol.Success {
					t.Fatalf("follow-up reply %+v", r)
				}
			}
			if _, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(1)); err != nil {
				t.Fatalf("other connection broken: %v", err)
			}
		})
	}
}

// TestOversizedFrameClosesOnlyThatConn keeps a client connection busy
// while another connection announces a frame above the limit.
func TestOversizedFrameClosesOnlyThatConn(t *testing.T) {
	s, addr := newTestServer(t, ServerOptions{MaxFrameSize: 4096})
	cl := newTestClient(t)
	if _, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(1)); err != nil {
		t.Fatal(err)
	}
	good, _ := cl.Conn(context.Background(), addr)

	nc := dialRaw(t, addr)
	big := protocol.NewRequest(testCode, nil, make([]byte, 5000))
	writeCmd(t, nc, big)
	expectClosed(t, nc)

	if good.Err() != nil {
		t.Fatalf("good connection closed: %v", good.Err())
	}
	if _, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(2)); err != nil {
		t.Fatal(err)
	}
	// A response above the client's own limit closes the client side.
	cl2 := NewClient(ClientOptions{Logger: testLogger(), MaxFrameSize: 1024})
	defer cl2.Close()
	_, err := cl2.Invoke(ctxTimeout(t, 5*time.Second), addr, protocol.NewRequest(testCode, nil, make([]byte, 2000)))
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("oversized response: err = %v, want ErrClosed", err)
	}
	_ = s
}

func TestShutdownWaitsForHandlers(t *testing.T) {
	s := NewServer(ServerOptions{Logger: testLogger()})
	s.Handle(testCode, echo)
	entered, release := make(chan struct{}), make(chan struct{})
	s.HandleFunc(protocol.SendMessage, func(_ context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		close(entered)
		<-release
		return protocol.NewResponse(req, protocol.Success, "done")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()

	cl := newTestClient(t)
	reply := make(chan error, 1)
	go func() {
		resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, protocol.NewRequest(protocol.SendMessage, nil, nil))
		if err == nil && resp.Remark != "done" {
			err = fmt.Errorf("reply %+v", resp)
		}
		reply <- err
	}()
	<-entered

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(ctxTimeout(t, 10*time.Second)) }()
	if err := <-served; err != nil { // the listener is closed first
		t.Fatalf("Serve: %v", err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a handler was running", err)
	default:
	}
	// New requests on the open connection are refused while shutting down.
	resp, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(1))
	if err != nil || !errors.Is(resp.Err(), ErrServerBusy) {
		t.Fatalf("during shutdown: %v %v", resp, err)
	}
	close(release)
	if err := <-reply; err != nil {
		t.Fatalf("in-flight request: %v", err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := len(s.Conns()); n != 0 {
		t.Fatalf("%d connections left open", n)
	}
	if err := s.Serve(ln); !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
}

func TestShutdownDeadline(t *testing.T) {
	s := NewServer(ServerOptions{Logger: testLogger()})
	entered := make(chan struct{})
	s.HandleFunc(protocol.SendMessage, func(ctx context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		close(entered)
		<-ctx.Done() // released when Shutdown gives up and closes the connection
		return nil
	})
	addr := startServer(t, s)
	cl := newTestClient(t)
	errc := make(chan error, 1)
	go func() {
		_, err := cl.Invoke(ctxTimeout(t, 10*time.Second), addr, protocol.NewRequest(protocol.SendMessage, nil, nil))
		errc <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want DeadlineExceeded", err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("pending call: %v, want ErrClosed", err)
	}
}

func TestOnConnectDisconnect(t *testing.T) {
	s := NewServer(ServerOptions{Logger: testLogger()})
	s.Handle(testCode, echo)
	connected := make(chan *Conn, 1)
	disconnected := make(chan *Conn, 1)
	s.OnConnect(func(c *Conn) { c.SetValue("k", "v"); connected <- c })
	s.OnDisconnect(func(c *Conn) { disconnected <- c })
	addr := startServer(t, s)
	cl := NewClient(ClientOptions{Logger: testLogger()})
	if _, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(1)); err != nil {
		t.Fatal(err)
	}
	c := <-connected
	if c.Value("k") != "v" || c.Value("missing") != nil {
		t.Fatal("SetValue/Value")
	}
	cl.Close()
	select {
	case d := <-disconnected:
		if d != c {
			t.Fatal("OnDisconnect got another connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnDisconnect not called after the client closed")
	}
	<-c.Done()
}

func TestIdleTimeout(t *testing.T) {
	_, addr := newTestServer(t, ServerOptions{IdleTimeout: 100 * time.Millisecond})
	nc := dialRaw(t, addr)
	writeCmd(t, nc, request(1))
	readCmd(t, nc)
	expectClosed(t, nc) // nothing more is sent: the server gives up
}

func TestOptionsValidate(t *testing.T) {
	bad := []ServerOptions{{MaxFrameSize: -1}, {MaxConcurrentRequests: -1}, {MaxConcurrentRequestsPerConn: -1}, {IdleTimeout: -1}}
	for _, o := range bad {
		if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if err := NewServer(o).Serve(ln); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Serve with %+v: %v", o, err)
		}
	}
	if err := (ServerOptions{}).Validate(); err != nil {
		t.Error(err)
	}
	badc := []ClientOptions{{DialTimeout: -1}, {MaxFrameSize: -1}, {MaxConcurrentRequests: -1}, {IdleTimeout: -1}}
	for _, o := range badc {
		if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
		if _, err := NewClient(o).Invoke(context.Background(), "127.0.0.1:1", request(1)); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Invoke with %+v: %v", o, err)
		}
	}
}

// TestDeferredReply: a handler that returns nil answers later with
// Conn.Reply, as a long-polling pull does, without holding a handler slot.
func TestDeferredReply(t *testing.T) {
	s, addr := newTestServer(t, ServerOptions{MaxConcurrentRequestsPerConn: 1})
	type parked struct {
		c   *Conn
		req *protocol.Command
	}
	parkedc := make(chan parked, 4)
	s.HandleFunc(protocol.PullMessage, func(_ context.Context, c *Conn, req *protocol.Command) *protocol.Command {
		parkedc <- parked{c, req}
		return nil
	})
	cl := newTestClient(t)
	ctx := ctxTimeout(t, 5*time.Second)
	results := make(chan *protocol.Command, 2)
	var ps []parked
	for i := range 2 { // the second would be SYSTEM_BUSY if the first held its slot
		req := protocol.NewRequest(protocol.PullMessage, nil, nil)
		req.SetExtInt("i", int64(i))
		if err := cl.InvokeAsync(ctx, addr, req, func(resp *protocol.Command, err error) {
			if err != nil {
				t.Error(err)
			}
			results <- resp
		}); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, <-parkedc)
	}
	for _, p := range ps {
		resp := protocol.NewResponse(p.req, protocol.PullNotFound, "")
		resp.SetExt("i", p.req.Ext("i"))
		if err := p.c.Reply(p.req, resp); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if r := <-results; r == nil || r.Code != protocol.PullNotFound {
			t.Fatalf("deferred reply %+v", r)
		}
	}
}

// TestRecordedClientFramesAnswered replays the requests recorded from
// rocketmq-client-go v2.1.2 (all flag 0, including its "oneway" calls):
// each must get exactly one reply with its opaque and the response flag.
func TestRecordedClientFramesAnswered(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("protocol", "testdata", "client-v2.1.2", "*.bin"))
	if len(paths) == 0 {
		t.Skip("no recorded frames")
	}
	_, addr := newTestServer(t, ServerOptions{})
	nc := dialRaw(t, addr)
	for _, p := range paths {
		if strings.Contains(filepath.Base(p), "-reply-") {
			continue // the client's replies to broker requests
		}
		frame, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		req, err := protocol.DecodeFrame(frame[4:])
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if req.Flag != 0 {
			t.Fatalf("%s: flag %d; v2.1.2 was expected to send 0", p, req.Flag)
		}
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		resp := readCmd(t, nc)
		if resp.Opaque != req.Opaque || !resp.IsResponse() || resp.Code != protocol.RequestCodeNotSupported {
			t.Fatalf("%s: reply %+v", p, resp)
		}
	}
}

// pendingFutures is the number of requests c still waits answers for.
func pendingFutures(c *Conn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.futures)
}

// TestServerCodes: Codes lists exactly the registered request codes, in
// order, and forgets a removed one.
func TestServerCodes(t *testing.T) {
	s := NewServer(ServerOptions{})
	if got := s.Codes(); len(got) != 0 {
		t.Fatalf("fresh server codes %v", got)
	}
	h := func(context.Context, *Conn, *protocol.Command) *protocol.Command { return nil }
	for _, c := range []int16{310, 10, 10004, 34} {
		s.HandleFunc(c, h)
	}
	s.Handle(34, nil)
	if got, want := fmt.Sprint(s.Codes()), "[10 310 10004]"; got != want {
		t.Fatalf("codes %s, want %s", got, want)
	}
}
