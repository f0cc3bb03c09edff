package mqclient

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// This file holds the Admin's requests to one broker, addressed by
// host:port (a master's address from ClusterInfo or TopicRoute): the
// RocketMQ admin codes tools need and Tide's own codes (half messages,
// replication status, timer recall). Each returns the transport error, the
// broker's answer as a *protocol.Error (resp.Err()) or a decoding error,
// without adding context: callers name the broker and the object.

// call sends a request to addr and fails on any answer but SUCCESS.
func (a *Admin) call(ctx context.Context, addr string, code int16, h protocol.Header) (*protocol.Command, error) {
	var ext map[string]string
	if h != nil {
		ext = h.Encode()
	}
	resp, err := a.c.invoke(ctx, addr, protocol.NewRequest(code, ext, nil), a.s.requestTimeout)
	if err != nil {
		return nil, err
	}
	if err := resp.Err(); err != nil {
		return nil, err
	}
	return resp, nil
}

// offsetCall is call for requests answered by an OffsetResponseHeader.
func (a *Admin) offsetCall(ctx context.Context, addr string, code int16, h protocol.Header) (int64, error) {
	resp, err := a.call(ctx, addr, code, h)
	if err != nil {
		return 0, err
	}
	var oh protocol.OffsetResponseHeader
	if err := oh.Decode(resp.ExtFields); err != nil {
		return 0, err
	}
	return oh.Offset, nil
}

// HalfMessages lists the pending and parked half messages of the broker
// at addr (Tide's TideListHalfMessages, oldest first). A RocketMQ broker
// answers an error wrapping ErrNotSupported.
func (a *Admin) HalfMessages(ctx context.Context, addr string) ([]protocol.HalfMessage, error) {
	resp, err := a.call(ctx, addr, protocol.TideListHalfMessages, nil)
	if err != nil {
		return nil, err
	}
	return protocol.DecodeHalfMessages(resp.Body)
}

// ResumeHalfCheck restarts the checks of the parked half message at
// queueOffset (HalfMessage.QueueOffset) on addr. operator is written to
// the broker's audit log. The remark is the broker's note, if any.
func (a *Admin) ResumeHalfCheck(ctx context.Context, addr string, queueOffset int64, operator string) (remark string, err error) {
	h := protocol.HalfActionRequestHeader{TranStateTableOffset: queueOffset, Operator: operator}
	resp, err := a.call(ctx, addr, protocol.TideResumeHalfCheck, &h)
	if err != nil {
		return "", err
	}
	return resp.Remark, nil
}

// EndHalfMessage commits (commit true) or rolls back the pending or
// parked half message at queueOffset on addr, as an operator's decision.
// The remark says when a decision had already been taken (nothing
// changed).
func (a *Admin) EndHalfMessage(ctx context.Context, addr string, queueOffset int64, commit bool, operator string) (remark string, err error) {
	h := protocol.HalfActionRequestHeader{TranStateTableOffset: queueOffset, CommitOrRollback: protocol.SysFlagTxRollback, Operator: operator}
	if commit {
		h.CommitOrRollback = protocol.SysFlagTxCommit
	}
	resp, err := a.call(ctx, addr, protocol.TideForceEndTransaction, &h)
	if err != nil {
		return "", err
	}
	return resp.Remark, nil
}

// HAStatus returns the replication state of the broker at addr (Tide's
// TideHAStatus).
func (a *Admin) HAStatus(ctx context.Context, addr string) (*protocol.HAStatus, error) {
	resp, err := a.call(ctx, addr, protocol.TideHAStatus, nil)
	if err != nil {
		return nil, err
	}
	return protocol.DecodeHAStatus(resp.Body)
}

// RecallResult is the outcome of RecallTimer.
type RecallResult int

// Outcomes of RecallTimer.
const (
	// TimerRecalled: the timer will never fire.
	TimerRecalled RecallResult = iota
	// TimerAlreadyFired: the timer fired before the recall.
	TimerAlreadyFired
	// TimerNotFound: no pending timer has the handle.
	TimerNotFound
)

// RecallTimer cancels the timer message of topic whose UNIQ_KEY
// (SendResult.MsgID) is handle on the broker at addr (Tide's
// TideRecallTimer); under ACL it needs PUB on topic. An empty topic is an
// operator's recall in any topic (admin-only under ACL). A broker without
// timers answers an error wrapping ErrNotSupported; use Producer.Recall
// there.
func (a *Admin) RecallTimer(ctx context.Context, addr, topic, handle string) (RecallResult, error) {
	h := protocol.RecallTimerRequestHeader{Handle: handle, Topic: topic}
	resp, err := a.c.invoke(ctx, addr, protocol.NewRequest(protocol.TideRecallTimer, h.Encode(), nil), a.s.requestTimeout)
	if err != nil {
		return TimerNotFound, err
	}
	switch resp.Code {
	case protocol.Success:
		return TimerRecalled, nil
	case protocol.TideAlreadyDelivered:
		return TimerAlreadyFired, nil
	case protocol.QueryNotFound:
		return TimerNotFound, nil
	}
	return TimerNotFound, resp.Err()
}

// RuntimeInfo returns the broker's runtime figures by name
// (GET_BROKER_RUNTIME_INFO: msgPutTotal, msgGetTotal, commit log offsets,
// ...).
func (a *Admin) RuntimeInfo(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := a.call(ctx, addr, protocol.GetBrokerRuntimeInfo, nil)
	if err != nil {
		return nil, err
	}
	return protocol.DecodeRuntimeInfo(resp.Body)
}

// ConsumeStats returns group's offsets and lag on the broker at addr,
// for topic or, with topic "", all of the group's topics
// (GET_CONSUME_STATS).
func (a *Admin) ConsumeStats(ctx context.Context, addr, group, topic string) (*protocol.ConsumeStats, error) {
	h := protocol.GetConsumeStatsRequestHeader{ConsumerGroup: group, Topic: topic}
	resp, err := a.call(ctx, addr, protocol.GetConsumeStats, &h)
	if err != nil {
		return nil, err
	}
	return protocol.DecodeConsumeStats(resp.Body)
}

// ConsumerConnections returns group's live members and subscriptions as
// the broker at addr knows them (GET_CONSUMER_CONNECTION_LIST). A group
// with no member there is (nil, nil).
func (a *Admin) ConsumerConnections(ctx context.Context, addr, group string) (*protocol.ConsumerConnection, error) {
	h := protocol.ConsumerGroupHeader{ConsumerGroup: group}
	resp, err := a.c.invoke(ctx, addr, protocol.NewRequest(protocol.GetConsumerConnectionList, h.Encode(), nil), a.s.requestTimeout)
	if err != nil {
		return nil, err
	}
	if resp.Code == protocol.ConsumerNotOnline {
		return nil, nil
	}
	if err := resp.Err(); err != nil {
		return nil, err
	}
	return protocol.DecodeConsumerConnection(resp.Body)
}

// ProducerConnections returns the live members of a producer group as the
// broker at addr knows them (GET_PRODUCER_CONNECTION_LIST), most recently
// heard from first on a Tide broker. A group with no member there is
// (nil, nil): the broker's SYSTEM_ERROR "the producer group[...] not
// exist", as Apache RocketMQ answers it. The request needs an admin
// account on a broker with ACL.
func (a *Admin) ProducerConnections(ctx context.Context, addr, group string) (*protocol.ProducerConnection, error) {
	h := protocol.ProducerGroupHeader{ProducerGroup: group}
	resp, err := a.c.invoke(ctx, addr, protocol.NewRequest(protocol.GetProducerConnectionList, h.Encode(), nil), a.s.requestTimeout)
	if err != nil {
		return nil, err
	}
	if resp.Code == protocol.SystemError && strings.HasSuffix(resp.Remark, "] not exist") {
		return nil, nil
	}
	if err := resp.Err(); err != nil {
		return nil, err
	}
	return protocol.DecodeProducerConnection(resp.Body)
}

// TopicStats returns the min and max offsets of topic's queues on the
// broker at addr (GET_TOPIC_STATS_INFO).
func (a *Admin) TopicStats(ctx context.Context, addr, topic string) (*protocol.TopicStatsTable, error) {
	h := protocol.TopicHeader{Topic: topic}
	resp, err := a.call(ctx, addr, protocol.GetTopicStatsInfo, &h)
	if err != nil {
		return nil, err
	}
	return protocol.DecodeTopicStatsTable(resp.Body)
}

// TopicConfigs returns the whole topic table of the broker at addr
// (GET_ALL_TOPIC_CONFIG).
func (a *Admin) TopicConfigs(ctx context.Context, addr string) (*protocol.TopicConfigSerializeWrapper, error) {
	resp, err := a.call(ctx, addr, protocol.GetAllTopicConfig, nil)
	if err != nil {
		return nil, err
	}
	return protocol.DecodeTopicConfigWrapper(resp.Body)
}

// SubscriptionGroups returns the subscription group table of the broker
// at addr (GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
func (a *Admin) SubscriptionGroups(ctx context.Context, addr string) (*protocol.SubscriptionGroupWrapper, error) {
	resp, err := a.call(ctx, addr, protocol.GetAllSubscriptionGroupConfig, nil)
	if err != nil {
		return nil, err
	}
	return protocol.DecodeSubscriptionGroupWrapper(resp.Body)
}

// ConsumedBy lists the groups with offsets or subscriptions on topic at
// the broker at addr (QUERY_TOPIC_CONSUME_BY_WHO).
func (a *Admin) ConsumedBy(ctx context.Context, addr, topic string) ([]string, error) {
	h := protocol.TopicHeader{Topic: topic}
	resp, err := a.call(ctx, addr, protocol.QueryTopicConsumeByWho, &h)
	if err != nil {
		return nil, err
	}
	gl, err := protocol.DecodeGroupList(resp.Body)
	if err != nil {
		return nil, err
	}
	return gl.GroupList, nil
}

// CreateTopicOn creates or updates topic on the broker at addr alone
// (UPDATE_AND_CREATE_TOPIC); CreateTopic does it on many. The broker
// validates the name. cfg.Cluster and cfg.BrokerAddrs are ignored.
func (a *Admin) CreateTopicOn(ctx context.Context, addr, topic string, cfg TopicConfig) error {
	_, err := a.call(ctx, addr, protocol.UpdateAndCreateTopic, cfg.header(topic))
	return err
}

// CommittedOffset returns group's committed offset of a queue on the
// broker at addr, -1 when the broker has none (QUERY_CONSUMER_OFFSET).
func (a *Admin) CommittedOffset(ctx context.Context, addr, group string, q Queue) (int64, error) {
	h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: q.Topic, QueueID: q.QueueID}
	resp, err := a.c.invoke(ctx, addr, protocol.NewRequest(protocol.QueryConsumerOffset, h.Encode(), nil), a.s.requestTimeout)
	if err != nil {
		return -1, err
	}
	if resp.Code != protocol.Success {
		return -1, nil
	}
	var oh protocol.OffsetResponseHeader
	if err := oh.Decode(resp.ExtFields); err != nil {
		return -1, nil
	}
	return oh.Offset, nil
}

// SearchOffset returns the first offset of a queue on the broker at addr
// stored at or after t (SEARCH_OFFSET_BY_TIMESTAMP).
func (a *Admin) SearchOffset(ctx context.Context, addr string, q Queue, t time.Time) (int64, error) {
	h := protocol.SearchOffsetRequestHeader{Topic: q.Topic, QueueID: q.QueueID, Timestamp: t.UnixMilli()}
	return a.offsetCall(ctx, addr, protocol.SearchOffsetByTimestamp, &h)
}

// CommitOffset sets group's committed offset of a queue on the broker at
// addr (UPDATE_CONSUMER_OFFSET). Running consumers of the group may
// overwrite it with their own progress.
func (a *Admin) CommitOffset(ctx context.Context, addr, group string, q Queue, offset int64) error {
	h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: q.Topic, QueueID: q.QueueID, CommitOffset: offset}
	_, err := a.call(ctx, addr, protocol.UpdateConsumerOffset, &h)
	return err
}

// OffsetReset is the outcome of ResetOffset for one queue.
type OffsetReset struct {
	OldOffset int64 // committed offset before (-1: none)
	NewOffset int64 // committed offset after
}

// ResetOffset moves group's committed offset of a queue on the broker at
// addr to the first message stored at or after at. With rollbackOnly an
// offset already at or before that point is left alone (NewOffset =
// OldOffset). The error names the step that failed ("query offset: ",
// "search offset: ", "update offset: "); the result holds what was known
// by then.
func (a *Admin) ResetOffset(ctx context.Context, addr, group string, q Queue, at time.Time, rollbackOnly bool) (OffsetReset, error) {
	res := OffsetReset{OldOffset: -1, NewOffset: -1}
	old, err := a.CommittedOffset(ctx, addr, group, q)
	if err != nil {
		return res, fmt.Errorf("query offset: %w", err)
	}
	res.OldOffset = old
	if res.NewOffset, err = a.SearchOffset(ctx, addr, q, at); err != nil {
		res.NewOffset = -1
		return res, fmt.Errorf("search offset: %w", err)
	}
	if rollbackOnly && res.OldOffset >= 0 && res.OldOffset <= res.NewOffset {
		res.NewOffset = res.OldOffset
		return res, nil
	}
	if err := a.CommitOffset(ctx, addr, group, q, res.NewOffset); err != nil {
		return res, fmt.Errorf("update offset: %w", err)
	}
	return res, nil
}
