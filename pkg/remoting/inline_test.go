package remoting

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// inlineEcho is echo served inline, except for requests whose ext field
// "block" is set: those are declined and served in a goroutine that waits
// for release (a handler that would block).
type inlineEcho struct {
	inline, remote atomic.Int32
	release        chan struct{}
	panics         bool
}

func (h *inlineEcho) ServeRemoting(ctx context.Context, c *Conn, req *protocol.Command) *protocol.Command {
	h.remote.Add(1)
	if req.Ext("block") != "" {
		select {
		case <-h.release:
		case <-ctx.Done():
		}
	}
	return echo(ctx, c, req)
}

func (h *inlineEcho) ServeInline(ctx context.Context, c *Conn, req *protocol.Command) (*protocol.Command, bool) {
	if req.Ext("block") != "" {
		return nil, false
	}
	h.inline.Add(1)
	if h.panics {
		panic("inline boom")
	}
	return echo(ctx, c, req), true
}

// TestInlineHandler: an InlineHandler's requests are served inline unless
// it declines (then ServeRemoting serves them, once); the interceptor
// still runs first; a panic is answered SYSTEM_ERROR; oneway requests get
// no reply.
func TestInlineHandler(t *testing.T) {
	refuse := func(_ context.Context, _ *Conn, req *protocol.Command) *protocol.Command {
		if req.Ext("refuse") != "" {
			return protocol.NewResponse(req, protocol.NoPermission, "refused")
		}
		return nil
	}
	tests := []struct {
		name               string
		ext                map[string]string
		oneway, panics     bool
		wantCode           int16
		wantInline, wantRm int32
	}{
		{name: "inline", wantCode: protocol.Success, wantInline: 1},
		{name: "declined", ext: map[string]string{"block": "1"}, wantCode: protocol.Success, wantRm: 1},
		{name: "intercepted", ext: map[string]string{"refuse": "1"}, wantCode: protocol.NoPermission},
		{name: "panic", panics: true, wantCode: protocol.SystemError, wantInline: 1},
		{name: "oneway", oneway: true, wantInline: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &inlineEcho{release: make(chan struct{}), panics: tt.panics}
			close(h.release)
			s := NewServer(ServerOptions{Logger: testLogger(), Interceptor: refuse})
			s.Handle(testCode, h)
			nc := dialRaw(t, startServer(t, s))
			req := protocol.NewRequest(testCode, tt.ext, []byte("x"))
			req.Opaque = 7
			if tt.oneway {
				req.Flag |= protocol.FlagOneway
			}
			writeCmd(t, nc, req)
			if tt.oneway {
				waitFor(t, "the oneway request served", func() bool { return h.inline.Load() == 1 })
				expectSilence(t, nc, 100*time.Millisecond)
			} else {
				resp := readCmd(t, nc)
				if resp.Code != tt.wantCode || resp.Opaque != 7 || !resp.IsResponse() {
					t.Fatalf("response code %d opaque %d flag %d, want code %d opaque 7", resp.Code, resp.Opaque, resp.Flag, tt.wantCode)
				}
			}
			if in, rm := h.inline.Load(), h.remote.Load(); in != tt.wantInline || rm != tt.wantRm {
				t.Fatalf("served inline %d, in a goroutine %d; want %d, %d", in, rm, tt.wantInline, tt.wantRm)
			}
			// The connection goes on serving.
			next := protocol.NewRequest(testCode, nil, []byte("y"))
			next.Opaque = 8
			writeCmd(t, nc, next)
			if resp := readCmd(t, nc); resp.Opaque != 8 {
				t.Fatalf("next response opaque %d", resp.Opaque)
			}
		})
	}
}

// TestInlineBurst: requests arriving together are answered, in order, and
// a declined request that blocks does not hold back the inline ones read
// after it.
func TestInlineBurst(t *testing.T) {
	h := &inlineEcho{release: make(chan struct{})}
	s := NewServer(ServerOptions{Logger: testLogger()})
	s.Handle(testCode, h)
	nc := dialRaw(t, startServer(t, s))
	var burst []byte
	blocked := protocol.NewRequest(testCode, map[string]string{"block": "1"}, nil)
	blocked.Opaque = 1000
	frame, _ := blocked.Encode()
	burst = append(burst, frame...)
	const n = 50
	for i := range n {
		req := request(i)
		req.Opaque = int32(i)
		frame, err := req.Encode()
		if err != nil {
			t.Fatal(err)
		}
		burst = append(burst, frame...)
	}
	if _, err := nc.Write(burst); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		resp := readCmd(t, nc)
		if resp.Opaque != int32(i) || string(resp.Body) != string(request(i).Body) {
			t.Fatalf("response %d: opaque %d body %q", i, resp.Opaque, resp.Body)
		}
	}
	close(h.release)
	if resp := readCmd(t, nc); resp.Opaque != 1000 {
		t.Fatalf("the blocked request's response has opaque %d", resp.Opaque)
	}
}

// BenchmarkRoundTripInline compares a handler in a goroutine with the same
// handler served inline, 64 requests in flight on one connection.
func BenchmarkRoundTripInline(b *testing.B) {
	for _, mode := range []string{"goroutine", "inline"} {
		b.Run(mode, func(b *testing.B) {
			s := NewServer(ServerOptions{Logger: testLogger()})
			if mode == "inline" {
				s.Handle(testCode, Inline(echo, func(ctx context.Context, c *Conn, req *protocol.Command) (*protocol.Command, bool) {
					return echo(ctx, c, req), true
				}))
			} else {
				s.Handle(testCode, echo)
			}
			addr := startServer(b, s)
			cl := newTestClient(b)
			ctx := context.Background()
			req := protocol.NewRequest(testCode, map[string]string{"topic": "bench", "queueId": "1"}, make([]byte, 1024))
			if _, err := cl.Invoke(ctx, addr, req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetParallelism(32)
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
}
