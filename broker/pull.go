package broker

import (
	"context"
	"time"

	"github.com/tidemq/tide/broker/internal/filter"
	"github.com/tidemq/tide/broker/internal/longpoll"
	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// storeFilter adapts a filter.Filter to the store's Filter interface.
type storeFilter struct{ f *filter.Filter }

func (s storeFilter) MatchTagsCode(code int64) bool { return s.f.MatchTagsCode(code) }
func (s storeFilter) MatchProperties(props func() map[string]string) bool {
	if s.f.MatchAll() {
		return true
	}
	return s.f.MatchProperties(props())
}

// storeFilterOf returns the store filter for f: nil when f accepts every
// message (subscription "*"), which the store treats the same way without
// calling the filter twice for each record and building the properties
// closure it passes to MatchProperties.
func storeFilterOf(f *filter.Filter) store.Filter {
	if f == nil || f.MatchAll() {
		return nil
	}
	return storeFilter{f}
}

// handlePull serves PULL_MESSAGE with RocketMQ's checks and long polling
// (rocketmq-protocol.md §2.8, §5.7).
func (b *Broker) handlePull(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	// The header may be req's own (typed by the frame decoder, without a
	// map); the held pull's Resume reads it again.
	h, err := protocol.DecodePullRequest(req)
	if err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad pull header: %v", err)
	}
	if b.opts.BrokerPermission&protocol.PermRead == 0 {
		return b.errorResponse(c, req, protocol.NoPermission, "the broker[%s] pulling message is forbidden", b.addr)
	}
	group, ok := b.groups.GetOrCreate(h.ConsumerGroup, b.opts.AutoCreateSubscriptionGroup)
	if !ok {
		return b.errorResponse(c, req, protocol.SubscriptionGroupNotExist, "subscription group [%s] does not exist", h.ConsumerGroup)
	}
	if !group.ConsumeEnable {
		return b.errorResponse(c, req, protocol.NoPermission, "subscription group no permission, %s", h.ConsumerGroup)
	}
	tc, ok := b.topics.Get(h.Topic)
	if !ok {
		return b.errorResponse(c, req, protocol.TopicNotExist, "topic[%s] not exist, apply first please!", h.Topic)
	}
	if !protocol.PermReadable(tc.Perm) {
		return b.errorResponse(c, req, protocol.NoPermission, "the topic[%s] pulling message is forbidden", h.Topic)
	}
	if h.QueueID < 0 || h.QueueID >= tc.ReadQueueNums {
		return b.errorResponse(c, req, protocol.SystemError, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]", h.QueueID, h.Topic, tc.ReadQueueNums, c.RemoteAddr())
	}
	f, code, remark := b.pullFilter(h)
	if code != protocol.Success {
		return b.errorResponse(c, req, code, "%s", remark)
	}
	// Commit offset piggyback: stored only by a master, for pulls that may
	// be suspended (as RocketMQ does).
	if h.SysFlag.HasCommitOffset() && h.SysFlag.HasSuspend() && b.isMaster() {
		b.offsets.Commit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset)
	}
	resp, found := b.pullOnce(req, h, f)
	if found || resp.Code != protocol.PullNotFound || !h.SysFlag.HasSuspend() {
		return resp
	}
	// Long polling: hold the request until a message arrives or the
	// suspend timeout passes, then re-run it without suspension.
	timeout := time.Duration(h.SuspendTimeoutMillis) * time.Millisecond
	if !b.opts.LongPollingEnable {
		timeout = time.Duration(b.opts.ShortPollingTimeMills) * time.Millisecond
	}
	if timeout <= 0 || timeout > 25*time.Second { // the Go client gives up after 30 s
		timeout = 20 * time.Second
	}
	err = b.polls.Hold(&longpoll.Request{
		Topic: h.Topic, QueueID: h.QueueID, Offset: h.QueueOffset, Deadline: time.Now().Add(timeout), Owner: c,
		Match: func(tagsCode int64, props []byte) bool {
			if !f.MatchTagsCode(tagsCode) {
				return false
			}
			if f.Type() == filter.TypeSQL92 {
				return f.MatchProperties(protocol.DecodeProperties(string(props)))
			}
			return true
		},
		Resume: func(bool) {
			resp, _ := b.pullOnce(req, h, f)
			if err := c.Reply(req, resp); err != nil {
				b.log.Debug("reply held pull", "conn", c.RemoteAddr(), "err", err)
			}
		},
	})
	if err != nil {
		// Too many pulls held (maxHeldPullRequests[PerConn]). SYSTEM_BUSY
		// rather than PULL_NOT_FOUND: rocketmq-client-go v2.1.2 (and Java)
		// re-pull at once after "no new message", which would spin against
		// a full broker, while an error code makes them wait 3 s and retry
		// from the same offset, losing nothing.
		b.logHeldRefused(c, err)
		return protocol.NewResponse(req, protocol.SystemBusy, "[OVERLOAD]"+err.Error()+", try again later")
	}
	return nil
}

// logHeldRefused logs the first refused hold and every 1000th, so a
// misbehaving client cannot flood the log.
func (b *Broker) logHeldRefused(c *remoting.Conn, err error) {
	total, conn := b.polls.Refused()
	if n := total + conn; n == 1 || n%1000 == 0 {
		b.log.Warn("long-polling pull refused", "conn", c.RemoteAddr(), "reason", err, "refused", n)
	}
}

// pullFilter builds the message filter of a pull: from the request when it
// carries the SUBSCRIPTION bit, else from the group's heartbeat
// subscription.
func (b *Broker) pullFilter(h *protocol.PullMessageRequestHeader) (*filter.Filter, int16, string) {
	exprType := h.ExpressionType
	if exprType == "" {
		exprType = filter.TypeTag
	}
	if h.SysFlag.HasSubscription() {
		if exprType == filter.TypeSQL92 && !b.opts.EnablePropertyFilter {
			return nil, protocol.SystemError, "the broker does not support consumer to filter message by SQL92 (enablePropertyFilter=false)"
		}
		f, err := filter.New(exprType, h.Subscription, nil)
		if err != nil {
			return nil, protocol.SubscriptionParseFailed, "parse the consumer's subscription[" + h.Subscription + "] failed: " + err.Error()
		}
		return f, protocol.Success, ""
	}
	sub, ok := b.clients.Subscription(h.ConsumerGroup, h.Topic)
	if !ok {
		return nil, protocol.SubscriptionNotExist, "the consumer's subscription not exist, group: " + h.ConsumerGroup + " topic: " + h.Topic
	}
	if sub.SubVersion < h.SubVersion {
		return nil, protocol.SubscriptionNotLatest, "the consumer's subscription not latest"
	}
	if sub.ExpressionType == filter.TypeSQL92 && !b.opts.EnablePropertyFilter {
		return nil, protocol.SystemError, "the broker does not support consumer to filter message by SQL92 (enablePropertyFilter=false)"
	}
	f, err := b.subscriptionFilter(sub.ExpressionType, sub.Expression, sub.Codes)
	if err != nil {
		return nil, protocol.SubscriptionParseFailed, "parse the consumer's subscription[" + sub.Expression + "] failed: " + err.Error()
	}
	return f, protocol.Success, ""
}

// subscriptionFilter compiles a subscription, caching compiled filters
// by expression so that each pull does not re-parse SQL.
func (b *Broker) subscriptionFilter(exprType, expr string, codes []int64) (*filter.Filter, error) {
	key := exprType + "\x00" + expr
	if v, ok := b.filterCache.Load(key); ok {
		return v.(*filter.Filter), nil
	}
	f, err := filter.New(exprType, expr, codes)
	if err != nil {
		return nil, err
	}
	b.filterCache.Store(key, f)
	return f, nil
}

// pullOnce reads from the store and builds the pull response. found tells
// whether messages were returned.
func (b *Broker) pullOnce(req *protocol.Command, h *protocol.PullMessageRequestHeader, f *filter.Filter) (*protocol.Command, bool) {
	res := b.store.GetMessage(h.Topic, h.QueueID, h.QueueOffset, int(h.MaxMsgNums), 0, storeFilterOf(f))
	resp := protocol.NewResponse(req, protocol.Success, "")
	rh := protocol.PullMessageResponseHeader{NextBeginOffset: res.NextBeginOffset, MinOffset: res.MinOffset, MaxOffset: res.MaxOffset}
	if !b.isMaster() && b.opts.SlaveReadEnable {
		rh.SuggestWhichBrokerID = b.brokerID() // keep reading here
	}
	switch res.Status {
	case store.Found:
		resp.Body = res.Data
		b.metrics.byTopic.msgsOut.get(h.Topic).Add(float64(len(res.Records)))
	case store.NoMatchedMessage, store.MessageWasRemoving:
		resp.Code = protocol.PullRetryImmediately
	case store.OffsetFoundNull, store.OffsetOverflowOne:
		resp.Code = protocol.PullNotFound
	case store.OffsetOverflowBadly, store.OffsetTooSmall:
		resp.Code = protocol.PullOffsetMoved
	case store.NoMatchedLogicQueue, store.NoMessageInQueue:
		if h.QueueOffset != 0 {
			resp.Code = protocol.PullOffsetMoved
		} else {
			resp.Code = protocol.PullNotFound
		}
	default:
		resp.Code = protocol.PullRetryImmediately
	}
	if !b.isMaster() && resp.Code == protocol.PullOffsetMoved {
		resp.Code = protocol.PullRetryImmediately
	}
	if resp.Code == protocol.PullOffsetMoved {
		b.log.Warn("pull offset moved", "group", h.ConsumerGroup, "topic", h.Topic, "queue", h.QueueID,
			"requested", h.QueueOffset, "next", res.NextBeginOffset, "status", res.Status.String())
	}
	resp.Header = &rh // written without a map when the request came in binary
	return resp, res.Status == store.Found
}
