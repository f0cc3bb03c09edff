package console

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/tools/ops"
)

// maxBody bounds the body shown for a message; JSON has BodySize.
const maxBody = 4096

// MessageView is a stored message as the console shows it.
type MessageView struct {
	ops.MessageFields
	Tag        string `json:"tag,omitempty"`
	BrokerName string `json:"brokerName"`
	BornTime   time_  `json:"bornTime"`
	StoreTime  time_  `json:"storeTime"`
}

func viewOf(m *mqclient.MessageExt) MessageView {
	return MessageView{MessageFields: ops.FieldsOf(m, maxBody), Tag: m.Tag, BrokerName: m.Queue.BrokerName,
		BornTime: time_{m.BornTimestamp}, StoreTime: time_{m.StoreTimestamp}}
}

// SortedProperties returns the properties as sorted key/value pairs.
func (v MessageView) SortedProperties() [][2]string {
	var out [][2]string
	for _, k := range sortedKeys(v.Properties) {
		out = append(out, [2]string{k, v.Properties[k]})
	}
	return out
}

// SearchQuery is what the message search form asks for.
type SearchQuery struct {
	Topic string `json:"topic"`
	Key   string `json:"key,omitempty"`
	ID    string `json:"id,omitempty"`
	Begin string `json:"begin,omitempty"`
	End   string `json:"end,omitempty"`
	Max   int    `json:"max"`
}

// SearchView is the message search page.
type SearchView struct {
	Query    SearchQuery   `json:"query"`
	Topics   []string      `json:"-"`
	Messages []MessageView `json:"messages"`
	Searched bool          `json:"-"`
}

// parseTime reads a point in time (ops.ParseTime); a bad one is
// ErrBadRequest.
func parseTime(s string) (time.Time, error) {
	t, err := ops.ParseTime(s)
	if err != nil {
		return t, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return t, nil
}

// search finds messages by offset or unique id, by key, or by store time.
func (s *Server) search(ctx context.Context, q SearchQuery) ([]MessageView, error) {
	if q.Max <= 0 || q.Max > 1000 {
		q.Max = 64
	}
	var ms []*mqclient.MessageExt
	var err error
	switch {
	case q.ID != "":
		ms, err = s.findByID(ctx, q.Topic, q.ID)
	case q.Topic == "":
		return nil, fmt.Errorf("%w: a topic is needed to search by key or time", ErrBadRequest)
	case q.Key != "":
		begin, end := time.UnixMilli(0), time.Now().Add(time.Hour)
		if q.Begin != "" {
			if begin, err = parseTime(q.Begin); err != nil {
				return nil, err
			}
		}
		if q.End != "" {
			if end, err = parseTime(q.End); err != nil {
				return nil, err
			}
		}
		ms, err = s.admin.QueryByKey(ctx, q.Topic, q.Key, q.Max, begin, end)
	case q.Begin != "":
		ms, err = s.byTime(ctx, q)
	default:
		return nil, fmt.Errorf("%w: give a message id, a key, or a begin time", ErrBadRequest)
	}
	if err != nil {
		return nil, err
	}
	sort.SliceStable(ms, func(i, j int) bool { return storedBefore(ms[i], ms[j]) })
	out := make([]MessageView, 0, len(ms))
	for _, m := range ms {
		out = append(out, viewOf(m))
	}
	return out, nil
}

// findByID looks id up as an offset message id, then as a unique (client)
// id of topic.
func (s *Server) findByID(ctx context.Context, topic, id string) ([]*mqclient.MessageExt, error) {
	ms, err := ops.FindByID(ctx, s.admin, topic, id)
	switch {
	case errors.Is(err, ops.ErrNotFound):
		return nil, fmt.Errorf("%w: %v", ErrNotFound, err)
	case errors.Is(err, ops.ErrNeedTopic):
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return ms, err
}

// byTime reads the messages of q.Topic stored between q.Begin and q.End
// (default now), at most q.Max, queue by queue.
func (s *Server) byTime(ctx context.Context, q SearchQuery) ([]*mqclient.MessageExt, error) {
	begin, err := parseTime(q.Begin)
	if err != nil {
		return nil, err
	}
	end := time.Now()
	if q.End != "" {
		if end, err = parseTime(q.End); err != nil {
			return nil, err
		}
	}
	r, err := s.admin.TopicRoute(ctx, q.Topic)
	if err != nil {
		return nil, err
	}
	master := map[string]string{}
	for _, bd := range r.BrokerDatas {
		master[bd.BrokerName] = bd.BrokerAddrs[protocol.MasterID]
	}
	qs, err := s.pull.Queues(ctx, q.Topic)
	if err != nil {
		return nil, err
	}
	var out []*mqclient.MessageExt
	err = ops.PullRange(ctx, s.pull, qs, func(mq mqclient.Queue) (int64, error) {
		return s.admin.SearchOffset(ctx, master[mq.BrokerName], mq, begin)
	}, q.Max, end, func(m *mqclient.MessageExt) bool {
		if !m.StoreTimestamp.Before(begin) {
			out = append(out, m)
		}
		return true
	})
	return out, err
}

// Delivery is a consumer group's state for one message.
type Delivery struct {
	Group string `json:"group"`
	// State: consumed, pending, retried (consumed after failures: see
	// Retries) or dead-lettered.
	State string `json:"state"`
	// Retries are the copies of the message in the group's retry topic.
	Retries int `json:"retries"`
	// DLQ holds the dead letter's offset message id when it is in the DLQ.
	DLQ   string `json:"dlqOffsetMsgId,omitempty"`
	Error string `json:"error,omitempty"`
}

// MessageDetail is the page of one message.
type MessageDetail struct {
	Message    MessageView `json:"message"`
	Deliveries []Delivery  `json:"deliveries"`
}

// deliveries reports, for every group consuming m's topic, whether its
// committed offset passed m, and how many copies of m sit in the group's
// retry and dead letter topics (found by m's unique id, which resends
// and send-backs keep).
func (s *Server) deliveries(ctx context.Context, m MessageView) []Delivery {
	out := []Delivery{}
	topic := m.Topic
	if strings.HasPrefix(topic, protocol.RetryTopicPrefix) || strings.HasPrefix(topic, protocol.DLQTopicPrefix) {
		return out
	}
	groups, err := s.consumedBy(ctx, topic)
	if err != nil {
		return []Delivery{{Group: "?", State: "unknown", Error: err.Error()}}
	}
	ms, err := s.masters(ctx)
	if err != nil {
		return []Delivery{{Group: "?", State: "unknown", Error: err.Error()}}
	}
	uniq := m.Properties[protocol.PropUniqKey]
	if uniq == "" {
		uniq = m.MsgID
	}
	for _, g := range groups {
		d := Delivery{Group: g, State: "pending"}
		off, err := s.admin.CommittedOffset(ctx, ms[m.BrokerName], g, mqclient.Queue{Topic: topic, QueueID: m.QueueID})
		if err != nil {
			d.State, d.Error = "unknown", err.Error()
		} else if off > m.QueueOffset {
			d.State = "consumed"
		}
		if rs, err := s.admin.QueryByUniqID(ctx, protocol.RetryTopic(g), uniq); err == nil {
			d.Retries = len(rs)
			if d.Retries > 0 && d.State == "consumed" {
				d.State = "retried"
			}
		}
		if ds, err := s.admin.QueryByUniqID(ctx, protocol.DLQTopic(g), uniq); err == nil && len(ds) > 0 {
			d.State, d.DLQ = "dead-lettered", ds[len(ds)-1].OffsetMsgID
		}
		out = append(out, d)
	}
	return out
}

func (s *Server) message(ctx context.Context, topic, id string) (*MessageDetail, error) {
	ms, err := s.findByID(ctx, topic, id)
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("%w: message %s", ErrNotFound, id)
	}
	v := viewOf(ms[0])
	return &MessageDetail{Message: v, Deliveries: s.deliveries(ctx, v)}, nil
}

// storedBefore orders messages by store time, then (same millisecond) by
// commit log offset, which is the store order on one broker.
func storedBefore(a, b *mqclient.MessageExt) bool {
	if !a.StoreTimestamp.Equal(b.StoreTimestamp) {
		return a.StoreTimestamp.Before(b.StoreTimestamp)
	}
	return a.CommitLogOffset < b.CommitLogOffset
}
