package remoting

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// testLogger discards logs unless REMOTING_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("REMOTING_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// freeAddr returns a 127.0.0.1 address that is free now, for a server the
// test binds again after stopping it or that must stay closed: its port
// is outside Linux's default ephemeral range (32768-60999), so neither a
// listen on port 0 nor an outgoing connection (the test's own dials to
// the closed port among them: one can connect to itself when the kernel
// picks the same port) takes it meanwhile. pkg/testenv/freeport does the
// same (reading the kernel's range); this module depends on nothing.
// TIDE_TEST_PORTS ("lo-hi") narrows the choice as there.
func freeAddr(t testing.TB) string {
	t.Helper()
	lo, hi := 25000, 32767
	fmt.Sscanf(os.Getenv("TIDE_TEST_PORTS"), "%d-%d", &lo, &hi)
	for range 100 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(lo+rand.IntN(max(hi-lo+1, 1))))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatalf("no free port in %d-%d", lo, hi)
	return ""
}

const testCode int16 = 9001 // an otherwise unused request code

// echo answers SUCCESS with the request's ext fields and body.
var echo = HandlerFunc(func(_ context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
	resp := protocol.NewResponse(req, protocol.Success, "")
	for k, v := range req.ExtFields {
		resp.SetExt(k, v)
	}
	resp.Body = req.Body
	return resp
})

// startServer serves s on a fresh 127.0.0.1 port and shuts it down when
// the test ends, checking that Serve returned nil.
func startServer(t testing.TB, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve returned %v, want nil", err)
		}
	})
	return ln.Addr().String()
}

func newTestServer(t testing.TB, opts ServerOptions) (*Server, string) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger()
	}
	s := NewServer(opts)
	s.Handle(testCode, echo)
	return s, startServer(t, s)
}

func newTestClient(t testing.TB) *Client {
	t.Helper()
	cl := NewClient(ClientOptions{Logger: testLogger()})
	t.Cleanup(func() { cl.Close() })
	return cl
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func dialRaw(t testing.TB, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

func writeCmd(t testing.TB, nc net.Conn, cmd *protocol.Command) {
	t.Helper()
	frame, err := cmd.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
}

// readCmd reads one frame from nc within 5 s.
func readCmd(t testing.TB, nc net.Conn) *protocol.Command {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	cmd, err := protocol.ReadCommand(nc, 0)
	if err != nil {
		t.Fatalf("reading a frame: %v", err)
	}
	return cmd
}

// expectClosed waits (up to 5 s) for the peer to close nc.
func expectClosed(t testing.TB, nc net.Conn) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	for {
		_, err := nc.Read(buf)
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("connection still open after 5 s")
		}
		return // EOF or reset
	}
}

// expectSilence checks that nothing arrives on nc for a while. It is the
// only way to show that no reply was sent.
func expectSilence(t testing.TB, nc net.Conn, d time.Duration) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(d))
	var b [1]byte
	n, err := nc.Read(b[:])
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("expected no bytes, got n=%d err=%v", n, err)
	}
}

// rawFrame builds a frame from a header word's parts and raw bytes.
func rawFrame(st byte, hdrLen int, rest []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(rest)))
	b = binary.BigEndian.AppendUint32(b, uint32(st)<<24|uint32(hdrLen))
	return append(b, rest...)
}

func request(i int) *protocol.Command {
	req := protocol.NewRequest(testCode, nil, []byte("body-"+strconv.Itoa(i)))
	req.SetExtInt("i", int64(i))
	return req
}

// waitFor polls cond until it holds or 5 s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
