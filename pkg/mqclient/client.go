package mqclient

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Client is what every producer, consumer and admin of a process shares,
// as RocketMQ's MQClientInstance: one client id, the connections to the
// NameServers and brokers, the route cache with its refresh loop, the
// broker fault table, the message id generator, and one heartbeat that
// carries every producer and consumer group registered on it.
//
// Share one Client by giving WithClient(c) to NewProducer,
// NewTransactionProducer, NewPushConsumer, NewPullConsumer and NewAdmin.
// A member created without WithClient builds a private Client of its own
// (the behaviour before Client existed: its own connections and id).
// Sharing is explicit, not keyed on the client id as in RocketMQ's
// clients, where the first member's options silently win for all others.
//
// Lifecycle: the Client is reference-counted. Start takes the caller's
// reference and every member's Start takes one more; Shutdown and each
// member's Shutdown release theirs. The first reference starts the loops;
// releasing the last one stops them and closes every connection, and the
// Client cannot be started again (ErrClosed). A member's Shutdown does
// its own cleanup first (handlers, offsets, locks, UNREGISTER_CLIENT of
// its group once no other member of the Client uses the group) and never
// closes connections other members still use.
//
// One consumer group can have one PushConsumer per Client (a second one
// fails Start with ErrDuplicateGroup: the broker would see one member
// where there are two). Any number of producers may share a producer
// group. All methods are safe for concurrent use.
type Client struct {
	s        settings
	log      *slog.Logger
	rc       *remoting.Client
	clientID string
	ids      *protocol.UniqIDGenerator
	faults   faultTable
	private  bool // built by a member for itself (no WithClient)
	// unreachable: master addresses whose last send timed out or could
	// not be dialled, each until a send to it succeeds or sendTimeout
	// passed (Producer.awaitMaster)
	unreachable faultTable

	nsNext atomic.Uint32

	mu      sync.RWMutex
	routes  map[string]*route
	brokers map[string]map[int64]string // brokerName -> id -> address, from every cached route

	refreshMu sync.Mutex
	refreshes map[string]*topicRefresh // on-demand route refreshes, per topic
	downBusy  atomic.Bool              // a brokerDown refresh is running
	downMu    sync.Mutex               // orders brokerDown's wg.Add before close's wg.Wait
	downStop  bool                     // close began: no more brokerDown refreshes

	lifeMu  sync.Mutex
	refs    int  // running members plus the Start/Shutdown reference
	held    bool // Start's reference is taken
	started bool
	closed  bool

	reg members // the groups heartbeats carry (members.go)

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// route is a topic's route with the queue lists derived from it.
type route struct {
	data *protocol.TopicRouteData
	pub  []Queue // writable queues of brokers with a master
	sub  []Queue // readable queues
	// next is the topic's round-robin position among pub. Per topic, as
	// in RocketMQ's clients: one counter shared by all topics sends a
	// producer cycling over N topics (N a multiple of the queue count) to
	// a single queue of each.
	next atomic.Uint64
}

// NewClient returns a Client configured by opts: WithNameServers is
// required; the options that apply are those marked "All clients"
// (NameServers, logger, instance name, client IP, credentials, TLS,
// request timeout, route refresh and heartbeat intervals). It does not
// connect until the first Start.
func NewClient(opts ...Option) (*Client, error) {
	s := defaultSettings()
	for _, o := range opts {
		o(&s)
	}
	s.client = nil
	if err := s.validate(); err != nil {
		return nil, err
	}
	return newClient(s), nil
}

func newClient(s settings) *Client {
	ip := s.clientIP
	if ip == "" {
		ip = localIPv4()
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	inst := s.instanceName
	if inst == "" {
		inst = strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(rnd[:])
	}
	addr, _ := netip.ParseAddr(ip)
	c := &Client{
		s:        s,
		log:      s.logger,
		rc:       remoting.NewClient(s.remotingOptions()),
		clientID: ip + "@" + inst,
		ids:      protocol.NewUniqIDGenerator(addr, os.Getpid(), binary.BigEndian.Uint32(rnd[:])),
		routes:   map[string]*route{},
		brokers:  map[string]map[int64]string{},
		stop:     make(chan struct{}),

		refreshes: map[string]*topicRefresh{},
	}
	c.faults.init()
	c.unreachable.init()
	c.reg.init()
	c.rc.HandleFunc(protocol.NotifyConsumerIDsChanged, c.handleConsumerIDsChanged)
	c.rc.HandleFunc(protocol.CheckTransactionState, c.handleCheck)
	c.rc.OnDisconnect(c.disconnected)
	return c
}

// ClientID returns the id ("ip@instance") the Client presents to brokers
// for all its members.
func (c *Client) ClientID() string { return c.clientID }

// Start takes the caller's reference to the Client and starts its route
// refresh and heartbeat loops if no member has. It does not block. It
// fails with ErrStarted when the caller's reference is already held and
// with ErrClosed once the Client was closed.
func (c *Client) Start(ctx context.Context) error {
	c.lifeMu.Lock()
	if c.held {
		c.lifeMu.Unlock()
		return ErrStarted
	}
	c.lifeMu.Unlock()
	if err := c.acquire(); err != nil {
		return err
	}
	c.lifeMu.Lock()
	c.held = true
	c.lifeMu.Unlock()
	return nil
}

// Shutdown releases the caller's reference (taken by Start). When no
// member is running either, it stops the loops and closes every
// connection before it returns; otherwise that happens when the last
// member shuts down. A Client that was never started is closed at once.
// It does not shut members down. Safe to call more than once.
func (c *Client) Shutdown(ctx context.Context) error {
	c.lifeMu.Lock()
	held := c.held
	c.held = false
	c.lifeMu.Unlock()
	if held {
		c.release()
	} else {
		c.closeIfIdle()
	}
	return nil
}

// acquire takes a reference; the first one starts the loops.
func (c *Client) acquire() error {
	c.lifeMu.Lock()
	defer c.lifeMu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.refs++
	if !c.started {
		c.started = true
		c.start()
	}
	return nil
}

// join starts a member whose lifecycle state is state: new -> running,
// with a reference to the Client. ErrStarted if it was not new; ErrClosed
// (and the member closed) if the Client was.
func (c *Client) join(state *atomic.Int32) error {
	if !state.CompareAndSwap(stateNew, stateRunning) {
		return ErrStarted
	}
	if err := c.acquire(); err != nil {
		state.Store(stateClosed)
		return err
	}
	return nil
}

// leave ends a member that has nothing to clean up: a running one drops
// its reference, a never-started one closes its private Client.
func (c *Client) leave(state *atomic.Int32) {
	switch state.Swap(stateClosed) {
	case stateRunning:
		c.release()
	case stateNew:
		if c.private {
			c.closeIfIdle()
		}
	}
}

// release drops a reference taken by acquire; the last one closes the
// Client.
func (c *Client) release() {
	c.lifeMu.Lock()
	c.refs--
	last := c.refs == 0 && !c.closed
	if last {
		c.closed = true
	}
	c.lifeMu.Unlock()
	if last {
		c.close()
	}
}

// closeIfIdle closes a Client nobody holds (a member shut down before it
// started, or a Client shut down before any Start).
func (c *Client) closeIfIdle() {
	c.lifeMu.Lock()
	idle := c.refs == 0 && !c.closed
	if idle {
		c.closed = true
	}
	c.lifeMu.Unlock()
	if idle {
		c.close()
	}
}

// localIPv4 returns the first non-loopback IPv4 address, or 127.0.0.1.
func localIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() {
				if v4 := n.IP.To4(); v4 != nil {
					return v4.String()
				}
			}
		}
	}
	return "127.0.0.1"
}

// start launches the route refresh and heartbeat loops.
func (c *Client) start() {
	c.wg.Add(1)
	go c.loop(c.s.routeRefresh, c.refreshRoutes)
	c.wg.Add(1)
	go c.loop(c.s.heartbeatInterval, c.sendHeartbeats)
}

func (c *Client) loop(every time.Duration, f func(context.Context)) {
	defer c.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			ctx, cancel := c.ctx()
			f(ctx)
			cancel()
		}
	}
}

// ctx returns a context cancelled when the Client closes.
func (c *Client) ctx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// close stops the loops and closes every connection.
func (c *Client) close() {
	c.stopOnce.Do(func() { close(c.stop) })
	c.downMu.Lock()
	c.downStop = true
	c.downMu.Unlock()
	c.wg.Wait()
	c.rc.Close()
}

// heartbeatAsync sends a heartbeat round in the background. The caller
// holds a reference (acquire), so the Client is not closing yet.
func (c *Client) heartbeatAsync() {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := c.ctx()
		defer cancel()
		c.sendHeartbeats(ctx)
	}()
}

// invoke sends req to addr and waits at most timeout (or ctx) for the
// response. A REQUEST_CODE_NOT_SUPPORTED answer becomes ErrNotSupported.
func (c *Client) invoke(ctx context.Context, addr string, req *protocol.Command, timeout time.Duration) (*protocol.Command, error) {
	// InvokeTimeout, not a derived context: a context, a timer and a
	// channel per request counted on the send path.
	resp, err := c.rc.InvokeTimeout(ctx, addr, req, timeout)
	if err != nil {
		if errors.Is(err, remoting.ErrDial) || errors.Is(err, remoting.ErrClosed) || errors.Is(err, remoting.ErrTimeout) {
			c.brokerDown(addr)
		}
		return nil, err
	}
	if resp.Code == protocol.RequestCodeNotSupported {
		return resp, fmt.Errorf("%w: code %d at %s: %w", ErrNotSupported, req.Code, addr, resp.Err())
	}
	return resp, nil
}

// invokeNS sends req to the NameServers in turn, starting after the last
// one used, until one answers.
func (c *Client) invokeNS(ctx context.Context, req *protocol.Command) (*protocol.Command, error) {
	ns := c.s.nameServers
	start := int(c.nsNext.Load())
	var errs []error
	for i := range ns {
		addr := ns[(start+i)%len(ns)]
		resp, err := c.invoke(ctx, addr, req, c.s.requestTimeout)
		if err == nil {
			c.nsNext.Store(uint32((start + i) % len(ns)))
			return resp, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("%w: %w", ErrNoNameServer, errors.Join(errs...))
}

// queryRoute asks the NameServers for topic's route.
func (c *Client) queryRoute(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	h := protocol.GetRouteInfoRequestHeader{Topic: topic}
	resp, err := c.invokeNS(ctx, protocol.NewRequest(protocol.GetRouteInfoByTopic, h.Encode(), nil))
	if err != nil {
		return nil, err
	}
	switch resp.Code {
	case protocol.Success:
	case protocol.TopicNotExist:
		return nil, fmt.Errorf("%w: %s: %w", ErrTopicNotFound, topic, resp.Err())
	default:
		return nil, fmt.Errorf("mqclient: route of %s: %w", topic, resp.Err())
	}
	if len(resp.Body) == 0 {
		return nil, fmt.Errorf("%w: %s: empty route", ErrTopicNotFound, topic)
	}
	return protocol.DecodeTopicRouteData(resp.Body)
}

// newRoute derives the queue lists of a route. maxQueues > 0 caps each
// broker's queues (used for the auto-creation template).
func newRoute(topic string, d *protocol.TopicRouteData, maxQueues int32) *route {
	r := &route{data: d}
	masters := map[string]bool{}
	for _, b := range d.BrokerDatas {
		if _, ok := b.BrokerAddrs[protocol.MasterID]; ok {
			masters[b.BrokerName] = true
		}
	}
	for _, q := range d.QueueDatas {
		w, rd := q.WriteQueueNums, q.ReadQueueNums
		if maxQueues > 0 {
			w, rd = min(w, maxQueues), min(rd, maxQueues)
		}
		if protocol.PermWritable(q.Perm) && masters[q.BrokerName] {
			for i := int32(0); i < w; i++ {
				r.pub = append(r.pub, Queue{Topic: topic, BrokerName: q.BrokerName, QueueID: i})
			}
		}
		if protocol.PermReadable(q.Perm) {
			for i := int32(0); i < rd; i++ {
				r.sub = append(r.sub, Queue{Topic: topic, BrokerName: q.BrokerName, QueueID: i})
			}
		}
	}
	protocol.SortMessageQueues(r.pub)
	protocol.SortMessageQueues(r.sub)
	return r
}

// updateRoute fetches topic's route and caches it. With autoCreate, a
// topic unknown to the NameServers gets the route of the auto-creation
// template, so the first send creates it.
func (c *Client) updateRoute(ctx context.Context, topic string, autoCreate bool) (*route, error) {
	d, err := c.queryRoute(ctx, topic)
	var r *route
	switch {
	case err == nil:
		r = newRoute(topic, d, 0)
	case autoCreate && errors.Is(err, ErrTopicNotFound):
		td, terr := c.queryRoute(ctx, protocol.DefaultTopicTemplate)
		if terr != nil {
			return nil, err
		}
		r = newRoute(topic, td, protocol.DefaultTopicQueueNums)
		if len(r.pub) == 0 {
			return nil, err
		}
		// Not cached: the next send asks again and finds the created topic.
		c.addBrokers(td)
		return r, nil
	default:
		return nil, err
	}
	c.mu.Lock()
	c.routes[topic] = r
	c.mu.Unlock()
	c.addBrokers(d)
	return r, nil
}

// addBrokers records the broker addresses of a route. A broker address
// seen for the first time gets a heartbeat at once, so that it knows the
// client's groups before the first pull or transaction check. Only those:
// this runs on the send path (a route refreshed after a failed send), and
// a heartbeat to a dead master the route still lists would hold the send
// for a whole request timeout (a failover's route changes did exactly
// that, before the new master was tried).
func (c *Client) addBrokers(d *protocol.TopicRouteData) {
	c.mu.Lock()
	fresh := map[string]bool{}
	for _, b := range d.BrokerDatas {
		m := make(map[int64]string, len(b.BrokerAddrs))
		for id, a := range b.BrokerAddrs {
			m[id] = a
			if old, ok := c.brokers[b.BrokerName]; !ok || old[id] != a {
				fresh[a] = true
			}
		}
		c.brokers[b.BrokerName] = m
	}
	c.mu.Unlock()
	if len(fresh) > 0 && c.reg.any() {
		select {
		case <-c.stop:
		default:
			ctx, cancel := c.ctx()
			c.heartbeatTo(ctx, fresh)
			cancel()
		}
	}
}

// route returns topic's cached route, fetching it when absent.
func (c *Client) route(ctx context.Context, topic string, autoCreate bool) (*route, error) {
	c.mu.RLock()
	r := c.routes[topic]
	c.mu.RUnlock()
	if r != nil {
		return r, nil
	}
	return c.updateRoute(ctx, topic, autoCreate)
}

// topicRefresh throttles the on-demand refreshes of one topic's route.
type topicRefresh struct {
	sem  chan struct{} // held while one caller fetches; the others wait for it
	last time.Time     // when the last on-demand fetch started
}

// refreshRoute re-fetches topic's route now, because a caller found it
// stale: no writable queue, a broker that cannot be dialled or closed its
// connection, TOPIC_NOT_EXIST, an unknown broker address. It is the one
// place where such a failure turns into a fresh route; the periodic
// refresh (WithRouteRefreshInterval) is only the backstop.
//
// Fetches of one topic are serialised and throttled: at most one per
// settings.routeRetryGap (300 ms), so that a burst of failing sends costs
// the NameServers one query, not one per send. A caller that arrives while
// another fetches waits for that fetch and gets its result; a caller
// within the gap gets the cached route (nil with ErrTopicNotFound when
// there is none). Errors leave the cached route as it was.
func (c *Client) refreshRoute(ctx context.Context, topic string) (*route, error) {
	c.refreshMu.Lock()
	tr := c.refreshes[topic]
	if tr == nil {
		tr = &topicRefresh{sem: make(chan struct{}, 1)}
		c.refreshes[topic] = tr
	}
	c.refreshMu.Unlock()
	select {
	case tr.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-tr.sem }()
	if time.Since(tr.last) < c.s.routeRetryGap {
		c.mu.RLock()
		r := c.routes[topic]
		c.mu.RUnlock()
		if r == nil {
			return nil, fmt.Errorf("%w: %s: route refreshed less than %v ago", ErrTopicNotFound, topic, c.s.routeRetryGap)
		}
		return r, nil
	}
	tr.last = time.Now()
	r, err := c.updateRoute(ctx, topic, false)
	if err != nil {
		c.log.Debug("mqclient: route refresh on failure", "topic", topic, "err", err)
		return nil, err
	}
	return r, nil
}

// brokerDown is told that a request to addr got no answer (dial refused,
// connection closed, timeout): the broker may be dead and another one
// promoted in its place (controller mode) or about to be. It refreshes, in
// the background, the routes that name addr, each through refreshRoute's
// throttle, so that pulls, offset commits, lock renewals and check-back
// answers, which have no retry loop of their own as sends do, find the new
// master as soon as the NameServers list it instead of at the next
// periodic refresh (30 s by default). One such refresh runs at a time per
// client; failures in the meantime are covered by the next one.
func (c *Client) brokerDown(addr string) {
	c.mu.RLock()
	var topics []string
	for t, r := range c.routes {
		if routeNames(r.data, addr) {
			topics = append(topics, t)
		}
	}
	c.mu.RUnlock()
	if len(topics) == 0 || !c.downBusy.CompareAndSwap(false, true) {
		return
	}
	c.downMu.Lock()
	defer c.downMu.Unlock()
	if c.downStop {
		c.downBusy.Store(false)
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.downBusy.Store(false)
		ctx, cancel := c.ctx()
		defer cancel()
		for _, t := range topics {
			if _, err := c.refreshRoute(ctx, t); err != nil && ctx.Err() != nil {
				return
			}
		}
	}()
}

// routeNames reports whether d lists addr as one of its brokers.
func routeNames(d *protocol.TopicRouteData, addr string) bool {
	if d == nil {
		return false
	}
	for _, b := range d.BrokerDatas {
		for _, a := range b.BrokerAddrs {
			if a == addr {
				return true
			}
		}
	}
	return false
}

// refreshRoutes re-fetches every cached route; failures keep the old one.
func (c *Client) refreshRoutes(ctx context.Context) {
	c.mu.RLock()
	topics := make([]string, 0, len(c.routes))
	for t := range c.routes {
		topics = append(topics, t)
	}
	c.mu.RUnlock()
	for _, t := range topics {
		if _, err := c.updateRoute(ctx, t, false); err != nil {
			c.log.Debug("mqclient: route refresh", "topic", t, "err", err)
		}
	}
}

// brokerAddr returns the address of broker id of brokerName; when that id
// is unknown it falls back to the master, then to any address.
func (c *Client) brokerAddr(brokerName string, id int64) (string, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	m := c.brokers[brokerName]
	if a, ok := m[id]; ok {
		return a, nil
	}
	if a, ok := m[protocol.MasterID]; ok {
		return a, nil
	}
	for _, a := range m {
		return a, nil
	}
	return "", fmt.Errorf("%w: %s", ErrBrokerNotFound, brokerName)
}

// cachedMasterAddr returns the known master address of brokerName.
// cachedRoute returns topic's cached route, nil when none was fetched.
func (c *Client) cachedRoute(topic string) *route {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.routes[topic]
}

func (c *Client) cachedMasterAddr(brokerName string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	a, ok := c.brokers[brokerName][protocol.MasterID]
	return a, ok
}

// masterAddr returns the master of brokerName, refreshing topic's route
// once when it is unknown.
func (c *Client) masterAddr(ctx context.Context, brokerName, topic string) (string, error) {
	c.mu.RLock()
	a, ok := c.brokers[brokerName][protocol.MasterID]
	c.mu.RUnlock()
	if ok {
		return a, nil
	}
	if topic != "" {
		if _, err := c.refreshRoute(ctx, topic); err == nil {
			c.mu.RLock()
			a, ok = c.brokers[brokerName][protocol.MasterID]
			c.mu.RUnlock()
			if ok {
				return a, nil
			}
		}
	}
	return "", fmt.Errorf("%w: master of %s", ErrBrokerNotFound, brokerName)
}

// sendHeartbeats sends the heartbeat of every group registered on the
// Client to every known broker address (masters only when it has no
// consumers) but those a send just found unreachable.
func (c *Client) sendHeartbeats(ctx context.Context) { c.heartbeatTo(ctx, nil) }

// heartbeatTo is sendHeartbeats limited to the addresses in only (nil:
// all).
func (c *Client) heartbeatTo(ctx context.Context, only map[string]bool) {
	hb := c.heartbeatData()
	if hb == nil {
		return
	}
	body := hb.Encode()
	c.mu.RLock()
	var addrs []string
	for _, m := range c.brokers {
		for id, a := range m {
			if (id == protocol.MasterID || len(hb.ConsumerDataSet) > 0) && (only == nil || only[a]) {
				addrs = append(addrs, a)
			}
		}
	}
	c.mu.RUnlock()
	for _, a := range addrs {
		if !c.unreachable.available(a) {
			continue // a master whose send just timed out: the next round
		}
		resp, err := c.invoke(ctx, a, protocol.NewRequest(protocol.HeartBeat, nil, body), c.s.requestTimeout)
		if err == nil {
			err = resp.Err()
		}
		if err != nil {
			c.log.Debug("mqclient: heartbeat", "broker", a, "err", err)
		}
	}
}

// unregister tells every known master that this client's groups are gone
// (UNREGISTER_CLIENT), so that the broker rebalances other members without
// waiting for the connection to close. Errors are ignored.
func (c *Client) unregister(ctx context.Context, producerGroup, consumerGroup string) {
	c.mu.RLock()
	var addrs []string
	for _, m := range c.brokers {
		if a, ok := m[protocol.MasterID]; ok {
			addrs = append(addrs, a)
		}
	}
	c.mu.RUnlock()
	h := protocol.UnregisterClientRequestHeader{ClientID: c.clientID, ProducerGroup: producerGroup, ConsumerGroup: consumerGroup}
	for _, a := range addrs {
		if ctx.Err() != nil {
			return
		}
		if _, err := c.invoke(ctx, a, protocol.NewRequest(protocol.UnregisterClient, h.Encode(), nil), c.s.requestTimeout); err != nil {
			c.log.Debug("mqclient: unregister", "broker", a, "err", err)
		}
	}
}
