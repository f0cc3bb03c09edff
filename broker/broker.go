package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/broker/internal/clientmgr"
	"github.com/tidemq/tide/broker/internal/ha"
	"github.com/tidemq/tide/broker/internal/longpoll"
	"github.com/tidemq/tide/broker/internal/offset"
	"github.com/tidemq/tide/broker/internal/queuelock"
	"github.com/tidemq/tide/broker/internal/registry"
	"github.com/tidemq/tide/broker/internal/schedule"
	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/broker/internal/subgroup"
	"github.com/tidemq/tide/broker/internal/timer"
	"github.com/tidemq/tide/broker/internal/topic"
	"github.com/tidemq/tide/broker/internal/transaction"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Broker is one broker process: the client port, the store and the
// metadata tables. Create it with New, then Start; Shutdown stops it.
// Methods are safe for concurrent use.
type Broker struct {
	opts Options
	ctl  *controllerMode // nil unless EnableControllerMode
	log  *slog.Logger

	store    *store.Store
	topics   *topic.Table
	offsets  *offset.Table
	groups   *subgroup.Table
	clients  *clientmgr.Manager
	locks    *queuelock.Table
	notify   *notifier
	polls    *longpoll.Service
	server   *remoting.Server
	nsClient *remoting.Client
	registry *registry.Registry
	txs      atomic.Pointer[transaction.Service] // rebuilt on promotion (roleswitch.go)
	haSrv    atomic.Pointer[ha.Server]           // a master's; swapped by role changes
	haCli    atomic.Pointer[ha.Client]           // a slave's
	role     atomic.Pointer[roleState]
	roleMu   sync.Mutex    // serialises role changes (start, controller mode)
	slaveEnd chan struct{} // closed to end the slave's metadata loop (under roleMu)

	masterAddr atomic.Value // string: the master's client address (slaves)
	metaSynced atomic.Int64 // metadata syncs applied (slaves)
	syncNow    chan struct{}
	meta       *metaSync // the slaves' metadata long polls and confirmations (metasync.go)
	// the delay-level and timer services: replaced when a broker demoted
	// while running is promoted again (roleswitch.go), hence atomic
	schedP  atomic.Pointer[schedule.Service]
	timersP atomic.Pointer[timer.Service]

	sec security // ACL and TLS (security.go)
	// aclOffWarned: a slave with ACL off said once that its master's ACL
	// is not copied (aclsync.go)
	aclOffWarned  atomic.Bool
	aclSyncFailed atomic.Value // string: checksum of the master's ACL document last failed to apply

	idem *idem // idempotent producers' state (idempotent.go)

	hooks hooks // test instrumentation; zero in production

	metrics     *metrics
	metricsSrv  *http.Server
	metricsAddr string

	filterCache sync.Map // compiled subscription filters by type and expression
	delayLevels int      // number of messageDelayLevel levels

	ln        net.Listener
	storeHost netip.AddrPort
	addr      string

	stop     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// hooks let in-package tests stall the background work of a start.
type hooks struct {
	// beforeRestore runs on the timer service's and the transaction
	// service's goroutine before they restore their state.
	beforeRestore func()
}

// New validates opts and opens the store and metadata tables (recovering
// them after a crash). It does not listen yet.
func New(opts Options, logger *slog.Logger) (*Broker, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	b := &Broker{opts: opts, log: logger.With("broker", opts.BrokerName), stop: make(chan struct{}), syncNow: make(chan struct{}, 1),
		meta: newMetaSync()}
	cfgDir := filepath.Join(opts.Store.StorePathRootDir, "config")
	levels, _ := store.ParseDelayLevels(opts.Store.MessageDelayLevel)
	b.delayLevels = len(levels)
	var err error
	b.topics, err = topic.Open(filepath.Join(cfgDir, "topics.json"), topic.Options{
		ClusterName: opts.BrokerClusterName, BrokerName: opts.BrokerName,
		AutoCreateTopicEnable: opts.AutoCreateTopicEnable, DefaultTopicQueueNums: opts.DefaultTopicQueueNums,
		ClusterTopicEnable: opts.ClusterTopicEnable, BrokerTopicEnable: opts.BrokerTopicEnable,
		TraceTopicEnable: opts.TraceTopicEnable, ScheduleQueueNums: int32(len(levels)),
		OnChange: b.meta.ring,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: topics: %w", err)
	}
	if b.offsets, err = offset.Open(filepath.Join(cfgDir, "consumerOffset.json")); err != nil {
		return nil, fmt.Errorf("broker: offsets: %w", err)
	}
	if b.groups, err = subgroup.Open(filepath.Join(cfgDir, "subscriptionGroup.json")); err != nil {
		return nil, fmt.Errorf("broker: subscription groups: %w", err)
	}
	if b.sec, err = loadSecurity(opts, b.log); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	storeOpts := visibilityCoders(levels)
	if opts.EnableControllerMode && !opts.ReadUnCommitted {
		// Nothing beyond what was dispatched before is made visible
		// until the role is known (joinControllers sets the confirm
		// offset limit): a returning old master's tail may be its own
		// unacknowledged writes, which the truncation against the new
		// master is about to drop (docs/controller.md).
		storeOpts = append(storeOpts, store.WithDispatchLimit(holdDispatch))
	}
	if b.store, err = store.Open(opts.Store, logger, storeOpts...); err != nil {
		b.sec.close()
		return nil, fmt.Errorf("broker: store: %w", err)
	}
	b.metrics = newMetrics(b)
	if err := b.openIdem(cfgDir); err != nil {
		b.store.Close()
		b.sec.close()
		return nil, fmt.Errorf("broker: %w", err)
	}
	b.clients = clientmgr.New(nil)
	b.locks = queuelock.New(60*time.Second, nil)
	b.notify = newNotifier(b)
	b.polls = longpoll.New(b.store.MaxOffset, 5*time.Second)
	b.polls.SetLimits(longpoll.Limits{Max: opts.MaxHeldPullRequests, MaxPerOwner: opts.MaxHeldPullRequestsPerConn})
	if !opts.IsMaster() {
		b.store.SetReadOnly(true)
	}
	b.setRole(opts.BrokerRole, opts.BrokerID)
	return b, nil
}

// Start listens on the client port, registers with the NameServers and
// starts the background work. It returns once the broker serves requests.
func (b *Broker) Start(ctx context.Context) error {
	o := b.opts
	ln, err := net.Listen("tcp", net.JoinHostPort(o.ListenAddr, strconv.Itoa(o.ListenPort)))
	if err != nil {
		return fmt.Errorf("broker: listen: %w", err)
	}
	b.ln = ln
	port := ln.Addr().(*net.TCPAddr).Port
	ip, err := netip.ParseAddr(o.BrokerIP1)
	if err != nil {
		ln.Close()
		return fmt.Errorf("broker: brokerIP1: %w", err)
	}
	b.storeHost = netip.AddrPortFrom(ip, uint16(port))
	b.addr = b.storeHost.String()
	if o.EnableControllerMode {
		if err := b.joinControllers(ctx); err != nil {
			ln.Close()
			return fmt.Errorf("broker: %w", err)
		}
		o = b.opts // the controller settled the role and id
		b.setRole(o.BrokerRole, o.BrokerID)
	}

	if err := b.startDelays(); err != nil {
		ln.Close()
		return fmt.Errorf("broker: %w", err)
	}
	tx, err := b.newTransactions()
	if err != nil {
		ln.Close()
		return fmt.Errorf("broker: transactions: %w", err)
	}
	b.txs.Store(tx)
	b.server = remoting.NewServer(b.serverOptions())
	b.registerHandlers()
	b.registerControllerModeHandlers()
	b.server.OnDisconnect(b.onDisconnect)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := b.server.Serve(ln); err != nil {
			b.log.Error("serve", "err", err)
		}
	}()

	b.nsClient = remoting.NewClient(b.clientOptions())
	haAddr, err := b.startReplication()
	if err != nil {
		b.server.Shutdown(ctx)
		return fmt.Errorf("broker: replication: %w", err)
	}
	b.registry = registry.New(registry.Options{
		NameServers: o.NameServers(),
		Broker: registry.Broker{ClusterName: o.BrokerClusterName, BrokerName: o.BrokerName, BrokerID: o.BrokerID,
			BrokerAddr: b.addr, HAServerAddr: haAddr},
		Topics:   b.registeredTopics,
		Period:   time.Duration(o.RegisterNameServerPeriod) * time.Millisecond,
		Timeout:  time.Duration(o.RegisterBrokerTimeoutMills) * time.Millisecond,
		Client:   b.nsClient,
		Logger:   b.log,
		OnResult: b.onRegistered,
	})
	if len(o.NameServers()) > 0 {
		if err := b.registry.Start(ctx); err != nil {
			b.log.Warn("first registration incomplete", "err", err)
		}
	}
	if o.IsMaster() {
		b.tx().Start()
	}
	if b.ctl != nil {
		b.wg.Add(1)
		go b.controllerLoop(b.ctl)
	}
	if err := b.serveMetrics(); err != nil {
		b.log.Error("metrics listener", "err", err)
		return fmt.Errorf("broker: metrics: %w", err)
	}
	b.wg.Add(1)
	go b.housekeeping()
	b.wg.Add(1)
	go b.idemLoop()
	b.log.Info("broker started", "addr", b.addr, "cluster", o.BrokerClusterName, "role", o.BrokerRole,
		"flush", o.Store.FlushDiskType, "store", o.Store.StorePathRootDir, "namesrv", o.NamesrvAddr)
	return nil
}

// Addr returns the address clients dial (brokerIP1 and the bound port).
func (b *Broker) Addr() string { return b.addr }

// registeredTopics is the topic table as the NameServers see it, with the
// broker's permission applied (a broker made read-only by brokerPermission
// shows its topics read-only).
func (b *Broker) registeredTopics() protocol.TopicConfigSerializeWrapper {
	w := b.topics.Wrapper()
	if b.opts.BrokerPermission != 6 {
		for k, tc := range w.TopicConfigTable {
			tc.Perm &= b.opts.BrokerPermission | protocol.PermInherit
			w.TopicConfigTable[k] = tc
		}
	}
	return w
}

// housekeeping persists offsets, expires silent clients and re-checks
// long polls until Shutdown.
func (b *Broker) housekeeping() {
	defer b.wg.Done()
	flush := time.NewTicker(time.Duration(b.opts.FlushConsumerOffsetInterval) * time.Millisecond)
	defer flush.Stop()
	scan := time.NewTicker(10 * time.Second)
	defer scan.Stop()
	// A slave that registered before its master knows no master yet: it
	// registers again every 2 s until the NameServers name one, instead of
	// waiting for the next 30 s round.
	findMaster := time.NewTicker(2 * time.Second)
	defer findMaster.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-findMaster.C:
			if m, _ := b.masterAddr.Load().(string); !b.isMaster() && m == "" && b.registry != nil {
				b.registry.Trigger()
			}
		case <-flush.C:
			if err := b.offsets.Persist(); err != nil {
				b.log.Error("persist consumer offsets", "err", err)
			}
		case <-scan.C:
			expired, groups := b.clients.Expire()
			for _, ch := range expired {
				if c, ok := ch.(*remoting.Conn); ok {
					b.log.Info("client expired without heartbeat", "conn", c.RemoteAddr())
					c.Close()
				}
			}
			for _, g := range groups {
				b.notify.changed(g)
			}
		}
	}
}

// onDisconnect unregisters a closed connection's producers and consumers.
// Their queue locks stay until they expire or are unlocked (RocketMQ's
// rule; docs/broker.md "Orderly consumption"): a member whose connection
// dropped may still be working on its queues, and a new owner must not
// start before it has stopped. The members left in a consumer's groups
// are told to rebalance, except once Shutdown has begun: Shutdown closes
// every connection, and telling each remaining member about each one
// closed is members² writes in the closing goroutines (1,500 consumers of
// one group kept Shutdown busy for 10 s), for clients about to lose the
// broker anyway.
func (b *Broker) onDisconnect(c *remoting.Conn) {
	groups, ids := b.clients.RemoveChannel(c)
	stopping := b.stopping()
	for i, g := range groups {
		if stopping {
			b.log.Debug("consumer disconnected by shutdown", "group", g, "client", ids[i])
			continue
		}
		b.log.Info("consumer left", "group", g, "client", ids[i])
		b.notify.changed(g)
	}
}

// stopping reports whether Shutdown has begun.
func (b *Broker) stopping() bool {
	select {
	case <-b.stop:
		return true
	default:
		return false
	}
}

// Shutdown stops accepting requests, answers held pulls, unregisters from
// the NameServers, waits for in-flight requests (bounded by ctx), persists
// the metadata tables and closes the store (flushing it and writing the
// checkpoint).
func (b *Broker) Shutdown(ctx context.Context) error {
	var errs []error
	b.stopOnce.Do(func() {
		close(b.stop)
		b.notify.stop()
		if b.registry != nil {
			if len(b.opts.NameServers()) > 0 {
				if err := b.registry.Stop(ctx); err != nil {
					b.log.Warn("unregister", "err", err)
				}
			}
		}
		b.polls.Close()
		b.roleMu.Lock() // no role change from here on
		if srv := b.haSrv.Swap(nil); srv != nil {
			srv.Close()
		}
		if cl := b.haCli.Swap(nil); cl != nil {
			cl.Close()
		}
		b.roleMu.Unlock()
		if tx := b.tx(); tx != nil {
			if err := tx.Stop(); err != nil {
				errs = append(errs, err)
			}
		}
		if s := b.sched(); s != nil {
			if err := s.Stop(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if t := b.timers(); t != nil {
			if err := t.Stop(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if b.server != nil {
			if err := b.server.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, err)
			}
		}
		if b.nsClient != nil {
			b.nsClient.Close()
		}
		if b.metricsSrv != nil {
			b.metricsSrv.Shutdown(ctx)
		}
		b.wg.Wait()
		b.saveIdem()
		if err := b.offsets.Persist(); err != nil {
			errs = append(errs, err)
		}
		if err := b.groups.Persist(); err != nil {
			errs = append(errs, err)
		}
		if err := b.store.Close(); err != nil {
			errs = append(errs, err)
		}
		b.sec.close()
		b.log.Info("broker stopped")
	})
	return errors.Join(errs...)
}

func (b *Broker) registerHandlers() {
	s := b.server
	// The common sends are served on the connection's read loop when they
	// cannot block (handleSendInline).
	send := remoting.Inline(b.instrument(b.handleSend), b.instrumentInline(b.handleSendInline))
	s.Handle(protocol.SendMessage, send)
	s.Handle(protocol.SendMessageV2, send)
	s.Handle(protocol.SendBatchMessage, send)
	s.HandleFunc(protocol.SendReplyMessage, b.instrument(b.handleSend))
	s.HandleFunc(protocol.SendReplyMessageV2, b.instrument(b.handleSend))
	s.HandleFunc(protocol.PullMessage, b.instrument(b.handlePull))
	s.HandleFunc(protocol.HeartBeat, b.instrument(b.handleHeartbeat))
	s.HandleFunc(protocol.UnregisterClient, b.instrument(b.handleUnregisterClient))
	s.HandleFunc(protocol.GetConsumerListByGroup, b.instrument(b.handleConsumerList))
	s.HandleFunc(protocol.QueryConsumerOffset, b.instrument(b.handleQueryConsumerOffset))
	s.HandleFunc(protocol.UpdateConsumerOffset, b.instrument(b.handleUpdateConsumerOffset))
	s.HandleFunc(protocol.GetMaxOffset, b.instrument(b.handleGetMaxOffset))
	s.HandleFunc(protocol.GetMinOffset, b.instrument(b.handleGetMinOffset))
	s.HandleFunc(protocol.SearchOffsetByTimestamp, b.instrument(b.handleSearchOffset))
	s.HandleFunc(protocol.GetEarliestMsgStoreTime, b.instrument(b.handleEarliestMsgStoreTime))
	s.HandleFunc(protocol.LockBatchMQ, b.instrument(b.handleLockBatch))
	s.HandleFunc(protocol.UnlockBatchMQ, b.instrument(b.handleUnlockBatch))
	s.HandleFunc(protocol.UpdateAndCreateTopic, b.instrument(b.handleCreateTopic))
	s.HandleFunc(protocol.DeleteTopicInBroker, b.instrument(b.handleDeleteTopic))
	s.HandleFunc(protocol.GetAllTopicConfig, b.instrument(b.handleGetAllTopicConfig))
	s.HandleFunc(protocol.GetAllSubscriptionGroupConfig, b.instrument(b.handleGetAllSubscriptionGroups))
	s.HandleFunc(protocol.UpdateAndCreateSubscription, b.instrument(b.handleUpdateSubscriptionGroup))
	s.HandleFunc(protocol.ViewMessageByID, b.instrument(b.handleViewMessage))
	s.HandleFunc(protocol.QueryMessage, b.instrument(b.handleQueryMessage))
	s.HandleFunc(protocol.ConsumerSendMsgBack, b.instrument(b.handleSendBack))
	s.HandleFunc(protocol.EndTransaction, b.instrument(b.handleEndTransaction))
	s.HandleFunc(protocol.GetTopicStatsInfo, b.instrument(b.handleTopicStats))
	s.HandleFunc(protocol.GetConsumeStats, b.instrument(b.handleConsumeStats))
	s.HandleFunc(protocol.GetConsumerConnectionList, b.instrument(b.handleConsumerConnections))
	s.HandleFunc(protocol.GetProducerConnectionList, b.instrument(b.handleProducerConnections))
	s.HandleFunc(protocol.QueryTopicConsumeByWho, b.instrument(b.handleTopicConsumedBy))
	s.HandleFunc(protocol.TideGetMetadata, b.instrument(b.handleMetadata)) // slave to master: not a client extension
	s.HandleFunc(protocol.GetBrokerRuntimeInfo, b.instrument(b.handleRuntimeInfo))
	s.HandleFunc(protocol.UpdateAndCreateACLConfig, b.instrument(b.handleUpdateACL))
	s.HandleFunc(protocol.GetBrokerClusterACLInfo, b.instrument(b.handleACLInfo))
	s.HandleFunc(protocol.DeleteACLConfig, b.instrument(b.handleDeleteACL))
	s.HandleFunc(protocol.UpdateGlobalWhiteAddrsConfig, b.instrument(b.handleUpdateGlobalWhite))
	if b.opts.TideExtensions { // else the server answers REQUEST_CODE_NOT_SUPPORTED, as RocketMQ does
		s.HandleFunc(protocol.TideListHalfMessages, b.instrument(b.handleListHalf))
		s.HandleFunc(protocol.TideResumeHalfCheck, b.instrument(b.handleResumeHalf))
		s.HandleFunc(protocol.TideForceEndTransaction, b.instrument(b.handleForceEnd))
		s.HandleFunc(protocol.TideRecallTimer, b.instrument(b.handleRecallTimer))
		s.HandleFunc(protocol.TideHAStatus, b.instrument(b.handleHAStatus))
		s.HandleFunc(protocol.TideInitProducerID, b.instrument(b.handleInitProducerID))
	}
}

// errorResponse logs a refused request and builds its response.
func (b *Broker) errorResponse(c *remoting.Conn, req *protocol.Command, code int16, format string, args ...any) *protocol.Command {
	remark := fmt.Sprintf(format, args...)
	b.log.Warn("request refused", "code", req.Code, "response", protocol.CodeName(code), "remark", remark, "conn", c.RemoteAddr())
	return protocol.NewResponse(req, code, remark)
}
