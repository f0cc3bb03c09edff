package remoting

import (
	"encoding/binary"
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// The read loop's side of InlineHandler: requests served on the read loop,
// their responses gathered into one write per burst, and the InlineFlushers
// called once per burst.

// maxInlineOut is the most bytes of inline responses the read loop holds
// before writing them even though more requests are buffered.
const maxInlineOut = 64 << 10

// frameBuffered reports whether br holds a whole frame, so that reading
// it does not wait for the socket.
func frameBuffered(br *readBuf) bool {
	p := br.peek()
	if len(p) < 4 {
		return false
	}
	return uint64(len(p)) >= 4+uint64(binary.BigEndian.Uint32(p))
}

// flushInline writes the responses served inline so far in one write,
// calls the burst's InlineFlushers and releases the in-flight slots. The
// caller is the read loop.
func (c *Conn) flushInline() error {
	var err error
	if len(c.out) > 0 {
		err = c.writeDirect(c.out)
		if cap(c.out) > 4*maxInlineOut {
			c.out = nil // one huge burst does not pin memory
		} else {
			c.out = c.out[:0]
		}
	}
	for i, f := range c.flushers {
		c.inlineFlushed(f)
		c.flushers[i] = nil
	}
	c.flushers = c.flushers[:0]
	for ; c.outHeld > 0; c.outHeld-- {
		c.inflight.Add(-1)
		c.cfg.limit.release()
	}
	return err
}

// serveInline runs the interceptor and h's inline attempt on the read
// loop, holding the request's in-flight slots. It reports false when h
// declined: the caller then runs h in a goroutine with the slots still
// held and the interceptor already passed. A response is appended to
// c.out and its slots are released when c.out is written (flushInline).
func (c *Conn) serveInline(h InlineHandler, req *protocol.Command) bool {
	var resp *protocol.Command
	if c.cfg.intercept != nil {
		resp = c.intercepted(req)
	}
	if resp == nil {
		var served bool
		if resp, served = c.callInline(h, req); !served {
			return false
		}
		if f, ok := h.(InlineFlusher); ok && !slices.Contains(c.flushers, f) {
			c.flushers = append(c.flushers, f)
		}
	}
	c.outHeld++
	if resp == nil || req.IsOneway() {
		return true
	}
	resp.Opaque = req.Opaque
	resp.Flag |= protocol.FlagResponse
	n := len(c.out)
	out, err := resp.AppendFrame(c.out)
	if err != nil {
		c.out = out[:n]
		c.cfg.log.Debug("remoting: reply not sent", "conn", c, "code", req.Code, "opaque", req.Opaque,
			"err", fmt.Errorf("remoting: encode code %d: %w", resp.Code, err))
		return true
	}
	c.out = out
	return true
}

// callInline runs h's inline attempt, turning a panic into a SYSTEM_ERROR
// response.
func (c *Conn) callInline(h InlineHandler, req *protocol.Command) (resp *protocol.Command, served bool) {
	defer func() {
		if r := recover(); r != nil {
			c.cfg.log.Error("remoting: handler panic", "conn", c, "code", req.Code,
				"opaque", req.Opaque, "panic", r, "stack", string(debug.Stack()))
			resp = protocol.NewResponse(req, protocol.SystemError,
				fmt.Sprintf("internal error serving request code %d: %v", req.Code, r))
			served = true
		}
	}()
	return h.ServeInline(c.ctx, c, req)
}

// inlineFlushed calls f.InlineFlushed, logging a panic.
func (c *Conn) inlineFlushed(f InlineFlusher) {
	defer func() {
		if r := recover(); r != nil {
			c.cfg.log.Error("remoting: inline flush panic", "conn", c, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	f.InlineFlushed(c)
}
