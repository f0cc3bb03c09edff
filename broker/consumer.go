package broker

import (
	"context"

	"github.com/tidemq/tide/broker/internal/clientmgr"
	"github.com/tidemq/tide/broker/internal/filter"
	"github.com/tidemq/tide/broker/internal/queuelock"
	"github.com/tidemq/tide/broker/internal/topic"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// handleHeartbeat registers the producer and consumer groups of a client
// (rocketmq-protocol.md §2.9): consumer groups get their subscription
// group config and retry topic created, their subscriptions merged into
// the group-wide table, and their members notified on a change.
func (b *Broker) handleHeartbeat(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	hb, err := protocol.DecodeHeartbeatData(req.Body)
	if err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad heartbeat body: %v", err)
	}
	ci := clientmgr.ClientInfo{ClientID: hb.ClientID, Channel: c, Language: protocol.LanguageName(req.Language), Version: req.Version}
	if b.sec.acl != nil && len(hb.ProducerDataSet) > 0 {
		// The account the connection's producers act as: check-backs go
		// only to producers whose account may publish to the topic.
		c.SetValue(identityKey{}, identity(c, req))
	}
	for _, cd := range hb.ConsumerDataSet {
		group, ok := b.groups.GetOrCreate(cd.GroupName, b.opts.AutoCreateSubscriptionGroup)
		if ok && cd.MessageModel != "BROADCASTING" && group.RetryQueueNums > 0 {
			if _, created, err := b.topics.CreateSystem(topic.RetryTopic(cd.GroupName), group.RetryQueueNums, protocol.PermRead|protocol.PermWrite); err != nil {
				b.log.Error("create retry topic", "group", cd.GroupName, "err", err)
			} else if created {
				b.registry.Trigger()
			}
		}
		cons := clientmgr.Consumer{Group: cd.GroupName, ConsumeType: cd.ConsumeType, MessageModel: cd.MessageModel, ConsumeFromWhere: cd.ConsumeFromWhere}
		for _, s := range cd.SubscriptionDataSet {
			et := s.ExpressionType
			if et == "" {
				et = filter.TypeTag
			}
			cons.Subscriptions = append(cons.Subscriptions, clientmgr.Subscription{
				Topic: s.Topic, Expression: s.SubString, ExpressionType: et, Tags: s.TagsSet, Codes: []int64(s.CodeSet), SubVersion: s.SubVersion,
			})
		}
		if b.clients.RegisterConsumer(ci, cons) {
			b.log.Info("consumer group changed", "group", cd.GroupName, "client", hb.ClientID, "members", len(b.clients.ConsumerIDs(cd.GroupName)))
			b.notify.changed(cd.GroupName)
		}
	}
	for _, pd := range hb.ProducerDataSet {
		b.clients.RegisterProducer(ci, pd.GroupName)
	}
	return protocol.NewResponse(req, protocol.Success, "")
}

func (b *Broker) handleUnregisterClient(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.UnregisterClientRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	// Queue locks stay until UNLOCK_BATCH_MQ or expiry, as in RocketMQ
	// (a consumer unlocks its queues before it unregisters).
	for _, g := range b.clients.UnregisterClient(c, h.ProducerGroup, h.ConsumerGroup) {
		b.notify.changed(g)
	}
	return protocol.NewResponse(req, protocol.Success, "")
}

func (b *Broker) handleConsumerList(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.ConsumerGroupHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	ids := b.clients.ConsumerIDs(h.ConsumerGroup)
	if len(ids) == 0 {
		return b.errorResponse(c, req, protocol.SystemError, "no consumer for this group, %s", h.ConsumerGroup)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	body := protocol.GetConsumerListByGroupResponseBody{ConsumerIDList: ids}
	resp.Body = body.Encode()
	return resp
}

// handleQueryConsumerOffset answers the stored offset, or, when none is
// stored, 0 if the queue still holds its first message (so a new group on
// a young topic starts from the beginning, as with RocketMQ), else
// QUERY_NOT_FOUND.
func (b *Broker) handleQueryConsumerOffset(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.QueryConsumerOffsetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	off, ok := b.offsets.Query(h.ConsumerGroup, h.Topic, h.QueueID)
	if !ok {
		// RocketMQ 5 clients send setZeroIfNotFound=false to get "not
		// found" instead of 0, so that consume-from-last/timestamp also
		// works on young topics.
		if req.Ext("setZeroIfNotFound") != "false" && b.store.MinOffset(h.Topic, h.QueueID) <= 0 {
			off = 0
		} else {
			resp.Code, resp.Remark = protocol.QueryNotFound, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
			return resp
		}
	}
	oh := protocol.OffsetResponseHeader{Offset: off}
	resp.ExtFields = oh.Encode()
	return resp
}

func (b *Broker) handleUpdateConsumerOffset(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.UpdateConsumerOffsetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	if !b.isMaster() {
		return b.errorResponse(c, req, protocol.SlaveNotAvailable, "the broker is a slave; offsets are committed to the master")
	}
	if !h.OnlyForward || !b.opts.TideExtensions {
		b.offsets.Commit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset)
	} else if !b.offsets.CommitForward(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset) {
		// Still SUCCESS: the group is past this offset, which is what
		// the committer wanted to make durable.
		b.log.Debug("forward-only commit below the stored offset ignored",
			"group", h.ConsumerGroup, "topic", h.Topic, "queue", h.QueueID, "offset", h.CommitOffset, "client", c.RemoteAddr())
	}
	return protocol.NewResponse(req, protocol.Success, "")
}

func (b *Broker) offsetResponse(req *protocol.Command, off int64) *protocol.Command {
	resp := protocol.NewResponse(req, protocol.Success, "")
	oh := protocol.OffsetResponseHeader{Offset: off}
	resp.ExtFields = oh.Encode()
	return resp
}

func (b *Broker) handleGetMaxOffset(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.QueueRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	return b.offsetResponse(req, b.store.MaxOffset(h.Topic, h.QueueID))
}

func (b *Broker) handleGetMinOffset(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.QueueRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	return b.offsetResponse(req, b.store.MinOffset(h.Topic, h.QueueID))
}

func (b *Broker) handleSearchOffset(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.SearchOffsetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	return b.offsetResponse(req, b.store.SearchOffsetByTimestamp(h.Topic, h.QueueID, h.Timestamp))
}

func (b *Broker) handleEarliestMsgStoreTime(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.QueueRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	ts, err := b.store.EarliestStoreTime(h.Topic, h.QueueID)
	if err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "%v", err)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	th := protocol.GetEarliestMsgStoreTimeResponseHeader{Timestamp: ts}
	resp.ExtFields = th.Encode()
	return resp
}

func toQueues(mqs []protocol.MessageQueue) []queuelock.Queue {
	out := make([]queuelock.Queue, 0, len(mqs))
	for _, q := range mqs {
		out = append(out, queuelock.Queue{Topic: q.Topic, QueueID: q.QueueID})
	}
	return out
}

func (b *Broker) handleLockBatch(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	body, err := protocol.DecodeLockBatchRequestBody(req.Body)
	if err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad lock body: %v", err)
	}
	locked := b.locks.TryLock(body.ConsumerGroup, body.ClientID, toQueues(body.MQSet))
	out := protocol.LockBatchResponseBody{LockOKMQSet: []protocol.MessageQueue{}}
	for _, q := range locked {
		out.LockOKMQSet = append(out.LockOKMQSet, protocol.MessageQueue{Topic: q.Topic, BrokerName: b.opts.BrokerName, QueueID: q.QueueID})
	}
	if len(locked) < len(body.MQSet) {
		b.log.Debug("queue lock refused", "group", body.ConsumerGroup, "client", body.ClientID, "asked", len(body.MQSet), "got", len(locked))
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = out.Encode()
	return resp
}

func (b *Broker) handleUnlockBatch(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	body, err := protocol.DecodeLockBatchRequestBody(req.Body)
	if err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad unlock body: %v", err)
	}
	b.locks.Unlock(body.ConsumerGroup, body.ClientID, toQueues(body.MQSet))
	return protocol.NewResponse(req, protocol.Success, "")
}
