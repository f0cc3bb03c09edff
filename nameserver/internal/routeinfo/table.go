// Package routeinfo is the NameServer's in-memory route table: which
// clusters exist, which logical brokers (a master and its slaves) belong to
// them, at which addresses, which topics each broker serves with how many
// queues, and when each broker address last registered.
//
// The table has no persistence: brokers re-register every 30 s, so a
// restarted NameServer is complete again after one registration period.
// Entries leave the table when a broker unregisters, when the connection it
// registered on closes, or when it has been silent longer than the expiry
// (Table.Expire, called periodically by the NameServer).
//
// The rules follow the Java RouteInfoManager of RocketMQ 4.9.x (see
// rocketmq-protocol.md §3.1, §3.2).
package routeinfo

import (
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// DefaultBrokerExpiry is how long a broker address may stay silent before
// Expire removes it (Java BROKER_CHANNEL_EXPIRED_TIME).
const DefaultBrokerExpiry = 120 * time.Second

// Options configures a Table. The zero value is valid.
type Options struct {
	// Now returns the current time. Default time.Now; tests inject a fake
	// clock to drive expiry.
	Now func() time.Time
	// BrokerExpiry is the silence after which Expire removes a broker
	// address. Default DefaultBrokerExpiry.
	BrokerExpiry time.Duration
	// Logger receives register, unregister and expire events. Default
	// slog.Default().
	Logger *slog.Logger
}

// Registration is one REGISTER_BROKER request, decoded.
type Registration struct {
	ClusterName  string
	BrokerName   string
	BrokerAddr   string
	HAServerAddr string
	BrokerID     int64
	// ConnID identifies the connection the registration arrived on; when
	// it closes, RemoveConn drops the broker address. 0 means none.
	ConnID uint64
	// Topics is the broker's topic table and its version; nil when the
	// request carried none.
	Topics        *protocol.TopicConfigSerializeWrapper
	FilterServers []string
}

// RegisterResult is what a registering slave learns about its master. Both
// fields are empty for masters and for slaves whose master is not live.
type RegisterResult struct {
	MasterAddr   string
	HAServerAddr string
}

// LiveBroker describes one registered broker address.
type LiveBroker struct {
	Addr         string
	LastUpdate   time.Time
	DataVersion  protocol.DataVersion
	ConnID       uint64
	HAServerAddr string
}

type liveBroker struct {
	lastUpdate   time.Time
	version      protocol.DataVersion
	connID       uint64
	haServerAddr string
}

// Table is the route table. It is safe for concurrent use: lookups take a
// read lock, changes a write lock. Every value it returns is a copy the
// caller owns.
type Table struct {
	now    func() time.Time
	expiry time.Duration
	log    *slog.Logger

	mu       sync.RWMutex
	topics   map[string]map[string]protocol.QueueData // topic -> brokerName -> queues
	brokers  map[string]*protocol.BrokerData          // brokerName -> cluster and id -> addr
	clusters map[string]map[string]struct{}           // cluster -> brokerNames
	live     map[string]*liveBroker                   // brokerAddr -> liveness
	filters  map[string][]string                      // brokerAddr -> filter servers
}

// New returns an empty table.
func New(opts Options) *Table {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.BrokerExpiry <= 0 {
		opts.BrokerExpiry = DefaultBrokerExpiry
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Table{
		now:      opts.Now,
		expiry:   opts.BrokerExpiry,
		log:      opts.Logger,
		topics:   map[string]map[string]protocol.QueueData{},
		brokers:  map[string]*protocol.BrokerData{},
		clusters: map[string]map[string]struct{}{},
		live:     map[string]*liveBroker{},
		filters:  map[string][]string{},
	}
}

// Register records a broker registration:
//
//   - the broker name joins its cluster and id -> address is set (any other
//     id mapped to the same address is dropped: a slave became master);
//   - if the sender is the master (id 0) and this is its first registration
//     or its DataVersion differs from the stored one, one QueueData per
//     topic in r.Topics is written for this broker name. Topics missing from
//     r.Topics are kept, as in Java: brokers send single-topic increments
//     after creating a topic, and deletions go through DeleteTopic;
//   - the address's last-update time, DataVersion, connection and HA
//     address are recorded.
//
// A slave learns its master's address and HA address from the result.
func (t *Table) Register(r Registration) RegisterResult {
	t.mu.Lock()
	defer t.mu.Unlock()

	names := t.clusters[r.ClusterName]
	if names == nil {
		names = map[string]struct{}{}
		t.clusters[r.ClusterName] = names
	}
	names[r.BrokerName] = struct{}{}

	first := false
	bd := t.brokers[r.BrokerName]
	if bd == nil {
		first = true
		bd = &protocol.BrokerData{Cluster: r.ClusterName, BrokerName: r.BrokerName, BrokerAddrs: map[int64]string{}}
		t.brokers[r.BrokerName] = bd
	}
	for id, addr := range bd.BrokerAddrs {
		if addr == r.BrokerAddr && id != r.BrokerID {
			delete(bd.BrokerAddrs, id)
		}
	}
	if _, ok := bd.BrokerAddrs[r.BrokerID]; !ok {
		first = true
	}
	bd.BrokerAddrs[r.BrokerID] = r.BrokerAddr

	prev := t.live[r.BrokerAddr]
	var version protocol.DataVersion
	if r.Topics != nil {
		version = r.Topics.DataVersion
	} else if prev != nil {
		version = prev.version
	}
	topicsChanged := false
	if r.Topics != nil && r.BrokerID == protocol.MasterID && (first || prev == nil || prev.version != version) {
		topicsChanged = true
		for name, tc := range r.Topics.TopicConfigTable {
			if tc.TopicName == "" {
				tc.TopicName = name
			}
			t.putQueueData(r.BrokerName, tc)
		}
	}

	t.live[r.BrokerAddr] = &liveBroker{
		lastUpdate:   t.now(),
		version:      version,
		connID:       r.ConnID,
		haServerAddr: r.HAServerAddr,
	}
	if len(r.FilterServers) > 0 {
		t.filters[r.BrokerAddr] = slices.Clone(r.FilterServers)
	} else {
		delete(t.filters, r.BrokerAddr)
	}

	var res RegisterResult
	if r.BrokerID != protocol.MasterID {
		if master, ok := bd.BrokerAddrs[protocol.MasterID]; ok {
			if ml := t.live[master]; ml != nil {
				res = RegisterResult{MasterAddr: master, HAServerAddr: ml.haServerAddr}
			}
		}
	}

	attrs := []any{"cluster", r.ClusterName, "broker", r.BrokerName, "id", r.BrokerID, "addr", r.BrokerAddr,
		"topics", topicCount(r.Topics), "dataVersion", version.Counter}
	switch {
	case first || prev == nil:
		t.log.Info("broker registered", attrs...)
	case topicsChanged:
		t.log.Info("broker topics changed", attrs...)
	default:
		t.log.Debug("broker heartbeat", attrs...)
	}
	return res
}

func topicCount(w *protocol.TopicConfigSerializeWrapper) int {
	if w == nil {
		return 0
	}
	return len(w.TopicConfigTable)
}

func (t *Table) putQueueData(brokerName string, tc protocol.TopicConfig) {
	qd := protocol.QueueData{
		BrokerName:     brokerName,
		ReadQueueNums:  tc.ReadQueueNums,
		WriteQueueNums: tc.WriteQueueNums,
		Perm:           tc.Perm,
		TopicSysFlag:   tc.TopicSysFlag,
	}
	m := t.topics[tc.TopicName]
	if m == nil {
		m = map[string]protocol.QueueData{}
		t.topics[tc.TopicName] = m
	}
	if old, ok := m[brokerName]; !ok || old != qd {
		t.log.Debug("queue data updated", "topic", tc.TopicName, "broker", brokerName,
			"read", qd.ReadQueueNums, "write", qd.WriteQueueNums, "perm", protocol.PermString(qd.Perm))
	}
	m[brokerName] = qd
}

// Unregister removes broker id brokerID of brokerName (if it still maps to
// brokerAddr) and the address's liveness. When the broker name has no address left, it leaves its
// cluster and all its queue data is dropped. Unknown names are ignored.
func (t *Table) Unregister(clusterName, brokerName, brokerAddr string, brokerID int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.live, brokerAddr)
	delete(t.filters, brokerAddr)
	bd := t.brokers[brokerName]
	if bd != nil {
		// Only if the id still maps to this address: a late unregister must
		// not remove a broker that has since taken over the id.
		if addr, ok := bd.BrokerAddrs[brokerID]; ok && addr == brokerAddr {
			delete(bd.BrokerAddrs, brokerID)
		}
	}
	t.log.Info("broker unregistered", "cluster", clusterName, "broker", brokerName, "id", brokerID, "addr", brokerAddr)
	if bd != nil && len(bd.BrokerAddrs) == 0 {
		t.removeBrokerNameLocked(brokerName)
	}
}

// removeBrokerNameLocked drops a broker name from the broker table, from
// every cluster and from every topic. Topics left without queue data are
// removed.
func (t *Table) removeBrokerNameLocked(brokerName string) {
	delete(t.brokers, brokerName)
	for cluster, names := range t.clusters {
		delete(names, brokerName)
		if len(names) == 0 {
			delete(t.clusters, cluster)
		}
	}
	for topic, m := range t.topics {
		delete(m, brokerName)
		if len(m) == 0 {
			delete(t.topics, topic)
		}
	}
	t.log.Info("broker name removed with its routes", "broker", brokerName)
}

// removeAddrLocked drops a broker address everywhere: liveness and every
// id that maps to it (Java onChannelDestroy).
func (t *Table) removeAddrLocked(addr string) {
	delete(t.live, addr)
	delete(t.filters, addr)
	for name, bd := range t.brokers {
		for id, a := range bd.BrokerAddrs {
			if a == addr {
				delete(bd.BrokerAddrs, id)
			}
		}
		if len(bd.BrokerAddrs) == 0 {
			t.removeBrokerNameLocked(name)
		}
	}
}

// RemoveConn drops every broker address whose latest registration arrived
// on connection connID and returns those addresses. A broker that
// re-registered on a newer connection is not affected by the old one
// closing.
func (t *Table) RemoveConn(connID uint64) []string {
	if connID == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var removed []string
	for addr, lb := range t.live {
		if lb.connID == connID {
			removed = append(removed, addr)
		}
	}
	sort.Strings(removed)
	for _, addr := range removed {
		t.removeAddrLocked(addr)
		t.log.Info("broker connection closed, broker removed", "addr", addr, "conn", connID)
	}
	return removed
}

// Expire removes every broker address silent for longer than the expiry
// and returns them with the connections they registered on, so that the
// caller can close those.
func (t *Table) Expire() []LiveBroker {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	var expired []LiveBroker
	for addr, lb := range t.live {
		if now.Sub(lb.lastUpdate) > t.expiry {
			expired = append(expired, LiveBroker{Addr: addr, LastUpdate: lb.lastUpdate, DataVersion: lb.version, ConnID: lb.connID, HAServerAddr: lb.haServerAddr})
		}
	}
	sort.Slice(expired, func(i, j int) bool { return expired[i].Addr < expired[j].Addr })
	for _, e := range expired {
		t.removeAddrLocked(e.Addr)
		t.log.Info("broker expired", "addr", e.Addr, "silentFor", now.Sub(e.LastUpdate).Round(time.Millisecond))
	}
	return expired
}

// QueryDataVersion compares a broker's current DataVersion with the stored
// one. changed is true when they differ or nothing is stored; when they
// are equal the address's last-update time is refreshed, as the broker
// then skips its registration. stored is nil when the address is unknown.
func (t *Table) QueryDataVersion(brokerAddr string, v protocol.DataVersion) (changed bool, stored *protocol.DataVersion) {
	t.mu.Lock()
	defer t.mu.Unlock()
	lb := t.live[brokerAddr]
	if lb == nil {
		return true, nil
	}
	sv := lb.version
	if sv == v {
		lb.lastUpdate = t.now()
		return false, &sv
	}
	return true, &sv
}

// Route returns the route of topic, or false when the topic has no queue
// data or none of its brokers is registered. Queue and broker data are
// sorted by broker name, so that equal tables give equal routes.
func (t *Table) Route(topic string) (*protocol.TopicRouteData, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	m := t.topics[topic]
	if len(m) == 0 {
		return nil, false
	}
	r := &protocol.TopicRouteData{FilterServerTable: map[string][]string{}}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r.QueueDatas = append(r.QueueDatas, m[name])
		bd := t.brokers[name]
		if bd == nil {
			continue
		}
		r.BrokerDatas = append(r.BrokerDatas, bd.Clone())
		for _, addr := range bd.BrokerAddrs {
			if fs := t.filters[addr]; len(fs) > 0 {
				r.FilterServerTable[addr] = slices.Clone(fs)
			}
		}
	}
	if len(r.BrokerDatas) == 0 {
		return nil, false
	}
	return r, true
}

// ClusterInfo returns every broker and cluster.
func (t *Table) ClusterInfo() *protocol.ClusterInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ci := &protocol.ClusterInfo{
		BrokerAddrTable:  make(map[string]protocol.BrokerData, len(t.brokers)),
		ClusterAddrTable: make(map[string][]string, len(t.clusters)),
	}
	for name, bd := range t.brokers {
		ci.BrokerAddrTable[name] = bd.Clone()
	}
	for cluster, names := range t.clusters {
		ci.ClusterAddrTable[cluster] = sortedKeys(names)
	}
	return ci
}

// Topics returns every topic name, sorted.
func (t *Table) Topics() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return sortedKeys(t.topics)
}

// TopicsByCluster returns, sorted, the topics served by at least one broker
// of the cluster.
func (t *Table) TopicsByCluster(cluster string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	names := t.clusters[cluster]
	var out []string
	for topic, m := range t.topics {
		for name := range m {
			if _, ok := names[name]; ok {
				out = append(out, topic)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// DeleteTopic removes a topic's queue data: all of it, or with cluster set
// only that of the cluster's brokers. It reports whether anything was
// removed.
func (t *Table) DeleteTopic(topic, cluster string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.topics[topic]
	if m == nil {
		return false
	}
	if cluster == "" {
		delete(t.topics, topic)
		t.log.Info("topic deleted", "topic", topic)
		return true
	}
	removed := false
	for name := range t.clusters[cluster] {
		if _, ok := m[name]; ok {
			delete(m, name)
			removed = true
		}
	}
	if len(m) == 0 {
		delete(t.topics, topic)
	}
	if removed {
		t.log.Info("topic deleted from cluster", "topic", topic, "cluster", cluster)
	}
	return removed
}

// LiveBrokers returns every registered broker address, sorted by address.
func (t *Table) LiveBrokers() []LiveBroker {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]LiveBroker, 0, len(t.live))
	for addr, lb := range t.live {
		out = append(out, LiveBroker{Addr: addr, LastUpdate: lb.lastUpdate, DataVersion: lb.version, ConnID: lb.connID, HAServerAddr: lb.haServerAddr})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
