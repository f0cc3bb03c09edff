package broker

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/broker/internal/topic"
	"github.com/tidemq/tide/broker/internal/transaction"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// handleSend serves SEND_MESSAGE (10), SEND_MESSAGE_V2 (310),
// SEND_BATCH_MESSAGE (320) and the reply sends (324/325).
func (b *Broker) handleSend(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	resp, _ := b.serveSend(ctx, c, req, false)
	return resp
}

// handleSendInline is handleSend on the connection's read loop
// (remoting.InlineHandler): it serves the sends that cannot block and
// declines, before any side effect, every other one. A send can block
// when the store or the role waits after the append (SYNC_FLUSH,
// SYNC_MASTER), when it creates a topic (persisting the table, waiting
// for the slaves' metadata) or a DLQ, and for the sends with their own
// machinery: replies (written to another connection), idempotent sends
// (they may catch up on the commit log) and half messages. What remains
// is the common case: decode, the commit log append (its lock is held
// across a memory copy into the mapped segment, and once per segment
// across creating the next one) and the response.
func (b *Broker) handleSendInline(ctx context.Context, c *remoting.Conn, req *protocol.Command) (*protocol.Command, bool) {
	if b.opts.Store.FlushDiskType == store.SyncFlush || b.brokerRole() == "SYNC_MASTER" ||
		req.Code == protocol.SendReplyMessage || req.Code == protocol.SendReplyMessageV2 {
		return nil, false
	}
	return b.serveSend(ctx, c, req, true)
}

// serveSend serves a send; with inline set it declines (nil, false) the
// sends handleSendInline lists, before any side effect.
func (b *Broker) serveSend(ctx context.Context, c *remoting.Conn, req *protocol.Command, inline bool) (*protocol.Command, bool) {
	resp := b.serveSendCmd(ctx, c, req, inline)
	if resp == errDeclined {
		return nil, false
	}
	return resp, true
}

// errDeclined is serveSendCmd's answer for a send it declines inline.
var errDeclined = &protocol.Command{}

func (b *Broker) serveSendCmd(ctx context.Context, c *remoting.Conn, req *protocol.Command, inline bool) *protocol.Command {
	isReply := req.Code == protocol.SendReplyMessage || req.Code == protocol.SendReplyMessageV2
	// The ACL rule of every send code reads the topic through the same
	// decodeSend (aclrules.go).
	h, err := decodeSend(req)
	if err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad send header: %v", err)
	}
	if !b.isMaster() {
		return b.errorResponse(c, req, protocol.ServiceNotAvailable, "the broker[%s] is a slave and cannot accept messages", b.addr)
	}
	if b.opts.BrokerPermission&protocol.PermWrite == 0 {
		return b.errorResponse(c, req, protocol.NoPermission, "the broker[%s] sending message is forbidden", b.addr)
	}
	if err := topic.ValidateName(h.Topic); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "%v", err)
	}
	if topic.IsSendForbidden(h.Topic) {
		return b.errorResponse(c, req, protocol.NoPermission, "sending message to topic[%s] is forbidden", h.Topic)
	}
	if inline {
		if _, ok := b.topics.Get(h.Topic); !ok || strings.HasPrefix(h.Topic, topic.RetryPrefix) {
			return errDeclined // creates the topic, or may create a DLQ
		}
	}
	tc, created, err := b.topics.CreateOnSend(h.Topic, h.DefaultTopic, h.DefaultTopicQueueNums)
	if err != nil {
		if errors.Is(err, topic.ErrNotExist) {
			return b.errorResponse(c, req, protocol.TopicNotExist, "topic[%s] not exist, apply first please!", h.Topic)
		}
		return b.errorResponse(c, req, protocol.SystemError, "%v", err)
	}
	if created {
		b.log.Info("topic auto-created on send", "topic", h.Topic, "queues", tc.WriteQueueNums, "producerGroup", h.ProducerGroup)
		b.registry.Trigger()
		// As a created topic: the in-sync slaves have it before the
		// message is stored (bounded, once per topic).
		b.awaitSlavesMetadata(ctx, "topic "+h.Topic+" (auto-created)")
	}
	if !protocol.PermWritable(tc.Perm) {
		return b.errorResponse(c, req, protocol.NoPermission, "the topic[%s] sending message is forbidden", h.Topic)
	}
	// The same name, held by the topic table rather than sliced from this
	// request's header: per-topic and per-queue state keyed by it (metrics
	// labels, idempotent-producer windows) then keeps no header alive.
	if tc.TopicName == h.Topic {
		h.Topic = tc.TopicName
	}
	qid := h.QueueID
	maxQ := max(tc.WriteQueueNums, tc.ReadQueueNums)
	if qid < 0 {
		qid = rand.Int32N(tc.WriteQueueNums)
	}
	if qid >= maxQ {
		return b.errorResponse(c, req, protocol.SystemError, "request queueId[%d] is illegal, topic %s has %d queues, producer: %s", qid, h.Topic, maxQ, c.RemoteAddr())
	}

	born := bornHost(c)
	base := protocol.MessageExt{
		QueueID:        qid,
		SysFlag:        h.SysFlag,
		BornTimestamp:  h.BornTimestamp,
		BornHost:       born,
		StoreHost:      b.storeHost,
		ReconsumeTimes: h.ReconsumeTimes,
	}
	base.Topic = h.Topic
	base.Flag = h.Flag

	// The raw path (sendprops.go) keeps the properties as the client's
	// strings; the map path decodes them for the sends whose properties
	// the broker may read from the map or change (replies, transactions,
	// retry topics, and the properties of rawFallback).
	raw := !isReply && protocol.TxType(h.SysFlag) == protocol.SysFlagTxNotType && !strings.HasPrefix(h.Topic, topic.RetryPrefix)
	var (
		msgs []*protocol.MessageExt
		enc  []string // the messages' encoded properties on the raw path, nil on the map path
	)
	if req.Code == protocol.SendBatchMessage || h.Batch {
		if protocol.TxType(h.SysFlag) != protocol.SysFlagTxNotType {
			return b.errorResponse(c, req, protocol.MessageIllegal, "batch messages cannot be transactional")
		}
		if lastProperty(h.Properties, protocol.PropDelayLevel) != "" {
			return b.errorResponse(c, req, protocol.MessageIllegal, "batch messages cannot be delayed")
		}
		items, err := protocol.DecodeBatch(req.Body)
		if err != nil {
			return b.errorResponse(c, req, protocol.MessageIllegal, "bad batch body: %v", err)
		}
		if raw = raw && len(items) > 0; raw {
			enc, raw = rawProps(h.Properties, items, b.opts.BrokerClusterName)
		}
		var batchProps map[string]string
		if !raw {
			batchProps = protocol.DecodeProperties(h.Properties)
		}
		msgs = make([]*protocol.MessageExt, 0, len(items))
		for i, it := range items {
			m := base
			m.Body = it.Body
			m.Flag = it.Flag
			if raw {
				b.stampRaw(&m, enc[i])
			} else {
				m.Properties = protocol.DecodeProperties(it.Properties)
				for k, v := range batchProps {
					m.Properties[k] = v
				}
				b.stampProperties(&m)
			}
			msgs = append(msgs, &m)
		}
	} else {
		if len(req.Body) == 0 && !isReply { // v2.1.2 sends replies with no body (its CreateReplyMessage quirk)
			return b.errorResponse(c, req, protocol.MessageIllegal, "the message body is empty")
		}
		m := base
		m.Body = req.Body
		if raw {
			enc, raw = rawProps(h.Properties, nil, b.opts.BrokerClusterName)
		}
		if raw {
			b.stampRaw(&m, enc[0])
		} else {
			m.Properties = protocol.DecodeProperties(h.Properties)
			b.stampProperties(&m)
		}
		msgs = append(msgs, &m)
	}
	for i, m := range msgs {
		if len(m.Body) > b.opts.Store.MaxMessageSize {
			return b.errorResponse(c, req, protocol.MessageIllegal, "the message body size %d is over the limit of %d bytes (maxMessageSize)", len(m.Body), b.opts.Store.MaxMessageSize)
		}
		n := 0
		if enc != nil {
			n = len(enc[i])
		} else {
			n = protocol.PropertiesLen(m.Properties)
		}
		if n > protocol.MaxPropertiesLength {
			return b.errorResponse(c, req, protocol.MessageIllegal, "the message properties are %d bytes, over the limit of %d", n, protocol.MaxPropertiesLength)
		}
	}
	// Retry topics divert to the DLQ once the consumer gave up (RocketMQ's
	// handleRetryAndDLQ for direct sends).
	if strings.HasPrefix(h.Topic, topic.RetryPrefix) && len(msgs) == 1 {
		group := strings.TrimPrefix(h.Topic, topic.RetryPrefix)
		maxTimes := h.MaxReconsumeTimes
		if maxTimes < 0 { // not sent: the group's retryMaxTimes, as for send-back
			maxTimes = protocol.DefaultSubscriptionGroupConfig(group).RetryMaxTimes
			if g, ok := b.groups.Get(group); ok {
				maxTimes = g.RetryMaxTimes
			}
		}
		if h.ReconsumeTimes >= maxTimes {
			dlq, _, err := b.topics.CreateSystem(topic.DLQTopic(group), 1, protocol.PermWrite|protocol.PermRead)
			if err != nil {
				return b.errorResponse(c, req, protocol.SystemError, "create dlq: %v", err)
			}
			msgs[0].Topic, msgs[0].QueueID = dlq.TopicName, 0
		}
	}
	if isReply {
		return b.handleReply(ctx, c, req, h, msgs[0])
	}
	st, stamped, err := b.sendStamp(msgs, enc)
	if err != nil {
		return b.errorResponse(c, req, protocol.MessageIllegal, "bad %s: %v", protocol.PropProducerStamp, err)
	}
	if inline && (stamped || len(msgs) == 1 && transaction.IsHalf(msgs[0].SysFlag, msgs[0].Properties)) {
		return errDeclined
	}
	if stamped {
		return b.putIdempotent(c, req, st, h.Topic, qid, msgs, enc, func() *protocol.Command { return b.storeSend(ctx, c, req, msgs, enc, qid) })
	}
	return b.storeSend(ctx, c, req, msgs, enc, qid)
}

// storeSend stores a send's messages: a half message for the transaction
// service, a delayed one in its schedule or timer queue, the others as
// they are. enc, when not nil, holds the messages' encoded properties (the
// raw path: no transaction, delay or timer, so stored as they are).
func (b *Broker) storeSend(ctx context.Context, c *remoting.Conn, req *protocol.Command, msgs []*protocol.MessageExt, enc []string, qid int32) *protocol.Command {
	if enc != nil {
		return b.putAndRespond(ctx, c, req, msgs, enc, qid)
	}
	if len(msgs) == 1 && transaction.IsHalf(msgs[0].SysFlag, msgs[0].Properties) {
		if err := b.validateTimer(msgs[0]); err != nil {
			return b.errorResponse(c, req, protocol.MessageIllegal, "%v", err)
		}
		transaction.Prepare(msgs[0])
		resp := b.putAndRespond(ctx, c, req, msgs, nil, qid)
		if resp.Code == protocol.Success || resp.Code == protocol.FlushDiskTimeout {
			b.tx().Added(msgs[0])
		}
		return resp
	}
	if len(msgs) == 1 {
		if err := b.divertDelayed(msgs[0]); err != nil {
			return b.errorResponse(c, req, protocol.MessageIllegal, "%v", err)
		}
	}
	return b.putAndRespond(ctx, c, req, msgs, nil, qid)
}

// stampProperties adds the broker-side properties RocketMQ 4.9 adds on
// every send.
func (b *Broker) stampProperties(m *protocol.MessageExt) {
	if m.Properties == nil {
		m.Properties = map[string]string{}
	}
	m.Properties[protocol.PropCluster] = b.opts.BrokerClusterName
	if m.Properties[protocol.PropTags] != "" && m.SysFlag&protocol.SysFlagMultiTags != 0 {
		m.SysFlag &^= protocol.SysFlagMultiTags
	}
}

// stampRaw is stampProperties on the raw path: props, the message's
// encoded properties, has CLUSTER already.
func (b *Broker) stampRaw(m *protocol.MessageExt, props string) {
	if m.SysFlag&protocol.SysFlagMultiTags != 0 {
		if t, _ := protocol.PropertyValue(props, protocol.PropTags); t != "" {
			m.SysFlag &^= protocol.SysFlagMultiTags
		}
	}
}

// lastProperty returns the value DecodeProperties(s)[k] would have,
// without the map.
func lastProperty(s, k string) string {
	v := ""
	for len(s) > 0 {
		var name, value string
		var ok bool
		if name, value, s, ok = protocol.NextProperty(s); ok && name == k {
			v = value
		}
	}
	return v
}

// putAndRespond stores msgs and builds the send response.
// queueID is the queue the producer addressed (a delayed message is
// stored in a schedule queue but reported on its real queue, as RocketMQ
// does). enc, when not nil, holds the messages' encoded properties.
func (b *Broker) putAndRespond(ctx context.Context, c *remoting.Conn, req *protocol.Command, msgs []*protocol.MessageExt, enc []string, queueID int32) *protocol.Command {
	if err := ctx.Err(); err != nil {
		return b.errorResponse(c, req, protocol.SystemBusy, "[TIMEOUT_CLEAN_QUEUE]broker busy: %v", err)
	}
	var (
		res store.PutResult
		err error
	)
	// Only a SYNC_FLUSH store or a SYNC_MASTER waits after the append;
	// the others need no deadline (and save a context and a timer per send).
	pctx := context.Background()
	if b.opts.Store.FlushDiskType == store.SyncFlush || b.brokerRole() == "SYNC_MASTER" {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(pctx, time.Duration(b.opts.Store.SyncFlushTimeout+1000)*time.Millisecond)
		defer cancel()
	}
	start := time.Now()
	if enc != nil {
		res, err = b.store.PutEncoded(pctx, msgs, enc)
	} else if len(msgs) == 1 {
		res, err = b.store.PutMessage(pctx, msgs[0])
	} else {
		res, err = b.store.PutMessages(pctx, msgs)
	}
	b.metrics.observeAppend(msgs[0].Topic, start)
	if err != nil {
		switch {
		case errors.Is(err, store.ErrMessageTooLarge), errors.Is(err, store.ErrBadMessage):
			return b.errorResponse(c, req, protocol.MessageIllegal, "%v", err)
		case errors.Is(err, store.ErrDiskFull), errors.Is(err, store.ErrReadOnly), errors.Is(err, store.ErrShuttingDown):
			return b.errorResponse(c, req, protocol.ServiceNotAvailable, "%v", err)
		default:
			return b.errorResponse(c, req, protocol.SystemError, "store: %v", err)
		}
	}
	rh := protocol.SendMessageResponseHeader{
		QueueID:     queueID,
		QueueOffset: res.QueueOffset,
		MsgRegion:   b.opts.RegionID,
		TraceOn:     b.opts.TraceOn,
	}
	// Typed, no map: written straight into either serialize type.
	resp := protocol.NewTypedResponse(req, protocol.Success, "", &rh)
	if res.Status == store.PutFlushDiskTimeout {
		resp.Code = protocol.FlushDiskTimeout
		resp.Remark = "flush disk timeout"
	} else if code := b.waitReplicated(pctx, res.CommitLogOffset+int64(res.WroteBytes)); code != protocol.Success {
		resp.Code = code
		resp.Remark = protocol.CodeName(code)
		b.log.Warn("send stored but not replicated in time", "topic", msgs[0].Topic, "response", resp.Remark)
	}
	// One counter update per request: a batch shares its topic, and a
	// diverted (delayed) message is alone in its request.
	t := msgs[0].Topic
	if real := msgs[0].Property(protocol.PropRealTopic); real != "" {
		t = real
	}
	var size int
	for _, m := range msgs {
		size += len(m.Body)
	}
	b.metrics.byTopic.msgsIn.get(t).Add(float64(len(msgs)))
	b.metrics.byTopic.bytesIn.get(t).Add(float64(size))
	if len(msgs) == 1 {
		rh.MsgID = protocol.OffsetMsgID(b.storeHost, msgs[0].CommitLogOffset)
	} else {
		ids := make([]string, len(msgs))
		for i, m := range msgs {
			ids[i] = protocol.OffsetMsgID(b.storeHost, m.CommitLogOffset)
		}
		rh.MsgID = strings.Join(ids, ",")
	}
	return resp
}

// bornHost returns the producer's address as seen on the connection.
func bornHost(c *remoting.Conn) netip.AddrPort {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		if ap := ta.AddrPort(); ap.IsValid() {
			return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		}
	}
	host, port, err := net.SplitHostPort(c.RemoteAddr().String())
	if err == nil {
		if a, err := netip.ParseAddr(host); err == nil {
			p, _ := strconv.Atoi(port)
			return netip.AddrPortFrom(a.Unmap(), uint16(p))
		}
	}
	return netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
}
