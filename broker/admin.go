package broker

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/broker/internal/topic"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// handleCreateTopic serves UPDATE_AND_CREATE_TOPIC: it validates the name,
// refuses system topics and slaves, stores the config and re-registers with
// the NameServers, waiting (bounded) for their answers before it answers.
func (b *Broker) handleCreateTopic(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.CreateTopicRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad create-topic header: %v", err)
	}
	if !b.isMaster() {
		return b.errorResponse(c, req, protocol.SystemError, "the broker[%s] is a slave; create topics on its master", b.addr)
	}
	if h.Topic == h.DefaultTopic && h.Topic != "" {
		return b.errorResponse(c, req, protocol.SystemError, "the topic[%s] is conflict with system reserved words", h.Topic)
	}
	if h.ReadQueueNums <= 0 || h.WriteQueueNums <= 0 || h.ReadQueueNums > 1024 || h.WriteQueueNums > 1024 {
		return b.errorResponse(c, req, protocol.SystemError, "queue numbers must be in 1..1024 (read %d, write %d)", h.ReadQueueNums, h.WriteQueueNums)
	}
	tc := protocol.TopicConfig{TopicName: h.Topic, ReadQueueNums: h.ReadQueueNums, WriteQueueNums: h.WriteQueueNums,
		Perm: h.Perm, TopicFilterType: h.TopicFilterType, TopicSysFlag: h.TopicSysFlag, Order: h.Order}
	if err := b.topics.Put(tc, false); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "%v", err)
	}
	b.log.Info("topic created or updated", "topic", h.Topic, "read", h.ReadQueueNums, "write", h.WriteQueueNums, "perm", protocol.PermString(h.Perm), "by", c.RemoteAddr())
	// The in-sync slaves have it before the caller hears SUCCESS
	// (bounded; metasync.go): a failover right after does not lose it.
	b.awaitSlavesMetadata(ctx, "topic "+h.Topic)
	// As RocketMQ (registerIncrementBrokerData): the NameServers learn the
	// topic before the caller hears SUCCESS, so a route lookup right after
	// finds it. Bounded by the registration timeout; a NameServer that does
	// not answer in time learns it in the next periodic round.
	rctx, cancel := context.WithTimeout(ctx, b.registerTimeout())
	defer cancel()
	if err := b.registry.RegisterAll(rctx); err != nil {
		b.log.Warn("topic created, but not every NameServer knows it yet; the next registration round retries", "topic", h.Topic, "err", err)
	}
	return protocol.NewResponse(req, protocol.Success, "")
}

// handleDeleteTopic serves DELETE_TOPIC_IN_BROKER: the config, the
// consumer offsets and the topic's consume queues go.
func (b *Broker) handleDeleteTopic(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.TopicHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	if err := topic.ValidateName(h.Topic); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "%v", err)
	}
	if topic.IsSystem(h.Topic) {
		return b.errorResponse(c, req, protocol.SystemError, "the topic[%s] is a system topic and cannot be deleted", h.Topic)
	}
	if _, err := b.topics.Delete(h.Topic); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "%v", err)
	}
	b.offsets.RemoveTopic(h.Topic)
	b.store.DeleteTopics(h.Topic)
	b.log.Info("topic deleted", "topic", h.Topic, "by", c.RemoteAddr())
	b.awaitSlavesMetadata(ctx, "topic "+h.Topic+" deleted")
	b.registry.Trigger()
	return protocol.NewResponse(req, protocol.Success, "")
}

func (b *Broker) handleGetAllTopicConfig(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	resp := protocol.NewResponse(req, protocol.Success, "")
	w := b.topics.Wrapper()
	data, err := json.Marshal(&w)
	if err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "%v", err)
	}
	resp.Body = data
	return resp
}

func (b *Broker) handleGetAllSubscriptionGroups(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	resp := protocol.NewResponse(req, protocol.Success, "")
	w := b.groups.Wrapper()
	resp.Body = w.Encode()
	return resp
}

func (b *Broker) handleUpdateSubscriptionGroup(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var cfg protocol.SubscriptionGroupConfig
	if err := json.Unmarshal(req.Body, &cfg); err != nil || cfg.GroupName == "" {
		return b.errorResponse(c, req, protocol.SystemError, "bad subscription group body: %v", err)
	}
	if err := topic.ValidateName(cfg.GroupName); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "invalid group name: %v", err)
	}
	b.groups.Put(cfg)
	if err := b.groups.Persist(); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "%v", err)
	}
	b.awaitSlavesMetadata(ctx, "subscription group "+cfg.GroupName)
	return protocol.NewResponse(req, protocol.Success, "")
}

// handleViewMessage serves VIEW_MESSAGE_BY_ID: the record at a commit log
// offset (taken from an offset message id by the client).
func (b *Broker) handleViewMessage(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.ViewMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	rec, err := b.store.ReadRecord(h.Offset)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrOffsetRemoved) {
			return b.errorResponse(c, req, protocol.SystemError, "can not find message by the offset, %d: %v", h.Offset, err)
		}
		return b.errorResponse(c, req, protocol.SystemError, "%v", err)
	}
	if refused := b.authorizeRecord(c, req, rec); refused != nil {
		return refused
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = rec
	return resp
}

// authorizeRecord checks that the sender of req may read the stored
// record rec: SUB on the topic it belongs to (recordResource).
func (b *Broker) authorizeRecord(c *remoting.Conn, req *protocol.Command, rec []byte) *protocol.Command {
	if b.sec.acl == nil {
		return nil
	}
	v, err := protocol.ViewRecord(rec, false)
	if err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "stored record unreadable: %v", err)
	}
	real, _ := v.Property(protocol.PropRealTopic)
	res, admin := recordResource(string(v.Topic), real)
	if admin {
		return b.authorize(c, req, true)
	}
	return b.authorize(c, req, false, res)
}

// handleQueryMessage serves QUERY_MESSAGE: messages of a topic by key (or
// unique key) within a time range, from the index.
func (b *Broker) handleQueryMessage(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.QueryMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", err)
	}
	maxNum := int(h.MaxNum)
	if h.UniqueKeyQuery || maxNum <= 0 || maxNum > 64 {
		maxNum = 32 // defaultQueryMaxNum
	}
	res := b.store.QueryMessages(h.Topic, h.Key, maxNum, h.BeginTimestamp, h.EndTimestamp)
	resp := protocol.NewResponse(req, protocol.Success, "")
	qh := protocol.QueryMessageResponseHeader{IndexLastUpdateTimestamp: res.LastUpdateTimestamp, IndexLastUpdatePhyoffset: res.LastUpdatePhyOffset}
	resp.ExtFields = qh.Encode()
	if len(res.Offsets) == 0 {
		resp.Code, resp.Remark = protocol.QueryNotFound, "can not find message, maybe time range not correct"
		return resp
	}
	resp.Body = res.Data
	return resp
}

// registerTimeout bounds a synchronous registration round
// (registerBrokerTimeoutMills, 6 s by default as in RocketMQ).
func (b *Broker) registerTimeout() time.Duration {
	if b.opts.RegisterBrokerTimeoutMills <= 0 {
		return 6 * time.Second
	}
	return time.Duration(b.opts.RegisterBrokerTimeoutMills) * time.Millisecond
}
