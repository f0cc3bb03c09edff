package ha

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// ServerOptions configure the master side. Zero values take the defaults
// noted (RocketMQ's where it has one).
type ServerOptions struct {
	// Addr is the listen address, ":<haListenPort>" (default ":10912").
	Addr string
	// MaxTransfer bounds the body of one transfer (haTransferBatchSize,
	// default 32 KiB). A single record larger than this is still sent
	// whole, in one transfer.
	MaxTransfer int
	// HeartbeatInterval: an idle connection gets an empty transfer this
	// often (haSendHeartbeatInterval, default 5 s).
	HeartbeatInterval time.Duration
	// ReadTimeout: a slave silent this long is dropped (haHousekeepingInterval,
	// default 20 s; slaves report every 5 s).
	ReadTimeout time.Duration
	// WriteTimeout bounds one socket write to a slave (default 20 s).
	WriteTimeout time.Duration
	// PollInterval: how often the commit log end is checked for new data
	// (default 10 ms). Notify and WaitSlaveAck wake the senders at once,
	// so only ASYNC_MASTER replication waits for the poll.
	PollInterval time.Duration
	// SlaveTimeout: how long WaitSlaveAck waits (slaveTimeout /
	// syncFlushTimeout-like, default 3 s).
	SlaveTimeout time.Duration
	// MaxGapNotInSync: WaitSlaveAck gives ErrSlaveNotAvailable when the
	// best connected slave is more than this many bytes behind the offset
	// waited for (haMaxGapNotInSync / haSlaveFallbehindMax, default 256 MiB).
	MaxGapNotInSync int64
	// StatusLogInterval: each slave's lag is logged this often (default
	// 30 s; negative disables).
	StatusLogInterval time.Duration
	// OnAck, if set, is called after each slave report is recorded (from
	// that connection's goroutine; it must not block): controller mode
	// wakes the store's dispatcher, whose limit is the confirm offset.
	OnAck func()
	// ConfirmOffset, if set, is the master's confirm offset (controller
	// mode: the commit log end every SyncStateSet member has). Slaves
	// whose hello asks for it get it in every transfer header and bound
	// their dispatch by it; without it they get the commit log end. It is
	// called from the connections' goroutines and the poll: it must be
	// cheap and must not block.
	ConfirmOffset func() int64
	Logger        *slog.Logger
	// TLSConfig, if set, makes the HA port speak TLS (slaves must dial
	// with ClientOptions.TLSConfig). Handshakes are bounded by ReadTimeout.
	TLSConfig *tls.Config
	// Secret, if set (at least MinSecretLen bytes), makes every slave
	// prove it knows it before anything is streamed (auth.go); a peer
	// that does not is closed having received only the challenge.
	Secret []byte
	// ExpectBrokerID makes every slave send the controller-mode hello
	// (its controller id) first; a slave that does not is closed.
	ExpectBrokerID bool
}

// Defaults.
const (
	DefaultHAPort            = 10912
	DefaultMaxTransfer       = 32 << 10
	DefaultHeartbeatInterval = 5 * time.Second
	DefaultReadTimeout       = 20 * time.Second
	DefaultWriteTimeout      = 20 * time.Second
	DefaultPollInterval      = 10 * time.Millisecond
	DefaultSlaveTimeout      = 3 * time.Second
	DefaultMaxGapNotInSync   = 256 << 20
	DefaultStatusLogInterval = 30 * time.Second
	// DefaultMetadataSyncInterval is how often a slave should pull
	// Metadata from its master (RocketMQ syncs every 10 s).
	DefaultMetadataSyncInterval = 10 * time.Second
)

func (o *ServerOptions) setDefaults() {
	if o.Addr == "" {
		o.Addr = fmt.Sprintf(":%d", DefaultHAPort)
	}
	o.MaxTransfer = or(o.MaxTransfer, DefaultMaxTransfer)
	o.HeartbeatInterval = or(o.HeartbeatInterval, DefaultHeartbeatInterval)
	o.ReadTimeout = or(o.ReadTimeout, DefaultReadTimeout)
	o.WriteTimeout = or(o.WriteTimeout, DefaultWriteTimeout)
	o.PollInterval = or(o.PollInterval, DefaultPollInterval)
	o.SlaveTimeout = or(o.SlaveTimeout, DefaultSlaveTimeout)
	o.MaxGapNotInSync = or(o.MaxGapNotInSync, DefaultMaxGapNotInSync)
	o.StatusLogInterval = or(o.StatusLogInterval, DefaultStatusLogInterval)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Validate reports options that cannot work (after defaults are applied).
func (o *ServerOptions) Validate() error {
	c := *o
	c.setDefaults()
	var errs []error
	if c.MaxTransfer < 1024 || c.MaxTransfer > maxFrameBody {
		errs = append(errs, fmt.Errorf("%w: MaxTransfer %d not in [1 KiB, %d]", ErrBadOptions, c.MaxTransfer, maxFrameBody))
	}
	for name, d := range map[string]time.Duration{"HeartbeatInterval": c.HeartbeatInterval, "ReadTimeout": c.ReadTimeout,
		"WriteTimeout": c.WriteTimeout, "PollInterval": c.PollInterval, "SlaveTimeout": c.SlaveTimeout} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%w: %s %v is negative", ErrBadOptions, name, d))
		}
	}
	if c.MaxGapNotInSync < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxGapNotInSync %d is negative", ErrBadOptions, c.MaxGapNotInSync))
	}
	if len(c.Secret) > 0 && len(c.Secret) < MinSecretLen {
		errs = append(errs, fmt.Errorf("%w: Secret is %d bytes, at least %d needed", ErrBadOptions, len(c.Secret), MinSecretLen))
	}
	return errors.Join(errs...)
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Server is the master side of replication (RocketMQ's HAService +
// HAConnection): it accepts slave connections and streams the commit log
// to each from the offset it reports, and tracks their acks for
// SYNC_MASTER. All methods are safe for concurrent use.
type Server struct {
	opts ServerOptions
	st   *store.Store
	log  *slog.Logger
	acks ackWaiters

	mu     sync.Mutex
	ln     net.Listener
	conns  map[*slaveConn]struct{}
	closed bool

	snapshot atomic.Pointer[[]*slaveConn] // conns, for lock-free Notify
	ready    atomic.Int32                 // conns past the handshake

	ackMu   sync.Mutex
	ackWake chan struct{} // closed and replaced on every ack (WaitAcks)

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// NewServer returns a server for st (the master's store). It does not
// listen until Start.
func NewServer(st *store.Store, opts ServerOptions) (*Server, error) {
	if st == nil {
		return nil, fmt.Errorf("%w: nil store", ErrBadOptions)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.setDefaults()
	s := &Server{opts: opts, st: st, log: opts.Logger.With("component", "ha-master"),
		conns: map[*slaveConn]struct{}{}, stop: make(chan struct{}), ackWake: make(chan struct{})}
	s.snapshot.Store(&[]*slaveConn{})
	return s, nil
}

// Start listens on Addr and starts accepting slaves. It returns the
// listen error, or ErrClosed after Close.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("ha: listen: %w", err)
	}
	if s.opts.TLSConfig != nil {
		ln = tls.NewListener(ln, s.opts.TLSConfig)
	}
	s.mu.Lock()
	if s.closed || s.ln != nil {
		s.mu.Unlock()
		ln.Close()
		if s.closed {
			return ErrClosed
		}
		return fmt.Errorf("ha: server already started")
	}
	s.ln = ln
	s.wg.Add(2) // under mu: a concurrent Close waits for these
	s.mu.Unlock()
	s.log.Info("ha server listening", "addr", ln.Addr().String())
	go s.acceptLoop(ln)
	go s.watchLoop()
	return nil
}

// Addr returns the listen address ("" before Start).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops listening, closes every slave connection, releases
// WaitSlaveAck callers with ErrClosed and waits for the server's
// goroutines. Idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		ln := s.ln
		conns := make([]*slaveConn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		close(s.stop)
		if ln != nil {
			ln.Close()
		}
		for _, c := range conns {
			c.close()
		}
		s.acks.close()
		s.wg.Wait()
	})
	return nil
}

// Notify wakes every slave sender to push new commit log data now rather
// than at the next poll. Cheap and non-blocking: the broker may call it
// after each append.
func (s *Server) Notify() {
	for _, c := range *s.snapshot.Load() {
		c.notify()
	}
}

// WaitSlaveAck blocks until a slave has acked the commit log up to offset
// (pass the end of the written run: CommitLogOffset + WroteBytes). It
// returns nil once acked; ErrSlaveNotAvailable at once when no slave is
// connected or the best connected one is more than MaxGapNotInSync bytes
// behind offset; ErrFlushSlaveTimeout after SlaveTimeout; ctx.Err() if ctx
// ends first; ErrClosed when the server closes.
func (s *Server) WaitSlaveAck(ctx context.Context, offset int64) error {
	if s.acks.acked() >= offset {
		return nil
	}
	if s.ready.Load() == 0 {
		if s.isClosed() {
			return ErrClosed
		}
		return ErrSlaveNotAvailable
	}
	if best, ok := s.bestConnected(); !ok || offset-best > s.opts.MaxGapNotInSync {
		return ErrSlaveNotAvailable
	}
	w, err := s.acks.add(offset)
	if err != nil || w == nil {
		return err
	}
	s.Notify()
	t := time.NewTimer(s.opts.SlaveTimeout)
	defer t.Stop()
	select {
	case <-w.done:
		return w.err
	case <-t.C:
		if s.acks.remove(w) {
			return ErrFlushSlaveTimeout
		}
	case <-ctx.Done():
		if s.acks.remove(w) {
			return ctx.Err()
		}
	}
	<-w.done
	return w.err
}

// SlaveStatus describes one connected slave; ServerStatus is the master's
// view of replication. Both are the wire types of Tide's HA status
// request.
type (
	SlaveStatus  = protocol.HASlaveStatus
	ServerStatus = protocol.HAServerStatus
)

// Status returns a snapshot of every slave connection.
func (s *Server) Status() ServerStatus {
	now := time.Now()
	st := ServerStatus{Addr: s.Addr(), MaxOffset: s.st.MaxPhyOffset(), Acked: s.acks.acked()}
	for _, c := range *s.snapshot.Load() {
		ss := SlaveStatus{Addr: c.addr, BrokerID: c.id.Load(), ConnectedSince: c.since, Ready: c.ready.Load(), SentOffset: c.sent.Load()}
		if ss.Ready {
			ss.AckedOffset = c.acked.Load()
			ss.LastAck = time.Unix(0, c.lastAck.Load())
			ss.LagBytes = max(0, st.MaxOffset-ss.AckedOffset)
			if ss.LagBytes > 0 {
				ss.LagTime = s.lagTime(c, ss.AckedOffset, now)
			}
		}
		st.Slaves = append(st.Slaves, ss)
	}
	return st
}

// lagTime is now minus the store time of the first record at or after
// off; when off is not a record boundary, the time since the slave was
// last caught up.
func (s *Server) lagTime(c *slaveConn, off int64, now time.Time) time.Duration {
	if ts, ok := s.storeTimeAt(off); ok {
		return max(0, now.Sub(time.UnixMilli(ts)))
	}
	return max(0, now.Sub(time.Unix(0, c.caughtUp.Load())))
}

func (s *Server) storeTimeAt(off int64) (int64, bool) {
	for range 2 { // a blank filler: its segment's successor starts the data
		b, err := s.st.ReadCommitLog(off, protocol.BlankRecordSize)
		if err != nil {
			return 0, false
		}
		size, magic, err := protocol.PeekRecord(b)
		if err != nil {
			return 0, false
		}
		if magic == protocol.BlankMagic && size >= protocol.BlankRecordSize {
			off += int64(size)
			continue
		}
		rec, err := s.st.ReadRecord(off)
		if err != nil {
			return 0, false
		}
		v, err := protocol.ViewRecord(rec, false)
		if err != nil {
			return 0, false
		}
		return v.StoreTimestamp, true
	}
	return 0, false
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// bestConnected returns the highest acked offset among connected slaves.
func (s *Server) bestConnected() (int64, bool) {
	best, ok := int64(-1), false
	for _, c := range *s.snapshot.Load() {
		if c.ready.Load() {
			best, ok = max(best, c.acked.Load()), true
		}
	}
	return best, ok
}

func (s *Server) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	delay := 5 * time.Millisecond
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.stop:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: back off, keep serving.
			s.log.Warn("ha accept", "err", err)
			select {
			case <-s.stop:
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, time.Second)
			continue
		}
		delay = 5 * time.Millisecond
		c := newSlaveConn(s, nc)
		if !s.add(c) {
			nc.Close()
			return
		}
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *Server) add(c *slaveConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.publishLocked()
	return true
}

func (s *Server) remove(c *slaveConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.publishLocked()
	s.mu.Unlock()
	if c.ready.Load() {
		s.ready.Add(-1)
	}
}

func (s *Server) publishLocked() {
	list := make([]*slaveConn, 0, len(s.conns))
	for c := range s.conns {
		list = append(list, c)
	}
	s.snapshot.Store(&list)
}

func (s *Server) serve(c *slaveConn) {
	defer s.wg.Done()
	if len(s.opts.Secret) > 0 {
		if err := challenge(c.nc, s.opts.Secret, s.opts.ReadTimeout); err != nil {
			c.close()
			s.remove(c)
			s.log.Warn("ha peer refused: it did not authenticate, nothing sent", "peer", c.addr, "err", err)
			return
		}
	}
	s.log.Info("ha slave connected", "slave", c.addr)
	werr := make(chan error, 1)
	go func() {
		err := c.writeLoop()
		c.close()
		werr <- err
	}()
	rerr := c.readLoop()
	c.close()
	err := errors.Join(rerr, <-werr)
	s.remove(c)
	select {
	case <-s.stop:
		s.log.Info("ha slave connection closed: server closing", "slave", c.addr)
	default:
		s.log.Warn("ha slave disconnected", "slave", c.addr, "ackedOffset", c.acked.Load(), "err", err)
	}
}

// handshake decides where streaming starts for a slave that reported off.
func (s *Server) handshake(c *slaveConn, off int64) (int64, error) {
	maxOff, minOff := s.st.MaxPhyOffset(), s.st.MinPhyOffset()
	switch {
	case off < 0:
		return 0, fmt.Errorf("%w: negative offset %d reported", ErrProtocol, off)
	case off > maxOff:
		s.log.Error("HA SLAVE REFUSED: the slave has more commit log than the master, their histories diverge; "+
			"rebuild the slave's store from this master", "slave", c.addr, "slaveMaxOffset", off, "masterMaxOffset", maxOff)
		return 0, fmt.Errorf("%w: slave at %d, master at %d", ErrDivergent, off, maxOff)
	case off < minOff && off == 0:
		s.log.Info("ha new slave: streaming from the master's first retained segment",
			"slave", c.addr, "from", minOff, "masterMaxOffset", maxOff)
		return minOff, nil
	case off < minOff:
		// The slave will refuse the gap (ErrGap) and retry; say why here.
		s.log.Error("HA SLAVE BEHIND RETENTION: the master deleted the commit log the slave needs next; "+
			"streaming from the first retained segment, which the slave refuses; rebuild the slave's store",
			"slave", c.addr, "slaveMaxOffset", off, "masterMinOffset", minOff)
		return minOff, nil
	}
	s.log.Info("ha slave streaming", "slave", c.addr, "from", off, "masterMaxOffset", maxOff)
	return off, nil
}

// confirmOffset is what the transfers tell the slaves that asked for it:
// ServerOptions.ConfirmOffset, else the commit log end.
func (s *Server) confirmOffset() int64 {
	if s.opts.ConfirmOffset != nil {
		return s.opts.ConfirmOffset()
	}
	return s.st.MaxPhyOffset()
}

// onReady counts a slave that passed the handshake.
func (s *Server) onReady(off int64) {
	s.ready.Add(1)
	s.acks.ack(off)
}

// watchLoop polls the commit log end to wake the senders, and logs lag.
func (s *Server) watchLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.PollInterval)
	defer t.Stop()
	var logC <-chan time.Time
	if s.opts.StatusLogInterval > 0 {
		lt := time.NewTicker(s.opts.StatusLogInterval)
		defer lt.Stop()
		logC = lt.C
	}
	last, lastConfirm := s.st.MaxPhyOffset(), s.confirmOffset()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			m, cf := s.st.MaxPhyOffset(), s.confirmOffset()
			if m != last || cf != lastConfirm {
				last, lastConfirm = m, cf
				s.Notify()
			}
		case <-logC:
			s.logStatus()
		}
	}
}

func (s *Server) logStatus() {
	st := s.Status()
	if len(st.Slaves) == 0 {
		s.log.Info("ha: no slave connected", "masterMaxOffset", st.MaxOffset)
		return
	}
	for _, sl := range st.Slaves {
		s.log.Info("ha slave lag", "slave", sl.Addr, "ackedOffset", sl.AckedOffset, "lagBytes", sl.LagBytes,
			"lagTime", sl.LagTime.Round(time.Millisecond), "lastAck", sl.LastAck, "connectedSince", sl.ConnectedSince)
	}
}
