package ha

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// ClientOptions configure the slave side.
type ClientOptions struct {
	// MasterAddr is the master's HA address (haMasterAddress, or the
	// haServerAddr the NameServer returns); empty = wait for
	// SetMasterAddress.
	MasterAddr string
	// HeartbeatInterval: the slave reports its offset at least this often
	// (haSendHeartbeatInterval, default 5 s).
	HeartbeatInterval time.Duration
	// ReadTimeout: no transfer nor heartbeat for this long = a dead
	// connection, reconnect (default 20 s).
	ReadTimeout time.Duration
	// DialTimeout (default 3 s) and WriteTimeout (default 20 s) bound the
	// connect and each report.
	DialTimeout  time.Duration
	WriteTimeout time.Duration
	// MinBackoff and MaxBackoff bound the reconnect delay, doubled after
	// each failed attempt (defaults 100 ms and 5 s).
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// SegmentSize, when set (the store's mappedFileSizeCommitLog), makes
	// the slave reject a transfer crossing one of its segment ends: the
	// master never sends one, so it means the two sizes differ.
	SegmentSize int64
	Logger      *slog.Logger
	// TLSConfig, if set, makes the slave dial the master's HA port over
	// TLS (the master must run ServerOptions.TLSConfig).
	TLSConfig *tls.Config
	// Secret, if set, answers the master's challenge (the master's
	// ServerOptions.Secret must be the same; auth.go).
	Secret []byte
	// BrokerID, if positive, is sent in a hello before the first report:
	// the slave's controller id (controller mode; the master must set
	// ServerOptions.ExpectBrokerID). The hello also asks for the master's
	// confirm offset in every transfer header (ConfirmOffset).
	BrokerID int64
	// OnConfirm, if set, is called after the master's confirm offset rose
	// (from the replication goroutine; it must not block): controller
	// mode wakes the store's dispatcher, whose limit it is.
	OnConfirm func()
}

func (o *ClientOptions) setDefaults() {
	o.HeartbeatInterval = or(o.HeartbeatInterval, DefaultHeartbeatInterval)
	o.ReadTimeout = or(o.ReadTimeout, DefaultReadTimeout)
	o.DialTimeout = or(o.DialTimeout, 3*time.Second)
	o.WriteTimeout = or(o.WriteTimeout, DefaultWriteTimeout)
	o.MinBackoff = or(o.MinBackoff, 100*time.Millisecond)
	o.MaxBackoff = or(o.MaxBackoff, 5*time.Second)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Validate reports options that cannot work.
func (o *ClientOptions) Validate() error {
	c := *o
	c.setDefaults()
	var errs []error
	for name, d := range map[string]time.Duration{"HeartbeatInterval": c.HeartbeatInterval, "ReadTimeout": c.ReadTimeout,
		"DialTimeout": c.DialTimeout, "WriteTimeout": c.WriteTimeout, "MinBackoff": c.MinBackoff, "MaxBackoff": c.MaxBackoff} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%w: %s %v is negative", ErrBadOptions, name, d))
		}
	}
	if c.MaxBackoff < c.MinBackoff {
		errs = append(errs, fmt.Errorf("%w: MaxBackoff %v below MinBackoff %v", ErrBadOptions, c.MaxBackoff, c.MinBackoff))
	}
	if c.SegmentSize < 0 {
		errs = append(errs, fmt.Errorf("%w: SegmentSize %d is negative", ErrBadOptions, c.SegmentSize))
	}
	if len(c.Secret) > 0 && len(c.Secret) < MinSecretLen {
		errs = append(errs, fmt.Errorf("%w: Secret is %d bytes, at least %d needed", ErrBadOptions, len(c.Secret), MinSecretLen))
	}
	return errors.Join(errs...)
}

// Client is the slave side of replication (RocketMQ's HAClient): it keeps
// one connection to the master, reports its commit log end, appends what
// the master streams with store.AppendRaw (which also builds consume
// queues and index) and reconnects with backoff whenever the connection
// fails. The store should be read only (store.SetReadOnly) so nothing but
// replication appends to it. All methods are safe for concurrent use.
type Client struct {
	opts ClientOptions
	st   *store.Store
	log  *slog.Logger

	mu       sync.Mutex
	addr     string
	nc       net.Conn // current connection, nil between sessions
	cancel   context.CancelFunc
	changed  chan struct{} // cap 1: the address changed
	started  bool
	closed   bool
	since    time.Time
	sessions int64

	wmu         sync.Mutex // serializes reports on the connection
	lastReport  atomic.Int64
	lastReceive atomic.Int64
	// confirm: the confirm offset the master at addr last sent (BrokerID
	// > 0 only); 0 until it sends one, reset when the address changes.
	// Written under mu, read without it.
	confirm atomic.Int64

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// NewClient returns a slave client appending to st. It does not connect
// until Start.
func NewClient(st *store.Store, opts ClientOptions) (*Client, error) {
	if st == nil {
		return nil, fmt.Errorf("%w: nil store", ErrBadOptions)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.setDefaults()
	return &Client{opts: opts, st: st, log: opts.Logger.With("component", "ha-slave"), addr: opts.MasterAddr,
		changed: make(chan struct{}, 1), stop: make(chan struct{})}, nil
}

// Start starts the replication goroutine. It returns at once; connection
// failures are retried in the background and logged.
func (c *Client) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.started {
		return fmt.Errorf("ha: client already started")
	}
	c.started = true
	c.wg.Add(1)
	go c.run()
	return nil
}

// Close stops replication, closes the connection and waits for the
// replication goroutine; no AppendRaw runs after it returns. Idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.dropLocked()
		c.mu.Unlock()
		close(c.stop)
		c.wg.Wait()
	})
	return nil
}

// SetMasterAddress switches to the master at addr (e.g. when the
// NameServer's register response names another haServerAddr); the
// current connection, if to another address, is dropped. Empty addr
// disconnects and waits for an address.
func (c *Client) SetMasterAddress(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if addr == c.addr {
		return
	}
	c.log.Info("ha master address changed", "from", c.addr, "to", addr)
	c.addr = addr
	c.dropLocked()
	// Another master's confirm offset says nothing about this one's
	// history: nothing more is confirmed until the new master says so.
	c.confirm.Store(0)
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// MasterAddress returns the master address in use.
func (c *Client) MasterAddress() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addr
}

// ConfirmOffset returns the confirm offset the master last sent: the
// commit log end every member of its SyncStateSet has (controller mode;
// 0 before the first transfer from the current master address, and
// always 0 without ClientOptions.BrokerID). It may exceed the slave's own
// end; records below both are the master's and survive any failover.
func (c *Client) ConfirmOffset() int64 { return c.confirm.Load() }

// ClientStatus is the slave's view of replication (the wire type of
// Tide's HA status request).
type ClientStatus = protocol.HAClientStatus

// Status returns a snapshot.
func (c *Client) Status() ClientStatus {
	c.mu.Lock()
	st := ClientStatus{MasterAddr: c.addr, Connected: c.nc != nil, Sessions: c.sessions}
	if c.nc != nil {
		st.ConnectedSince = c.since
	}
	c.mu.Unlock()
	st.MaxOffset = c.st.MaxPhyOffset()
	st.ConfirmOffset = c.confirm.Load()
	if n := c.lastReport.Load(); n > 0 {
		st.LastReport = time.Unix(0, n)
	}
	if n := c.lastReceive.Load(); n > 0 {
		st.LastReceive = time.Unix(0, n)
	}
	return st
}

// dropLocked closes the current connection or aborts a dial in progress.
func (c *Client) dropLocked() {
	if c.cancel != nil {
		c.cancel()
	}
	if c.nc != nil {
		c.nc.Close()
	}
}

// dropConn closes the current connection (tests: a network failure).
func (c *Client) dropConn() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc != nil {
		c.nc.Close()
	}
}

func (c *Client) run() {
	defer c.wg.Done()
	backoff := c.opts.MinBackoff
	for {
		c.mu.Lock()
		addr := c.addr
		c.mu.Unlock()
		if addr == "" {
			select {
			case <-c.stop:
				return
			case <-c.changed:
				continue
			}
		}
		progressed, err := c.session(addr)
		select {
		case <-c.stop:
			return
		default:
		}
		if progressed {
			backoff = c.opts.MinBackoff
		}
		c.log.Warn("ha connection to master ended; reconnecting", "master", addr, "err", err, "retryIn", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-c.stop:
			t.Stop()
			return
		case <-c.changed:
			backoff = c.opts.MinBackoff
		case <-t.C:
			backoff = min(2*backoff, c.opts.MaxBackoff)
		}
		t.Stop()
	}
}

// session runs one connection: report, then apply transfers until
// something fails. progressed reports whether the master sent anything
// usable (then the next attempt starts from the minimum backoff).
func (c *Client) session(addr string) (progressed bool, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.mu.Lock()
	if c.closed || addr != c.addr {
		c.mu.Unlock()
		return false, ErrClosed
	}
	c.cancel = cancel
	c.mu.Unlock()
	d := net.Dialer{Timeout: c.opts.DialTimeout}
	var nc net.Conn
	if c.opts.TLSConfig != nil {
		td := tls.Dialer{NetDialer: &d, Config: c.opts.TLSConfig}
		nc, err = td.DialContext(ctx, "tcp", addr)
	} else {
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	if c.closed || addr != c.addr || ctx.Err() != nil {
		c.mu.Unlock()
		nc.Close()
		return false, ErrClosed
	}
	c.nc, c.since = nc, time.Now()
	c.sessions++
	c.mu.Unlock()
	hbDone := make(chan struct{})
	var hb sync.WaitGroup
	defer func() {
		close(hbDone)
		nc.Close() // unblocks a heartbeat stuck in a write
		hb.Wait()
		c.mu.Lock()
		c.nc, c.cancel = nil, nil
		c.mu.Unlock()
	}()

	if len(c.opts.Secret) > 0 {
		if err := answer(nc, c.opts.Secret, c.opts.ReadTimeout); err != nil {
			return false, err
		}
	}
	if c.opts.BrokerID > 0 {
		if err := c.writeFrame(nc, appendHello(nil, c.opts.BrokerID)); err != nil {
			return false, err
		}
	}
	start := c.st.MaxPhyOffset()
	if err := c.report(nc, start); err != nil {
		return false, err
	}
	c.log.Info("ha connected to master", "master", addr, "from", start)
	hb.Add(1)
	go func() {
		defer hb.Done()
		c.heartbeat(nc, hbDone)
	}()

	br := bufio.NewReaderSize(nc, 64<<10)
	var buf [confirmHeaderSize]byte
	hdr := buf[:headerSize]
	if c.opts.BrokerID > 0 {
		hdr = buf[:confirmHeaderSize] // the hello asked for the confirm offset
	}
	var body []byte
	unacked := false
	for first := true; ; first = false {
		if err := nc.SetReadDeadline(time.Now().Add(c.opts.ReadTimeout)); err != nil {
			return progressed, err
		}
		if _, err := io.ReadFull(br, hdr); err != nil {
			if first && len(c.opts.Secret) > 0 && !errors.Is(err, os.ErrDeadlineExceeded) {
				// A master refusing the proof closes without a word: say
				// what the likely cause is.
				return progressed, fmt.Errorf("%w: the master closed the connection before streaming (a haAuthSecret other than the master's? its log says why): %v", ErrAuth, err)
			}
			return progressed, err
		}
		off, size, err := decodeHeader(hdr, maxFrameBody)
		if err != nil {
			return progressed, err
		}
		confirm := int64(-1)
		if len(hdr) == confirmHeaderSize {
			if confirm, err = decodeConfirm(hdr); err != nil {
				return progressed, err
			}
		}
		if cap(body) < size {
			body = make([]byte, size)
		}
		body = body[:size]
		if _, err := io.ReadFull(br, body); err != nil {
			return progressed, err
		}
		c.lastReceive.Store(time.Now().UnixNano())
		if err := c.apply(off, body); err != nil {
			return progressed, err
		}
		c.raiseConfirm(addr, confirm)
		progressed = true
		unacked = unacked || size > 0
		// Ack once the data read so far is applied: under load several
		// transfers share one report, when idle each one gets its own.
		if unacked && br.Buffered() < len(hdr) {
			if err := c.report(nc, c.st.MaxPhyOffset()); err != nil {
				return progressed, err
			}
			unacked = false
		}
	}
}

// apply checks that a transfer continues the commit log exactly and
// appends it. An empty store accepts the master's first offset (the
// master starts a new slave at its oldest retained segment).
func (c *Client) apply(off int64, body []byte) error {
	end := c.st.MaxPhyOffset()
	if off != end && end != 0 {
		c.log.Error("ha transfer does not continue the local commit log; dropping the connection",
			"transferOffset", off, "localMaxOffset", end)
		return fmt.Errorf("%w: transfer at %d, local end %d", ErrGap, off, end)
	}
	if len(body) == 0 {
		return nil
	}
	if seg := c.opts.SegmentSize; seg > 0 && off/seg != (off+int64(len(body))-1)/seg {
		c.log.Error("ha transfer crosses a local segment end: master and slave mappedFileSizeCommitLog differ",
			"transferOffset", off, "size", len(body), "segmentSize", seg)
		return fmt.Errorf("%w: %d bytes at %d cross a %d-byte segment end", ErrProtocol, len(body), off, seg)
	}
	if err := c.st.AppendRaw(off, body); err != nil {
		return fmt.Errorf("ha: append at %d: %w", off, err)
	}
	return nil
}

// raiseConfirm records the confirm offset a transfer from the master at
// addr carried, if it is higher (after the transfer's data is appended,
// so the store never sees a limit for bytes it lacks and then lacks them
// for long), and calls OnConfirm.
func (c *Client) raiseConfirm(addr string, confirm int64) {
	c.mu.Lock()
	// under mu: SetMasterAddress may have switched (and reset) meanwhile
	raised := addr == c.addr && confirm > c.confirm.Load()
	if raised {
		c.confirm.Store(confirm)
	}
	c.mu.Unlock()
	if raised && c.opts.OnConfirm != nil {
		c.opts.OnConfirm()
	}
}

// heartbeat reports the offset every HeartbeatInterval until done.
func (c *Client) heartbeat(nc net.Conn, done <-chan struct{}) {
	t := time.NewTicker(c.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if err := c.report(nc, c.st.MaxPhyOffset()); err != nil {
				nc.Close() // ends the session's read
				return
			}
		}
	}
}

func (c *Client) report(nc net.Conn, off int64) error {
	var b [reportSize]byte
	if err := c.writeFrame(nc, appendReport(b[:0], off)); err != nil {
		return err
	}
	c.lastReport.Store(time.Now().UnixNano())
	return nil
}

func (c *Client) writeFrame(nc net.Conn, frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := nc.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout)); err != nil {
		return err
	}
	_, err := nc.Write(frame)
	return err
}
