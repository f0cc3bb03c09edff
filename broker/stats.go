package broker

import (
	"context"
	"fmt"
	"sort"

	"github.com/tidemq/tide/broker/internal/clientmgr"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// queueStoreTime returns the store time of the message at queue offset
// off (0 when there is none).
func (b *Broker) queueStoreTime(topic string, qid int32, off int64) int64 {
	if off < 0 {
		return 0
	}
	units, err := b.store.ReadQueue(topic, qid, off, 1)
	if err != nil || len(units) == 0 || units[0].Size == 0 {
		return 0
	}
	m, err := b.store.LookMessage(units[0].Offset)
	if err != nil {
		return 0
	}
	return m.StoreTimestamp
}

// handleTopicStats serves GET_TOPIC_STATS_INFO: min and max offset and the
// last store time of every queue of a topic.
func (b *Broker) handleTopicStats(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.TopicHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	tc, ok := b.topics.Get(h.Topic)
	if !ok {
		return b.errorResponse(c, req, protocol.TopicNotExist, "topic[%s] not exist", h.Topic)
	}
	st := protocol.TopicStatsTable{OffsetTable: map[protocol.MessageQueue]protocol.TopicOffset{}}
	for q := int32(0); q < tc.WriteQueueNums; q++ {
		max := b.store.MaxOffset(h.Topic, q)
		st.OffsetTable[protocol.MessageQueue{Topic: h.Topic, BrokerName: b.opts.BrokerName, QueueID: q}] = protocol.TopicOffset{
			MinOffset: b.store.MinOffset(h.Topic, q), MaxOffset: max, LastUpdateTimestamp: b.queueStoreTime(h.Topic, q, max-1),
		}
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = st.Encode()
	return resp
}

// handleConsumeStats serves GET_CONSUME_STATS: per queue, the broker's max
// offset and the group's committed offset (the lag is their difference).
// With an empty topic every topic the group has offsets or a subscription
// on is reported.
func (b *Broker) handleConsumeStats(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.GetConsumeStatsRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	topics := []string{h.Topic}
	if h.Topic == "" {
		seen := map[string]bool{}
		topics = topics[:0]
		for _, t := range b.offsets.Topics(h.ConsumerGroup) {
			seen[t] = true
			topics = append(topics, t)
		}
		if g, ok := b.clients.ConsumerGroup(h.ConsumerGroup); ok {
			for _, s := range g.Subscriptions {
				if !seen[s.Topic] {
					topics = append(topics, s.Topic)
				}
			}
		}
		sort.Strings(topics)
	}
	stats := protocol.ConsumeStats{OffsetTable: map[protocol.MessageQueue]protocol.OffsetWrapper{}}
	for _, t := range topics {
		tc, ok := b.topics.Get(t)
		if !ok {
			continue
		}
		committed := b.offsets.QueueOffsets(h.ConsumerGroup, t)
		for q := int32(0); q < tc.ReadQueueNums; q++ {
			co, ok := committed[q]
			if !ok {
				co = 0
			}
			stats.OffsetTable[protocol.MessageQueue{Topic: t, BrokerName: b.opts.BrokerName, QueueID: q}] = protocol.OffsetWrapper{
				BrokerOffset: b.store.MaxOffset(t, q), ConsumerOffset: co, LastTimestamp: b.queueStoreTime(t, q, co-1),
			}
		}
	}
	body, err := stats.Encode()
	if err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "%v", err)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	return resp
}

// handleConsumerConnections serves GET_CONSUMER_CONNECTION_LIST.
func (b *Broker) handleConsumerConnections(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.ConsumerGroupHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	g, ok := b.clients.ConsumerGroup(h.ConsumerGroup)
	if !ok {
		return b.errorResponse(c, req, protocol.ConsumerNotOnline, "the consumer group[%s] not online", h.ConsumerGroup)
	}
	cc := protocol.ConsumerConnection{ConsumeType: g.ConsumeType, MessageModel: g.MessageModel, ConsumeFromWhere: g.ConsumeFromWhere,
		SubscriptionTable: map[string]protocol.SubscriptionData{}}
	for _, m := range b.clients.ConsumerMembers(h.ConsumerGroup) {
		cc.ConnectionSet = append(cc.ConnectionSet, memberConnection(m))
	}
	for _, s := range g.Subscriptions {
		cc.SubscriptionTable[s.Topic] = protocol.SubscriptionData{Topic: s.Topic, SubString: s.Expression, ExpressionType: s.ExpressionType,
			TagsSet: s.Tags, CodeSet: protocol.CodeSet(s.Codes), SubVersion: s.SubVersion}
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = cc.Encode()
	return resp
}

// memberConnection is a group member as GET_CONSUMER_CONNECTION_LIST and
// GET_PRODUCER_CONNECTION_LIST list it: its address is the remote end of
// its connection.
func memberConnection(m clientmgr.Member) protocol.Connection {
	addr := ""
	if conn, ok := m.Channel.(*remoting.Conn); ok {
		addr = conn.RemoteAddr().String()
	}
	return protocol.Connection{ClientID: m.ClientID, ClientAddr: addr, Language: m.Language, Version: m.Version}
}

// handleProducerConnections serves GET_PRODUCER_CONNECTION_LIST: the live
// members of a producer group, most recently heard from first. As in
// Apache RocketMQ, a group with no live member is SYSTEM_ERROR "the
// producer group[...] not exist".
func (b *Broker) handleProducerConnections(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.ProducerGroupHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	members := b.clients.ProducerChannels(h.ProducerGroup)
	if len(members) == 0 {
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("the producer group[%s] not exist", h.ProducerGroup))
	}
	var pc protocol.ProducerConnection
	for _, m := range members {
		pc.ConnectionSet = append(pc.ConnectionSet, memberConnection(m))
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = pc.Encode()
	return resp
}

// handleTopicConsumedBy serves QUERY_TOPIC_CONSUME_BY_WHO: the groups with
// offsets on a topic or subscribed to it.
func (b *Broker) handleTopicConsumedBy(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.TopicHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	seen := map[string]bool{}
	var groups []string
	for _, g := range b.offsets.Groups(h.Topic) {
		seen[g] = true
		groups = append(groups, g)
	}
	for _, g := range b.clients.ConsumerGroups() {
		if _, ok := b.clients.Subscription(g, h.Topic); ok && !seen[g] {
			groups = append(groups, g)
		}
	}
	sort.Strings(groups)
	resp := protocol.NewResponse(req, protocol.Success, "")
	gl := protocol.GroupList{GroupList: groups}
	resp.Body = gl.Encode()
	return resp
}
