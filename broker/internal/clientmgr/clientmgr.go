// Package clientmgr tracks the producers and consumers connected to the
// broker, from their heartbeats: consumer groups with their members and
// their group-wide subscription table, producer groups with the channels
// used for transaction check-back and reply push. A member disappears when
// its connection closes or after ChannelExpiry without a heartbeat.
package clientmgr

import (
	"sort"
	"sync"
	"time"
)

// ChannelExpiry is how long a client stays registered without a heartbeat
// (RocketMQ's CHANNEL_EXPIRED_TIMEOUT).
const ChannelExpiry = 120 * time.Second

// Channel is a client connection. The broker passes its transport
// connection; the manager only needs a stable id.
type Channel interface {
	ID() uint64
}

// Subscription is one topic subscription of a consumer group.
type Subscription struct {
	Topic          string
	Expression     string // "*" or "TagA || TagB" or an SQL92 expression
	ExpressionType string // "TAG" or "SQL92"
	Tags           []string
	Codes          []int64
	SubVersion     int64
}

// Consumer is what one heartbeat says about one consumer group.
type Consumer struct {
	Group            string
	ConsumeType      string // CONSUME_PASSIVELY (push) or CONSUME_ACTIVELY (pull)
	MessageModel     string // CLUSTERING or BROADCASTING
	ConsumeFromWhere string
	Subscriptions    []Subscription
}

// Member is one connected client of a group.
type Member struct {
	ClientID string
	Channel  Channel
	LastSeen time.Time
	Language string
	Version  int32
}

type consumerGroup struct {
	info    Consumer
	members map[uint64]*Member
	subs    map[string]Subscription // topic -> subscription, group-wide
}

type producerGroup struct {
	members map[uint64]*Member
}

// chanGroups is the groups one channel is a member of: the reverse index
// that lets RemoveChannel visit only those groups instead of every group.
type chanGroups struct {
	consumers map[string]struct{}
	producers map[string]struct{}
}

// Manager is the client table. It is safe for concurrent use.
type Manager struct {
	now func() time.Time

	mu        sync.RWMutex
	consumers map[string]*consumerGroup
	producers map[string]*producerGroup
	byChan    map[uint64]*chanGroups // channel id -> its groups; kept in step with the members maps
}

// New returns an empty manager; now may be nil (time.Now).
func New(now func() time.Time) *Manager {
	if now == nil {
		now = time.Now
	}
	return &Manager{now: now, consumers: map[string]*consumerGroup{}, producers: map[string]*producerGroup{},
		byChan: map[uint64]*chanGroups{}}
}

// link records that channel id joined a consumer (or producer) group.
// Caller holds m.mu.
func (m *Manager) link(id uint64, group string, consumer bool) {
	cg := m.byChan[id]
	if cg == nil {
		cg = &chanGroups{}
		m.byChan[id] = cg
	}
	set := &cg.producers
	if consumer {
		set = &cg.consumers
	}
	if *set == nil {
		*set = map[string]struct{}{}
	}
	(*set)[group] = struct{}{}
}

// unlink records that channel id left a consumer (or producer) group.
// Caller holds m.mu.
func (m *Manager) unlink(id uint64, group string, consumer bool) {
	cg := m.byChan[id]
	if cg == nil {
		return
	}
	if consumer {
		delete(cg.consumers, group)
	} else {
		delete(cg.producers, group)
	}
	if len(cg.consumers) == 0 && len(cg.producers) == 0 {
		delete(m.byChan, id)
	}
}

// removeProducer drops a member from a producer group, and the group with
// its last member. Caller holds m.mu.
func (m *Manager) removeProducer(name string, g *producerGroup, id uint64) {
	delete(g.members, id)
	m.unlink(id, name, false)
	if len(g.members) == 0 {
		delete(m.producers, name)
	}
}

// ClientInfo identifies the sender of a heartbeat.
type ClientInfo struct {
	ClientID string
	Channel  Channel
	Language string
	Version  int32
}

// RegisterConsumer records a heartbeat's consumer group entry. It returns
// true when the group's membership or its subscribed-topic set changed,
// which is when RocketMQ notifies the members (NOTIFY_CONSUMER_IDS_CHANGED).
//
// Subscriptions are merged into the group-wide table as RocketMQ does: a
// new topic is added, an existing entry is replaced only by a larger
// subVersion, and topics this heartbeat does not list are removed.
func (m *Manager) RegisterConsumer(ci ClientInfo, c Consumer) (changed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.consumers[c.Group]
	if g == nil {
		g = &consumerGroup{members: map[uint64]*Member{}, subs: map[string]Subscription{}}
		m.consumers[c.Group] = g
	}
	g.info = Consumer{Group: c.Group, ConsumeType: c.ConsumeType, MessageModel: c.MessageModel, ConsumeFromWhere: c.ConsumeFromWhere}
	id := ci.Channel.ID()
	if mem, ok := g.members[id]; ok {
		if mem.ClientID != ci.ClientID {
			changed = true
		}
		mem.ClientID, mem.LastSeen, mem.Language, mem.Version = ci.ClientID, m.now(), ci.Language, ci.Version
	} else {
		g.members[id] = &Member{ClientID: ci.ClientID, Channel: ci.Channel, LastSeen: m.now(), Language: ci.Language, Version: ci.Version}
		m.link(id, c.Group, true)
		changed = true
	}
	seen := make(map[string]bool, len(c.Subscriptions))
	for _, s := range c.Subscriptions {
		seen[s.Topic] = true
		old, ok := g.subs[s.Topic]
		if !ok {
			changed = true
			g.subs[s.Topic] = s
		} else if s.SubVersion > old.SubVersion {
			g.subs[s.Topic] = s
		}
	}
	for t := range g.subs {
		if !seen[t] {
			delete(g.subs, t)
			changed = true
		}
	}
	return changed
}

// RegisterProducer records a heartbeat's producer group entry.
func (m *Manager) RegisterProducer(ci ClientInfo, group string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.producers[group]
	if g == nil {
		g = &producerGroup{members: map[uint64]*Member{}}
		m.producers[group] = g
	}
	id := ci.Channel.ID()
	if mem, ok := g.members[id]; ok {
		mem.ClientID, mem.LastSeen, mem.Language, mem.Version = ci.ClientID, m.now(), ci.Language, ci.Version
		return
	}
	g.members[id] = &Member{ClientID: ci.ClientID, Channel: ci.Channel, LastSeen: m.now(), Language: ci.Language, Version: ci.Version}
	m.link(id, group, false)
}

// UnregisterClient removes clientID's channel from the named groups
// (UNREGISTER_CLIENT). It returns the consumer groups whose membership
// changed.
func (m *Manager) UnregisterClient(ch Channel, producerGroup, consumerGroup string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := ch.ID()
	if g := m.producers[producerGroup]; g != nil {
		if _, ok := g.members[id]; ok {
			m.removeProducer(producerGroup, g, id)
		}
	}
	if g := m.consumers[consumerGroup]; g != nil {
		if _, ok := g.members[id]; ok {
			m.removeConsumer(consumerGroup, g, id)
			return []string{consumerGroup}
		}
	}
	return nil
}

// removeConsumer drops a member; with the last member the group's
// subscriptions go too (as in RocketMQ). Caller holds m.mu.
func (m *Manager) removeConsumer(name string, g *consumerGroup, id uint64) {
	delete(g.members, id)
	m.unlink(id, name, true)
	if len(g.members) == 0 {
		delete(m.consumers, name)
	}
}

// RemoveChannel drops a closed connection from every group it is a member
// of. It returns the consumer groups whose membership changed (to notify
// their members), sorted, and for each the client id that left (for
// releasing its queue locks). Its cost is in the groups of that channel,
// not in the number of groups or clients: the broker calls it for every
// connection it closes, also for all of them at once at shutdown.
func (m *Manager) RemoveChannel(ch Channel) (groups []string, clientIDs []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := ch.ID()
	cg := m.byChan[id]
	if cg == nil {
		return nil, nil
	}
	for name := range cg.consumers {
		groups = append(groups, name)
	}
	sort.Strings(groups)
	for _, name := range groups {
		g := m.consumers[name]
		clientIDs = append(clientIDs, g.members[id].ClientID)
		m.removeConsumer(name, g, id)
	}
	for name := range cg.producers {
		m.removeProducer(name, m.producers[name], id)
	}
	delete(m.byChan, id)
	return groups, clientIDs
}

// Expire drops members silent for longer than ChannelExpiry and returns
// the channels dropped and the consumer groups that changed.
func (m *Manager) Expire() (expired []Channel, groups []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for name, g := range m.consumers {
		changed := false
		for id, mem := range g.members {
			if now.Sub(mem.LastSeen) > ChannelExpiry {
				expired = append(expired, mem.Channel)
				m.removeConsumer(name, g, id)
				changed = true
			}
		}
		if changed {
			groups = append(groups, name)
		}
	}
	for name, g := range m.producers {
		for id, mem := range g.members {
			if now.Sub(mem.LastSeen) > ChannelExpiry {
				expired = append(expired, mem.Channel)
				m.removeProducer(name, g, id)
			}
		}
	}
	return expired, groups
}

// ConsumerIDs returns the client ids of a group's members, sorted (the
// order clients allocate queues by).
func (m *Manager) ConsumerIDs(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil {
		return nil
	}
	ids := make([]string, 0, len(g.members))
	for _, mem := range g.members {
		ids = append(ids, mem.ClientID)
	}
	sort.Strings(ids)
	return ids
}

// ConsumerChannels returns the channels of a group's members.
func (m *Manager) ConsumerChannels(group string) []Channel {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil {
		return nil
	}
	out := make([]Channel, 0, len(g.members))
	for _, mem := range g.members {
		out = append(out, mem.Channel)
	}
	return out
}

// ConsumerMembers returns copies of a group's members sorted by client id.
func (m *Manager) ConsumerMembers(group string) []Member {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil {
		return nil
	}
	out := make([]Member, 0, len(g.members))
	for _, mem := range g.members {
		out = append(out, *mem)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClientID < out[j].ClientID })
	return out
}

// ConsumerGroup returns the latest heartbeat description of a group and
// whether the group has live members.
func (m *Manager) ConsumerGroup(group string) (Consumer, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil {
		return Consumer{}, false
	}
	c := g.info
	for _, s := range g.subs {
		c.Subscriptions = append(c.Subscriptions, s)
	}
	sort.Slice(c.Subscriptions, func(i, j int) bool { return c.Subscriptions[i].Topic < c.Subscriptions[j].Topic })
	return c, true
}

// Subscription returns the group-wide subscription of group to topic.
func (m *Manager) Subscription(group, topic string) (Subscription, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil {
		return Subscription{}, false
	}
	s, ok := g.subs[topic]
	return s, ok
}

// ConsumerGroups returns the names of groups with live members, sorted.
func (m *Manager) ConsumerGroups() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.consumers))
	for name := range m.consumers {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// ProducerChannels returns the live channels of a producer group, the
// most recently heard from first (the best candidate for a check-back).
func (m *Manager) ProducerChannels(group string) []Member {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.producers[group]
	if g == nil {
		return nil
	}
	out := make([]Member, 0, len(g.members))
	for _, mem := range g.members {
		out = append(out, *mem)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastSeen.After(out[j].LastSeen) })
	return out
}

// FindProducerByClientID returns the channel of a producer client, in any
// group (used to push replies to REPLY_TO_CLIENT).
func (m *Manager) FindProducerByClientID(clientID string) (Channel, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, g := range m.producers {
		for _, mem := range g.members {
			if mem.ClientID == clientID {
				return mem.Channel, true
			}
		}
	}
	return nil, false
}
