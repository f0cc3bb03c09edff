package console

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// HalfMessage is a pending transactional half message on a broker (the
// broker's address and its entry of Tide's half message list).
type HalfMessage struct {
	Broker string `json:"broker"`
	protocol.HalfMessage
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
		hs, err := s.admin.HalfMessages(ctx, addr)
		if err != nil {
			v.Errors = append(v.Errors, fmt.Sprintf("%s (%s): %v", name, addr, err))
			continue
		}
		for _, h := range hs {
			v.Messages = append(v.Messages, HalfMessage{Broker: addr, HalfMessage: h})
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
// half message at offset on the master broker. The signed-in user travels
// in the request as the operator (the broker logs it); the caller audits.
func (s *Server) halfAction(r *http.Request, broker, action string, offset int64) (string, error) {
	ctx, operator := r.Context(), identityOf(r).User
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
	var remark string
	switch action {
	case "resume":
		remark, err = s.admin.ResumeHalfCheck(ctx, broker, offset, operator)
	case "commit", "rollback":
		remark, err = s.admin.EndHalfMessage(ctx, broker, offset, action == "commit", operator)
	default:
		return "", fmt.Errorf("%w: unknown action %q (resume, commit, rollback)", ErrBadRequest, action)
	}
	if err != nil {
		return "", fmt.Errorf("%s half message at offset %d on %s: %w", action, offset, broker, err)
	}
	msg := fmt.Sprintf("%s of the half message at offset %d on %s by %s: OK", action, offset, broker, operator)
	if remark != "" {
		msg += " (" + remark + ")"
	}
	return msg, nil
}
