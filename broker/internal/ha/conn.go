package ha

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// slaveConn is one slave connection on the master: a reader goroutine
// takes its reports (handshake, acks, heartbeats) and a writer goroutine
// streams the commit log. Either one failing closes the connection, which
// ends the other.
type slaveConn struct {
	srv   *Server
	nc    net.Conn
	addr  string
	since time.Time
	id    atomic.Int64 // controller id from the hello (ExpectBrokerID), set before ready
	// confirm: the hello asked for the confirm offset in every transfer
	// header (set by the reader before it hands start to the writer)
	confirm bool

	ready    atomic.Bool  // the first report was accepted
	acked    atomic.Int64 // the slave's last reported offset
	lastAck  atomic.Int64 // unix ns of the last report
	caughtUp atomic.Int64 // unix ns of the last ack that reached the master's end
	// reached: unix ns of the last report that covered everything the
	// master had at the previous report (0 until one did on this
	// connection). Unlike caughtUp it also holds under a steady write
	// load, where acks never equal the moving end (Replicas).
	reached    atomic.Int64
	prevMaxEnd int64        // the master's end at the previous report (reader goroutine)
	sent       atomic.Int64 // end of what was handed to the socket

	start     chan int64    // the handshake's streaming start, to the writer
	wake      chan struct{} // cap 1: new data may be there
	done      chan struct{}
	closeOnce sync.Once
}

func newSlaveConn(s *Server, nc net.Conn) *slaveConn {
	return &slaveConn{srv: s, nc: nc, addr: nc.RemoteAddr().String(), since: time.Now(),
		start: make(chan int64, 1), wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (c *slaveConn) notify() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *slaveConn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		c.nc.Close()
	})
}

// readLoop reads 8-byte reports until the connection fails. The first one
// is the handshake; every later one is an ack that must not go backwards
// nor past what was sent.
func (c *slaveConn) readLoop() error {
	s := c.srv
	var b [reportSize]byte
	if s.opts.ExpectBrokerID {
		var h [helloSize]byte
		if err := c.nc.SetReadDeadline(time.Now().Add(s.opts.ReadTimeout)); err != nil {
			return err
		}
		if _, err := io.ReadFull(c.nc, h[:]); err != nil {
			return err
		}
		id, confirm, err := decodeHello(h[:])
		if err != nil {
			return err
		}
		c.id.Store(id)
		c.confirm = confirm
	}
	for first := true; ; first = false {
		if err := c.nc.SetReadDeadline(time.Now().Add(s.opts.ReadTimeout)); err != nil {
			return err
		}
		if _, err := io.ReadFull(c.nc, b[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		off := decodeReport(b[:])
		now := time.Now().UnixNano()
		if first {
			start, err := s.handshake(c, off)
			if err != nil {
				return err
			}
			c.acked.Store(off)
			c.sent.Store(start)
			c.lastAck.Store(now)
			c.caughtUp.Store(now)
			c.prevMaxEnd = s.st.MaxPhyOffset()
			if off >= c.prevMaxEnd {
				c.reached.Store(now)
			}
			c.ready.Store(true)
			s.onReady(off)
			c.start <- start
			continue
		}
		if prev, sent := c.acked.Load(), c.sent.Load(); off < prev || off > sent {
			// Streaming started above an empty slave's 0: its first ack
			// jumps forward, which the sent bound still allows.
			return fmt.Errorf("%w: ack %d outside [%d, %d]", ErrProtocol, off, prev, sent)
		}
		c.acked.Store(off)
		c.lastAck.Store(now)
		end := s.st.MaxPhyOffset()
		if off >= end {
			c.caughtUp.Store(now)
		}
		if off >= c.prevMaxEnd {
			c.reached.Store(now)
		}
		c.prevMaxEnd = end
		s.acks.ack(off)
		s.wakeAckWaiters()
		if s.opts.OnAck != nil {
			s.opts.OnAck()
		}
		if s.opts.ConfirmOffset != nil {
			s.Notify() // the ack may raise the confirm offset the slaves are told
		}
	}
}

// writeLoop streams the commit log from the handshake's start: whatever is
// there now, then more whenever woken (Notify, the poll, a sync waiter),
// and an empty transfer after HeartbeatInterval without a write. On a
// connection that asked for it, every transfer carries the confirm
// offset, and an empty one goes out as soon as the confirm offset rose
// past the last one sent (also at once when streaming starts), so a
// caught-up slave learns it without waiting for data or a heartbeat.
func (c *slaveConn) writeLoop() error {
	s := c.srv
	var next int64
	select {
	case next = <-c.start:
	case <-c.done:
		return nil
	}
	hdr := make([]byte, 0, confirmHeaderSize)
	sentConfirm := int64(-1)
	frame := func(start int64, size int) []byte {
		if !c.confirm {
			return appendHeader(hdr[:0], start, size)
		}
		sentConfirm = max(sentConfirm, s.confirmOffset())
		return appendConfirmHeader(hdr[:0], start, size, sentConfirm)
	}
	lastWrite := time.Now()
	idle := time.NewTimer(s.opts.HeartbeatInterval)
	defer idle.Stop()
	for {
		if next < s.st.MaxPhyOffset() {
			data, err := s.chunk(next)
			if err != nil {
				return fmt.Errorf("read commit log at %d: %w", next, err)
			}
			hdr = frame(next, len(data))
			// Published before the write: the slave may ack the data
			// before Write returns.
			c.sent.Store(next + int64(len(data)))
			if err := c.write(hdr, data); err != nil {
				return err
			}
			next += int64(len(data))
			lastWrite = time.Now()
			continue
		}
		wait := s.opts.HeartbeatInterval - time.Since(lastWrite)
		if wait <= 0 || (c.confirm && s.confirmOffset() > sentConfirm) {
			hdr = frame(next, 0)
			if err := c.write(hdr, nil); err != nil {
				return err
			}
			lastWrite = time.Now()
			wait = s.opts.HeartbeatInterval
		}
		idle.Reset(wait)
		select {
		case <-c.done:
			return nil
		case <-c.wake:
		case <-idle.C:
		}
	}
}

func (c *slaveConn) write(hdr, body []byte) error {
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.srv.opts.WriteTimeout)); err != nil {
		return err
	}
	bufs := net.Buffers{hdr, body}
	_, err := bufs.WriteTo(c.nc)
	return err
}

// chunk reads the next transfer from off: up to MaxTransfer bytes cut at
// a record boundary, so a slave's commit log normally ends on one (a
// slave stopped mid-record would otherwise restart with a torn record);
// a record larger than MaxTransfer goes whole.
func (s *Server) chunk(off int64) ([]byte, error) {
	data, err := s.st.ReadCommitLog(off, s.opts.MaxTransfer)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: no data below the end", io.ErrUnexpectedEOF)
	}
	n, need := wholeRecords(data)
	if n == 0 && need > 0 && need <= maxFrameBody {
		if big, err := s.st.ReadCommitLog(off, need); err == nil && len(big) == need {
			return big, nil
		}
	}
	if n == 0 {
		n = len(data)
	}
	return data[:n], nil
}
