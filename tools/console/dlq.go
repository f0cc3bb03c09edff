package console

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/tools/ops"
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
	err = ops.PullRange(ctx, s.pull, qs, func(mqclient.Queue) (int64, error) { return offset, nil }, limit, time.Time{}, func(m *mqclient.MessageExt) bool {
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
		if err == nil {
			err = ops.CheckDeadLetter(m, group)
		}
		if err == nil {
			r.Target, err = ops.ResendTarget(m, group, toOrigin)
		}
		if err == nil {
			var res *mqclient.SendResult
			if res, err = s.prod.Send(ctx, ops.ResendCopy(m, r.Target)); err == nil {
				r.OK, r.NewMsgID = true, res.MsgID
			}
		}
		if err != nil {
			r.Error = err.Error()
		}
		s.audit(req, ActResendDLQ, fmt.Sprintf("dead letter %s of %s to %s (new id %s)", id, group, r.Target, r.NewMsgID), err)
		out = append(out, r)
	}
	return out
}
