package ops

import (
	"fmt"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// resendDrop are properties the broker or client manages: a re-sent
// message gets fresh ones.
var resendDrop = map[string]bool{
	protocol.PropUniqKey: true, protocol.PropRetryTopic: true, protocol.PropOriginMessageID: true, protocol.PropRealTopic: true,
	protocol.PropRealQueueID: true, protocol.PropDelayLevel: true, protocol.PropCluster: true, protocol.PropMinOffset: true,
	protocol.PropMaxOffset: true, protocol.PropReconsumeTime: true, protocol.PropMaxReconsumeTimes: true,
	protocol.PropConsumeStartTime: true, protocol.PropWaitStoreMsgOK: true, protocol.PropTransactionPrepared: true,
	protocol.PropProducerGroup: true, protocol.PropMsgRegion: true, protocol.PropTraceSwitch: true,
	protocol.PropTransactionCheckTimes: true, protocol.PropTranPreparedQueueOffset: true, protocol.PropTransactionID: true,
	protocol.PropTimerDeliverMS: true, protocol.PropTimerDelayMS: true, protocol.PropTimerDelaySec: true,
}

// PropResendOf is the property a re-sent dead letter carries: the offset
// message id of the dead letter it copies.
const PropResendOf = "RESEND_OF"

// ResendTarget is where dead letter m of group goes when re-sent:
// %RETRY%group (only that group consumes it again) or, with toOrigin, its
// original topic (every group subscribed to it). ErrNoOrigin when m does
// not name its original topic.
func ResendTarget(m *mqclient.MessageExt, group string, toOrigin bool) (string, error) {
	origin := m.Properties[protocol.PropRetryTopic]
	switch {
	case origin == "":
		return "", ErrNoOrigin
	case toOrigin:
		return origin, nil
	}
	return mqclient.RetryTopicPrefix + group, nil
}

// ResendCopy builds the copy of dead letter m to send to target (from
// ResendTarget). A copy sent to a retry topic carries RETRY_TOPIC = the
// original topic, so the group's consumers see it under that topic;
// ORIGIN_MESSAGE_ID keeps the first id for idempotency checks; RESEND_OF
// names the dead letter. Properties the broker or client manages are
// dropped. The dead letter itself stays in the DLQ (RocketMQ never
// deletes single messages).
func ResendCopy(m *mqclient.MessageExt, target string) *mqclient.Message {
	origin := m.Properties[protocol.PropRetryTopic]
	out := &mqclient.Message{Topic: target, Body: m.Body, Tag: m.Tag, Keys: m.Keys, ShardingKey: m.ShardingKey, Flag: m.Flag,
		Properties: map[string]string{}}
	for k, v := range m.Properties {
		if !resendDrop[k] {
			out.Properties[k] = v
		}
	}
	if target != origin {
		out.Properties[protocol.PropRetryTopic] = origin
	}
	first := m.Properties[protocol.PropOriginMessageID]
	if first == "" {
		first = m.MsgID
	}
	out.Properties[protocol.PropOriginMessageID] = first
	out.Properties[PropResendOf] = m.OffsetMsgID
	return out
}

// CheckDeadLetter reports whether m is a dead letter of group (stored in
// %DLQ%group).
func CheckDeadLetter(m *mqclient.MessageExt, group string) error {
	if m.Topic != mqclient.DLQTopicPrefix+group {
		return fmt.Errorf("message is in %s, not in the dead letter queue of %s", m.Topic, group)
	}
	return nil
}
