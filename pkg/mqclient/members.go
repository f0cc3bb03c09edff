package mqclient

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// members is the registry of a Client's running producers and push
// consumers: what its heartbeat carries, who answers a transaction
// check-back, whom a membership change or a lost connection concerns.
type members struct {
	mu        sync.Mutex
	producers map[string][]*Producer   // by producer group, in start order
	consumers map[string]*PushConsumer // by consumer group
}

func (m *members) init() {
	m.producers = map[string][]*Producer{}
	m.consumers = map[string]*PushConsumer{}
}

// any reports whether a group is registered (heartbeats have something to
// say).
func (m *members) any() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.producers) > 0 || len(m.consumers) > 0
}

func (m *members) addProducer(p *Producer) {
	m.mu.Lock()
	g := p.s.producerGroup
	m.producers[g] = append(m.producers[g], p)
	m.mu.Unlock()
}

// removeProducer forgets p and reports whether it was the last producer
// of its group.
func (m *members) removeProducer(p *Producer) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := p.s.producerGroup
	ps := m.producers[g]
	for i, q := range ps {
		if q == p {
			ps = append(ps[:i:i], ps[i+1:]...)
			break
		}
	}
	if len(ps) == 0 {
		delete(m.producers, g)
		return true
	}
	m.producers[g] = ps
	return false
}

func (m *members) addConsumer(pc *PushConsumer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.consumers[pc.group]; ok {
		return fmt.Errorf("%w: consumer group %s", ErrDuplicateGroup, pc.group)
	}
	m.consumers[pc.group] = pc
	return nil
}

func (m *members) removeConsumer(pc *PushConsumer) {
	m.mu.Lock()
	if m.consumers[pc.group] == pc {
		delete(m.consumers, pc.group)
	}
	m.mu.Unlock()
}

// pushConsumers returns the registered consumers sorted by group.
func (m *members) pushConsumers() []*PushConsumer {
	m.mu.Lock()
	out := make([]*PushConsumer, 0, len(m.consumers))
	for _, pc := range m.consumers {
		out = append(out, pc)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].group < out[j].group })
	return out
}

// checker returns the transactional producer that answers check-backs of
// group: the first started one of the group, or with no group (a message
// without the property) the first of the smallest group name.
func (m *members) checker(group string) *Producer {
	m.mu.Lock()
	defer m.mu.Unlock()
	pick := func(ps []*Producer) *Producer {
		for _, p := range ps {
			if p.checker != nil {
				return p
			}
		}
		return nil
	}
	if group != "" {
		return pick(m.producers[group])
	}
	groups := make([]string, 0, len(m.producers))
	for g := range m.producers {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		if p := pick(m.producers[g]); p != nil {
			return p
		}
	}
	return nil
}

// heartbeatData is the Client's heartbeat: every producer group and every
// consumer's subscriptions, sorted; nil when nothing is registered.
func (c *Client) heartbeatData() *protocol.HeartbeatData {
	c.reg.mu.Lock()
	groups := make([]string, 0, len(c.reg.producers))
	for g := range c.reg.producers {
		groups = append(groups, g)
	}
	c.reg.mu.Unlock()
	consumers := c.reg.pushConsumers()
	if len(groups) == 0 && len(consumers) == 0 {
		return nil
	}
	sort.Strings(groups)
	hb := &protocol.HeartbeatData{ClientID: c.clientID}
	for _, g := range groups {
		hb.ProducerDataSet = append(hb.ProducerDataSet, protocol.ProducerData{GroupName: g})
	}
	for _, pc := range consumers {
		hb.ConsumerDataSet = append(hb.ConsumerDataSet, pc.consumerData())
	}
	return hb
}

// handleConsumerIDsChanged answers NOTIFY_CONSUMER_IDS_CHANGED: the
// consumer of the named group rebalances at once (every consumer when the
// header names none of them).
func (c *Client) handleConsumerIDsChanged(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.NotifyConsumerIDsChangedRequestHeader
	_ = h.Decode(req.ExtFields)
	c.reg.mu.Lock()
	pc := c.reg.consumers[h.ConsumerGroup]
	c.reg.mu.Unlock()
	if pc != nil {
		pc.rb.request()
		return nil
	}
	for _, pc := range c.reg.pushConsumers() {
		pc.rb.request()
	}
	return nil
}

// handleCheck hands a CHECK_TRANSACTION_STATE to the transactional
// producer of the half message's producer group, as RocketMQ's client
// instance selects it by the message's PGROUP property. Check-backs of a
// group with no transactional producer here are ignored.
func (c *Client) handleCheck(ctx context.Context, conn *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.CheckTransactionStateRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		c.log.Warn("mqclient: bad check-back header", "err", err)
		return nil
	}
	rec, _, err := protocol.DecodeStored(req.Body, false)
	if err != nil {
		c.log.Warn("mqclient: bad check-back body", "err", err)
		return nil
	}
	if p := c.reg.checker(rec.Property(protocol.PropProducerGroup)); p != nil {
		p.answerCheck(ctx, conn, &h, rec)
	}
	return nil // answered by END_TRANSACTION, never by a response
}

// disconnected tells the ordered consumers that the connection to addr
// closed: the locks held through it are gone.
func (c *Client) disconnected(addr string) {
	for _, pc := range c.reg.pushConsumers() {
		if pc.s.ordered {
			go pc.locksLost(addr)
		}
	}
}
