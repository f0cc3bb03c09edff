package broker

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"

	"github.com/tidemq/tide/broker/internal/acl"
	"github.com/tidemq/tide/broker/internal/schedule"
	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/broker/internal/topic"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// handleSendBack serves CONSUMER_SEND_MSG_BACK: a message the consumer
// failed to process is copied to %RETRY%group with a delay level growing
// with its reconsume count, or to %DLQ%group once the consumer gave up
// (rocketmq-protocol.md §5.3). The original record is not changed.
func (b *Broker) handleSendBack(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.ConsumerSendMsgBackRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad send-back header: %v", err)
	}
	if !b.isMaster() {
		return b.errorResponse(c, req, protocol.ServiceNotAvailable, "the broker[%s] is a slave and cannot accept messages", b.addr)
	}
	group, ok := b.groups.GetOrCreate(h.Group, b.opts.AutoCreateSubscriptionGroup)
	if !ok {
		return b.errorResponse(c, req, protocol.SubscriptionGroupNotExist, "subscription group not exist, %s", h.Group)
	}
	if b.opts.BrokerPermission&protocol.PermWrite == 0 {
		return b.errorResponse(c, req, protocol.NoPermission, "the broker[%s] sending message is forbidden", b.addr)
	}
	if group.RetryQueueNums <= 0 {
		b.log.Warn("send-back dropped: group has no retry queues", "group", h.Group, "offset", h.Offset)
		return protocol.NewResponse(req, protocol.Success, "")
	}
	orig, err := b.store.LookMessage(h.Offset)
	if err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "look message by offset failed, %d: %v", h.Offset, err)
	}
	if refused := b.authorizeSendBack(c, req, &h, orig); refused != nil {
		return refused
	}
	m := protocol.MessageExt{
		SysFlag:        orig.SysFlag,
		BornTimestamp:  orig.BornTimestamp,
		BornHost:       orig.BornHost,
		StoreHost:      b.storeHost,
		ReconsumeTimes: orig.ReconsumeTimes + 1,
	}
	m.Body, m.Flag = orig.Body, orig.Flag
	m.Properties = make(map[string]string, len(orig.Properties)+2)
	for k, v := range orig.Properties {
		m.Properties[k] = v
	}
	if m.Properties[protocol.PropRetryTopic] == "" {
		m.Properties[protocol.PropRetryTopic] = orig.Topic
	}
	if m.Properties[protocol.PropOriginMessageID] == "" {
		id := h.OriginMsgID
		if id == "" {
			id = orig.MsgID()
		}
		m.Properties[protocol.PropOriginMessageID] = id
	}
	delete(m.Properties, protocol.PropDelayLevel)

	maxTimes := h.MaxReconsumeTimes
	if maxTimes < 0 || req.Version < protocol.VersionV3_4_9 {
		maxTimes = group.RetryMaxTimes
	}
	// RocketMQ creates the group's retry topic on every send-back, even one
	// that goes straight to the DLQ: tools that resend a dead letter to
	// %RETRY%<group> then find a registered route.
	retry, created, err := b.topics.CreateSystem(topic.RetryTopic(h.Group), group.RetryQueueNums, protocol.PermRead|protocol.PermWrite)
	if err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "create retry topic: %v", err)
	}
	if created {
		b.registry.Trigger()
	}
	toDLQ := orig.ReconsumeTimes >= maxTimes || h.DelayLevel < 0
	if toDLQ {
		dlq, created, err := b.topics.CreateSystem(topic.DLQTopic(h.Group), 1, protocol.PermRead|protocol.PermWrite)
		if err != nil {
			return b.errorResponse(c, req, protocol.SystemError, "create dlq topic: %v", err)
		}
		if created {
			b.registry.Trigger()
		}
		m.Topic, m.QueueID = dlq.TopicName, 0
		b.log.Warn("message moved to the dead letter queue", "group", h.Group, "topic", orig.Topic, "msgId", orig.MsgID(),
			"reconsumeTimes", orig.ReconsumeTimes, "max", maxTimes)
	} else {
		m.Topic, m.QueueID = retry.TopicName, rand.Int32N(retry.WriteQueueNums)
		level := h.DelayLevel
		if level == 0 {
			level = 3 + orig.ReconsumeTimes
		}
		m.Properties[protocol.PropDelayLevel] = strconv.Itoa(int(level))
	}
	m.Properties[protocol.PropCluster] = b.opts.BrokerClusterName
	schedule.Divert(&m, b.delayLevels)
	if _, err := b.store.PutMessage(ctx, &m); err != nil {
		code := protocol.SystemError
		if errors.Is(err, store.ErrDiskFull) || errors.Is(err, store.ErrShuttingDown) {
			code = protocol.ServiceNotAvailable
		}
		return b.errorResponse(c, req, code, "send-back store failed: %v", err)
	}
	return protocol.NewResponse(req, protocol.Success, "")
}

// authorizeSendBack checks, under aclEnable, that the record a send-back
// names is one the group consumed: in originTopic or in the group's retry
// topic, with SUB on it. Without this, an offset pointing at another
// tenant's message would copy it into the caller's retry topic, where the
// caller can read it. (checkACL already checked group SUB and, as
// RocketMQ 4.x does, PUB on originTopic.)
func (b *Broker) authorizeSendBack(c *remoting.Conn, req *protocol.Command, h *protocol.ConsumerSendMsgBackRequestHeader, orig *protocol.MessageExt) *protocol.Command {
	if b.sec.acl == nil {
		return nil
	}
	if orig.Topic != topic.RetryTopic(h.Group) && (h.OriginTopic == "" || orig.Topic != h.OriginTopic) {
		return b.errorResponse(c, req, protocol.NoPermission, "%v: the message at offset %d is not in originTopic %q nor in the retry topic of group %s",
			acl.ErrDenied, h.Offset, h.OriginTopic, h.Group)
	}
	return b.authorize(c, req, false, acl.Topic(orig.Topic, acl.Sub))
}
