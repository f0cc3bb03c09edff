package console

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// HalfMessage is a pending transactional half message on a broker (Tide
// code 10001).
type HalfMessage struct {
	Broker          string    `json:"broker"`
	QueueOffset     int64     `json:"queueOffset"`
	CommitLogOffset int64     `json:"commitLogOffset"`
	ProducerGroup   string    `json:"producerGroup"`
	Topic           string    `json:"topic"`
	MsgID           string    `json:"msgId"`
	StoreTime       time.Time `json:"storeTime"`
	Checks          int       `json:"checks"`
	NextCheck       time.Time `json:"nextCheck"`
	Parked          bool      `json:"parked"`
}

// Age is how long the half message has waited.
func (h HalfMessage) Age() time.Duration { return time.Since(h.StoreTime).Round(time.Second) }

// HalfView is the half message page.
type HalfView struct {
	Messages []HalfMessage `json:"halfMessages"`
	Errors   []string      `json:"errors,omitempty"`
	Result   string        `json:"result,omitempty"`
}

func (s *Server) halfMessages(ctx context.Context) (*HalfView, error) {
	ms, err := s.masters(ctx)
	if err != nil {
		return nil, err
	}
	v := &HalfView{Messages: []HalfMessage{}}
	for name, addr := range ms {
		resp, err := s.invoke(ctx, addr, protocol.NewRequest(protocol.TideListHalfMessages, nil, nil))
		if err != nil {
			v.Errors = append(v.Errors, fmt.Sprintf("%s (%s): %v", name, addr, err))
			continue
		}
		var hs []HalfMessage
		if err := json.Unmarshal(resp.Body, &hs); err != nil {
			v.Errors = append(v.Errors, fmt.Sprintf("%s (%s): bad body: %v", name, addr, err))
			continue
		}
		for _, h := range hs {
			h.Broker = addr
			v.Messages = append(v.Messages, h)
		}
	}
	sort.Slice(v.Messages, func(i, j int) bool {
		x, y := v.Messages[i], v.Messages[j]
		if x.Broker != y.Broker {
			return x.Broker < y.Broker
		}
		return x.QueueOffset < y.QueueOffset
	})
	return v, nil
}

// halfAction resumes checks of (10002), commits or rolls back (10003) the
// half message at offset on the master broker. The operator travels in
// the request (the broker logs it) and is logged here too (audit).
func (s *Server) halfAction(ctx context.Context, broker, action string, offset int64, operator, remote string) (string, error) {
	ms, err := s.masters(ctx)
	if err != nil {
		return "", err
	}
	known := false
	for _, a := range ms {
		known = known || a == broker
	}
	if !known {
		return "", fmt.Errorf("%w: %s is not a master of the cluster", ErrBadRequest, broker)
	}
	ext := map[string]string{"tranStateTableOffset": strconv.FormatInt(offset, 10), "operator": operator}
	code := protocol.TideForceEndTransaction
	switch action {
	case "resume":
		code = protocol.TideResumeHalfCheck
	case "commit":
		ext["commitOrRollback"] = strconv.Itoa(int(protocol.SysFlagTxCommit))
	case "rollback":
		ext["commitOrRollback"] = strconv.Itoa(int(protocol.SysFlagTxRollback))
	default:
		return "", fmt.Errorf("%w: unknown action %q (resume, commit, rollback)", ErrBadRequest, action)
	}
	resp, err := s.invoke(ctx, broker, protocol.NewRequest(code, ext, nil))
	s.log.Info("audit: half message "+action, "operator", operator, "remote", remote, "broker", broker, "queueOffset", offset, "err", err)
	if err != nil {
		return "", fmt.Errorf("%s half message at offset %d on %s: %w", action, offset, broker, err)
	}
	msg := fmt.Sprintf("%s of the half message at offset %d on %s by %s: OK", action, offset, broker, operator)
	if resp.Remark != "" {
		msg += " (" + resp.Remark + ")"
	}
	return msg, nil
}
