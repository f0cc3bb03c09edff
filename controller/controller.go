package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Controller is one node of the controller group. New builds it, Start
// joins the Raft group and serves the remoting port, Shutdown stops both.
type Controller struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time

	fsm       *fsm
	live      *liveTable
	metrics   *metrics
	raft      *raft.Raft
	transport *raft.NetworkTransport
	boltStore *raftboltdb.BoltStore
	server    *remoting.Server
	ln        net.Listener
	client    *remoting.Client // notifications to brokers
	metricsLn net.Listener
	httpSrv   *http.Server

	// propose serialises the leader's read-decide-apply steps, so two
	// decisions never both read the same epochs.
	propose sync.Mutex
	// ready is true while this node is leader and has applied every entry
	// of earlier terms (a barrier after winning the election).
	ready atomic.Bool

	leaderCh <-chan bool

	stop     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// New validates opts and builds a node; nothing runs until Start.
func New(opts Options) (*Controller, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	c := &Controller{opts: opts, log: opts.Logger, now: opts.Now, fsm: newFSM(), stop: make(chan struct{})}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.log = c.log.With("controller", opts.NodeID)
	if c.now == nil {
		c.now = time.Now
	}
	c.live = newLiveTable(opts.HeartbeatTimeout, c.now)
	c.metrics = newMetrics(c)
	return c, nil
}

// Start opens the Raft stores, joins the group (bootstrapping it with the
// configured peers on a node with no Raft state yet), and serves the
// remoting port. On error everything started is stopped again.
func (c *Controller) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			c.Shutdown(context.Background())
		}
	}()
	if err := c.startRaft(); err != nil {
		return err
	}
	if err := c.startServer(ctx); err != nil {
		return err
	}
	if err := c.serveMetrics(ctx); err != nil {
		return err
	}
	c.wg.Add(2)
	go c.watchLeadership()
	go c.scanLoop()
	c.log.Info("controller started", "addr", c.Addr(), "raft", c.transport.LocalAddr())
	return nil
}

func (c *Controller) startRaft() error {
	dir := c.opts.DataDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("controller: data dir: %w", err)
	}
	var err error
	c.boltStore, err = raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		return fmt.Errorf("controller: raft store: %w", err)
	}
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft-" + c.opts.NodeID, Level: hclog.Warn, Output: slogWriter{c.log}})
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hlog)
	if err != nil {
		return fmt.Errorf("controller: snapshot store: %w", err)
	}
	self := c.opts.self()
	if c.opts.RaftListener != nil {
		c.transport = raft.NewNetworkTransportWithLogger(&streamLayer{Listener: c.opts.RaftListener}, 3, 5*time.Second, hlog)
	} else {
		c.transport, err = raft.NewTCPTransportWithLogger(self.RaftAddr, nil, 3, 5*time.Second, hlog)
		if err != nil {
			return fmt.Errorf("controller: raft transport: %w", err)
		}
	}
	cfg := raft.DefaultConfig()
	cfg.LocalID = raft.ServerID(self.ID)
	cfg.HeartbeatTimeout = c.opts.RaftHeartbeatTimeout
	cfg.ElectionTimeout = c.opts.RaftElectionTimeout
	cfg.LeaderLeaseTimeout = c.opts.RaftHeartbeatTimeout / 2
	cfg.CommitTimeout = min(cfg.CommitTimeout, c.opts.RaftHeartbeatTimeout/4)
	cfg.SnapshotThreshold = c.opts.SnapshotThreshold
	cfg.Logger = hlog
	notify := make(chan bool, 16)
	cfg.NotifyCh = notify
	c.leaderCh = notify
	existing, err := raft.HasExistingState(c.boltStore, c.boltStore, snaps)
	if err != nil {
		return fmt.Errorf("controller: raft state: %w", err)
	}
	c.raft, err = raft.NewRaft(cfg, c.fsm, c.boltStore, c.boltStore, snaps, c.transport)
	if err != nil {
		return fmt.Errorf("controller: raft: %w", err)
	}
	if !existing {
		servers := make([]raft.Server, 0, len(c.opts.Peers))
		for _, p := range c.opts.Peers {
			servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
		}
		if err := c.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil &&
			!errors.Is(err, raft.ErrCantBootstrap) {
			return fmt.Errorf("controller: bootstrap: %w", err)
		}
	}
	return nil
}

func (c *Controller) startServer(ctx context.Context) error {
	ln := c.opts.Listener
	if ln == nil {
		var lc net.ListenConfig
		var err error
		if ln, err = lc.Listen(ctx, "tcp", c.opts.ListenAddr); err != nil {
			return fmt.Errorf("controller: listen: %w", err)
		}
	}
	c.ln = ln
	mode, cfg := c.opts.tlsMode(), c.opts.TLSConfig
	if mode == remoting.TLSPermissive && cfg == nil {
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		var err error
		if cfg, err = remoting.SelfSignedTLS(host); err != nil {
			return fmt.Errorf("controller: %w", err)
		}
		c.log.Info("TLS mode permissive without a certificate: TLS clients get a self-signed certificate generated at start (they can encrypt, not authenticate the controller)")
	}
	if mode == remoting.TLSDisabled {
		cfg = nil
	}
	c.server = remoting.NewServer(remoting.ServerOptions{Logger: c.log, TLSConfig: cfg, TLSMode: mode})
	co := remoting.ClientOptions{Logger: c.log, TLSConfig: c.opts.ClientTLSConfig}
	if cr := c.opts.BrokerCredentials; cr.AccessKey != "" {
		co.RequestHook = func(req *protocol.Command) { req.Sign(cr.AccessKey, cr.SecretKey, "") }
	}
	c.client = remoting.NewClient(co)
	c.registerHandlers()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := c.server.Serve(ln); err != nil {
			c.log.Error("controller: serve", "err", err)
		}
	}()
	return nil
}

// Addr is the remoting address ("" before Start).
func (c *Controller) Addr() string {
	if c.ln == nil {
		return ""
	}
	return c.ln.Addr().String()
}

// IsLeader reports whether this node is the Raft leader and ready to
// serve the leader-only requests.
func (c *Controller) IsLeader() bool { return c.ready.Load() }

// Leader returns the leader's peer entry, if a leader is known.
func (c *Controller) Leader() (Peer, bool) {
	if c.raft == nil {
		return Peer{}, false
	}
	_, id := c.raft.LeaderWithID()
	if id == "" {
		return Peer{}, false
	}
	return c.opts.peerByID(string(id))
}

// Shutdown stops the scan, the remoting port and Raft (ctx bounds the
// remoting drain). Safe to call more than once and after a failed Start.
func (c *Controller) Shutdown(ctx context.Context) error {
	var errs []error
	c.stopOnce.Do(func() {
		close(c.stop)
		c.ready.Store(false)
		if c.server != nil {
			errs = append(errs, c.server.Shutdown(ctx))
		} else if c.ln != nil {
			c.ln.Close()
		}
		if c.httpSrv != nil {
			errs = append(errs, c.httpSrv.Shutdown(ctx))
		}
		if c.client != nil {
			c.client.Close()
		}
		if c.raft != nil {
			errs = append(errs, c.raft.Shutdown().Error())
		}
		if c.transport != nil {
			errs = append(errs, c.transport.Close())
		}
		c.wg.Wait()
		if c.boltStore != nil {
			errs = append(errs, c.boltStore.Close())
		}
	})
	return errors.Join(errs...)
}

// watchLeadership follows Raft's leadership notifications. On winning, a
// barrier makes sure every entry of earlier terms is applied before the
// node decides anything, and the liveness grace period restarts.
func (c *Controller) watchLeadership() {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case leader := <-c.leaderCh:
			c.ready.Store(false)
			c.metrics.leader(leader)
			if !leader {
				c.log.Info("lost controller leadership")
				continue
			}
			if err := c.raft.Barrier(c.opts.ApplyTimeout).Error(); err != nil {
				c.log.Warn("leader barrier failed", "err", err)
				continue
			}
			c.live.restartGrace()
			c.ready.Store(true)
			c.log.Info("controller leader", "term", c.raft.Stats()["term"])
		}
	}
}

// apply proposes a command through the Raft log and returns the FSM's
// result. Errors mean the command may or may not have been committed
// (leadership lost, timeout).
func (c *Controller) apply(cmd *command) (*result, error) {
	f := c.raft.Apply(cmd.encode(), c.opts.ApplyTimeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return nil, fmt.Errorf("%w: %v", ErrNotLeader, err)
		}
		return nil, fmt.Errorf("controller: apply %s: %w", cmd.Kind, err)
	}
	res, ok := f.Response().(*result)
	if !ok {
		return nil, fmt.Errorf("controller: apply %s: unexpected response %T", cmd.Kind, f.Response())
	}
	return res, nil
}

// snapshot forces a Raft snapshot (tests).
func (c *Controller) snapshot() error { return c.raft.Snapshot().Error() }

// streamLayer is a raft.StreamLayer over a given listener, dialling TCP.
type streamLayer struct{ net.Listener }

func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}

// slogWriter turns hclog's lines into slog records.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Info(string(trimNewline(p)), "component", "raft")
	return len(p), nil
}

func trimNewline(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}

var _ io.Writer = slogWriter{}

// notifyRoleChanged tells every broker of the group its new master,
// best effort: a broker that misses it learns the master from its next
// CONTROLLER_REGISTER_BROKER or GET_REPLICA_INFO.
func (c *Controller) notifyRoleChanged(g *Group) {
	if !c.opts.NotifyBrokerRoleChanged {
		return
	}
	h := &protocol.NotifyBrokerRoleChangedRequestHeader{MasterInfo: g.masterInfo()}
	body := (&protocol.SyncStateSet{SyncStateSet: g.SyncStateSet, SyncStateSetEpoch: g.SyncStateSetEpoch}).Encode()
	for _, id := range g.ids() {
		addr := g.Replicas[id].Addr
		if addr == "" || !c.live.alive(g.BrokerName, id) {
			continue
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), DefaultNotifyTimeout)
			defer cancel()
			req := protocol.NewRequest(protocol.NotifyBrokerRoleChanged, h.Encode(), body)
			resp, err := c.client.Invoke(ctx, addr, req)
			c.metrics.notified(resp, err)
			if err == nil {
				err = resp.Err()
			}
			if err != nil {
				c.log.Warn("notify broker role changed", "broker", g.BrokerName, "id", id, "addr", addr, "err", err)
			}
		}()
	}
}
