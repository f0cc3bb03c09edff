package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// DeadLetter is one message of a group's dead letter queue.
type DeadLetter struct {
	MessageView
	OriginTopic string `json:"originTopic"`
	OriginMsgID string `json:"originMsgId"`
}

// DLQView is the dead letter page of a group.
type DLQView struct {
	Group   string         `json:"group"`
	Groups  []string       `json:"-"`
	Offset  int64          `json:"offset"`
	Letters []DeadLetter   `json:"deadLetters"`
	Results []ResendResult `json:"results,omitempty"`
}

// dlqGroups lists the groups that have a dead letter topic.
func (s *Server) dlqGroups(ctx context.Context) []string {
	topics, err := s.admin.Topics(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range topics {
		if g, ok := strings.CutPrefix(t, mqclient.DLQTopicPrefix); ok {
			out = append(out, g)
		}
	}
	return out
}

// deadLetters reads up to limit dead letters of group from offset on.
func (s *Server) deadLetters(ctx context.Context, group string, offset int64, limit int) ([]DeadLetter, error) {
	topic := mqclient.DLQTopicPrefix + group
	qs, err := s.pull.Queues(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("%w: dead letters of %s: %v", ErrNotFound, group, err)
	}
	out := []DeadLetter{}
	err = s.scan(ctx, qs, func(mqclient.Queue) (int64, error) { return offset, nil }, limit, func(m *mqclient.MessageExt) bool {
		out = append(out, DeadLetter{MessageView: viewOf(m), OriginTopic: m.Properties[protocol.PropRetryTopic],
			OriginMsgID: m.Properties[protocol.PropOriginMessageID]})
		return true
	})
	return out, err
}

// ResendResult is the outcome of re-sending one dead letter.
type ResendResult struct {
	OffsetMsgID string `json:"offsetMsgId"`
	Target      string `json:"target,omitempty"`
	OK          bool   `json:"ok"`
	NewMsgID    string `json:"newMsgId,omitempty"`
	Error       string `json:"error,omitempty"`
}

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

// resend re-sends the dead letters ids (offset message ids) of group, to
// %RETRY%group (only that group sees them again) or, with toOrigin, to
// the original topic (every group subscribed to it). Sends are paced at
// Options.ResendRate; each id gets a result. The dead letters stay in the
// DLQ (RocketMQ never deletes single messages). Every result is audited
// with the signed-in user.
func (s *Server) resend(req *http.Request, group string, ids []string, toOrigin bool) []ResendResult {
	ctx := req.Context()
	s.resendM.Lock()
	defer s.resendM.Unlock()
	tick := time.NewTicker(time.Duration(float64(time.Second) / s.opts.ResendRate))
	defer tick.Stop()
	var out []ResendResult
	for i, id := range ids {
		if i > 0 {
			select {
			case <-ctx.Done():
				out = append(out, ResendResult{OffsetMsgID: id, Error: ctx.Err().Error()})
				continue
			case <-tick.C:
			}
		}
		r := ResendResult{OffsetMsgID: id}
		m, err := s.admin.ViewMessage(ctx, id)
		switch {
		case err != nil:
			r.Error = err.Error()
		case m.Topic != mqclient.DLQTopicPrefix+group:
			r.Error = fmt.Sprintf("message is in %s, not in the dead letter queue of %s", m.Topic, group)
		case m.Properties[protocol.PropRetryTopic] == "":
			r.Error = "the dead letter has no RETRY_TOPIC property: original topic unknown"
		default:
			origin := m.Properties[protocol.PropRetryTopic]
			r.Target = mqclient.RetryTopicPrefix + group
			if toOrigin {
				r.Target = origin
			}
			out := &mqclient.Message{Topic: r.Target, Body: m.Body, Tag: m.Tag, Keys: m.Keys, ShardingKey: m.ShardingKey, Flag: m.Flag,
				Properties: map[string]string{}}
			for k, v := range m.Properties {
				if !resendDrop[k] {
					out.Properties[k] = v
				}
			}
			if !toOrigin {
				out.Properties[protocol.PropRetryTopic] = origin
			}
			first := m.Properties[protocol.PropOriginMessageID]
			if first == "" {
				first = m.MsgID
			}
			out.Properties[protocol.PropOriginMessageID] = first
			out.Properties["RESEND_OF"] = m.OffsetMsgID
			res, err := s.prod.Send(ctx, out)
			if err != nil {
				r.Error = err.Error()
			} else {
				r.OK, r.NewMsgID = true, res.MsgID
			}
		}
		var rerr error
		if !r.OK {
			rerr = errors.New(r.Error)
		}
		s.audit(req, ActResendDLQ, fmt.Sprintf("dead letter %s of %s to %s (new id %s)", id, group, r.Target, r.NewMsgID), rerr)
		out = append(out, r)
	}
	return out
}
