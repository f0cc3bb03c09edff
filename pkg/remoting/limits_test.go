package remoting

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/remoting/tlstest"
)

func TestMaxConnections(t *testing.T) {
	t.Parallel()
	s, addr := newTestServer(t, ServerOptions{MaxConnections: 2})
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	writeCmd(t, a, request(1))
	readCmd(t, a)
	writeCmd(t, b, request(2))
	readCmd(t, b)
	waitFor(t, "2 connections", func() bool { return len(s.Conns()) == 2 })
	// The third is closed at once; the first two keep working.
	c := dialRaw(t, addr)
	expectClosed(t, c)
	writeCmd(t, a, request(3))
	if resp := readCmd(t, a); resp.Code != protocol.Success {
		t.Fatalf("first connection after refusal: code %d", resp.Code)
	}
	// A slot freed is a slot available again.
	b.Close()
	waitFor(t, "1 connection", func() bool { return len(s.Conns()) == 1 })
	d := dialRaw(t, addr)
	writeCmd(t, d, request(4))
	if resp := readCmd(t, d); resp.Code != protocol.Success {
		t.Fatalf("connection after a slot freed: code %d", resp.Code)
	}
}

func TestHeaderTooLarge(t *testing.T) {
	t.Parallel()
	_, addr := newTestServer(t, ServerOptions{MaxHeaderSize: 1024})
	nc := dialRaw(t, addr)
	req := request(1)
	req.SetExt("big", strings.Repeat("x", 2000))
	writeCmd(t, nc, req)
	resp := readCmd(t, nc)
	if resp.Code != protocol.SystemError || !strings.Contains(resp.Remark, "header too large") {
		t.Fatalf("oversized header: code %d remark %q", resp.Code, resp.Remark)
	}
	// The connection stays usable.
	writeCmd(t, nc, request(2))
	if resp := readCmd(t, nc); resp.Code != protocol.Success {
		t.Fatalf("after oversized header: code %d", resp.Code)
	}
}

// TestSlowFrame: a peer that announces a frame and trickles it is cut
// off after FrameReadTimeout, while IdleTimeout is off.
func TestSlowFrame(t *testing.T) {
	t.Parallel()
	_, addr := newTestServer(t, ServerOptions{FrameReadTimeout: 200 * time.Millisecond})
	nc := dialRaw(t, addr)
	frame, _ := request(1).Encode()
	if _, err := nc.Write(frame[:10]); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, nc)
	// A quiet connection between frames is not cut (no IdleTimeout).
	ok := dialRaw(t, addr)
	writeCmd(t, ok, request(2))
	readCmd(t, ok)
	expectSilence(t, ok, 400*time.Millisecond)
	writeCmd(t, ok, request(3))
	if resp := readCmd(t, ok); resp.Code != protocol.Success {
		t.Fatalf("after a quiet spell: code %d", resp.Code)
	}
}

func TestInterceptor(t *testing.T) {
	t.Parallel()
	s := NewServer(ServerOptions{Logger: testLogger(), Interceptor: func(_ context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		if req.ExtFields["deny"] != "" {
			return protocol.NewResponse(req, protocol.NoPermission, "denied: "+req.ExtFields["deny"])
		}
		if req.ExtFields["panic"] != "" {
			panic("boom")
		}
		return nil
	}})
	s.Handle(testCode, echo)
	addr := startServer(t, s)
	cl := newTestClient(t)
	for _, c := range []struct {
		key  string
		code int16
	}{{"", protocol.Success}, {"deny", protocol.NoPermission}, {"panic", protocol.SystemError}} {
		req := request(1)
		if c.key != "" {
			req.SetExt(c.key, "yes")
		}
		resp, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, req)
		if err != nil || resp.Code != c.code {
			t.Errorf("%q: code %v err %v, want %d", c.key, resp, err, c.code)
		}
	}
}

func TestRequestHookLeavesCallerCommand(t *testing.T) {
	t.Parallel()
	_, addr := newTestServer(t, ServerOptions{})
	cl := NewClient(ClientOptions{Logger: testLogger(), RequestHook: func(req *protocol.Command) { req.SetExt("signed", "yes") }})
	t.Cleanup(func() { cl.Close() })
	req := request(1)
	resp, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, req)
	if err != nil || resp.ExtFields["signed"] != "yes" {
		t.Fatalf("hooked request: %v %v", resp, err)
	}
	if _, ok := req.ExtFields["signed"]; ok {
		t.Error("the hook changed the caller's command")
	}
}

// A hook sees the fields of a typed header (Command.Header) in ExtFields,
// as a request signer must, and what it adds is sent with them.
func TestRequestHookSeesTypedHeader(t *testing.T) {
	t.Parallel()
	_, addr := newTestServer(t, ServerOptions{})
	var seen string
	cl := NewClient(ClientOptions{Logger: testLogger(), RequestHook: func(req *protocol.Command) {
		seen = req.ExtFields["nextBeginOffset"]
		req.SetExt("signed", "yes")
	}})
	t.Cleanup(func() { cl.Close() })
	req := protocol.NewTypedRequest(testCode, &protocol.PullMessageResponseHeader{NextBeginOffset: 42}, nil)
	resp, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, req)
	if err != nil || resp.ExtFields["signed"] != "yes" || resp.ExtFields["nextBeginOffset"] != "42" || seen != "42" {
		t.Fatalf("hooked typed request: %v %v, hook saw %q", resp, err, seen)
	}
	if req.ExtFields != nil || req.Header == nil {
		t.Error("the hook changed the caller's command")
	}
}

func TestTLS(t *testing.T) {
	t.Parallel()
	certs := tlstest.New(t)
	_, addr := newTestServer(t, ServerOptions{TLSConfig: certs.ServerConfig(true)})
	cl := NewClient(ClientOptions{Logger: testLogger(), TLSConfig: certs.ClientConfig()})
	t.Cleanup(func() { cl.Close() })
	resp, err := cl.Invoke(ctxTimeout(t, 5*time.Second), addr, request(1))
	if err != nil || resp.Code != protocol.Success || string(resp.Body) != "body-1" {
		t.Fatalf("over TLS: %v %v", resp, err)
	}
	// Plain TCP to a TLS port gets nowhere; so does a client without a
	// certificate (mutual TLS) or one not trusting the CA.
	plain := newTestClient(t)
	if _, err := plain.Invoke(ctxTimeout(t, 3*time.Second), addr, request(2)); err == nil {
		t.Error("plain TCP request to a TLS port answered")
	}
	for name, cfg := range map[string]*tls.Config{
		"no client cert": {RootCAs: certs.Pool, ServerName: "127.0.0.1"},
		"untrusted CA":   {Certificates: []tls.Certificate{certs.Client}, ServerName: "127.0.0.1"},
	} {
		bad := NewClient(ClientOptions{Logger: testLogger(), TLSConfig: cfg})
		_, err := bad.Invoke(ctxTimeout(t, 3*time.Second), addr, request(3))
		bad.Close()
		if err == nil {
			t.Errorf("%s: request answered", name)
		}
	}
	if err := NewServer(ServerOptions{TLSConfig: &tls.Config{}}).ListenAndServe("127.0.0.1:0"); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("TLS without certificate: %v", err)
	}
}

func TestReadFrameGrowsWithData(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 10, frameChunk, frameChunk + 1, 2*frameChunk - 1, 2 * frameChunk, 280 << 10, 3<<20 + 7} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i * 7)
		}
		got, err := readFrame(bytes.NewReader(src), n)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("n=%d: err %v, equal %v", n, err, bytes.Equal(got, src))
		}
		if len(got) != n || cap(got) > n+512 {
			t.Fatalf("n=%d: len %d cap %d, want a buffer of the frame's size", n, len(got), cap(got))
		}
		// A reader that returns a little at a time (as a socket does).
		got, err = readFrame(iotest.HalfReader(bytes.NewReader(src)), n)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("n=%d, half reads: err %v, equal %v", n, err, bytes.Equal(got, src))
		}
		if n > 10 {
			if _, err := readFrame(bytes.NewReader(src[:n/2]), n); err == nil {
				t.Fatalf("n=%d: short input read without error", n)
			}
		}
	}
}

// BenchmarkReadFrame reads one frame body of each size (a send response,
// a pull of about 90 and of 256 1 KiB messages); B/op is what a frame
// costs the collector.
func BenchmarkReadFrame(b *testing.B) {
	for _, n := range []int{200, 100 << 10, 280 << 10} {
		src := make([]byte, n)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				if _, err := readFrame(bytes.NewReader(src), n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
