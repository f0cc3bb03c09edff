package console

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// maxBody bounds the body shown for a message; JSON has BodySize.
const maxBody = 4096

// MessageView is a stored message as the console shows it.
type MessageView struct {
	MsgID           string            `json:"msgId"`
	OffsetMsgID     string            `json:"offsetMsgId"`
	Topic           string            `json:"topic"`
	Tag             string            `json:"tag,omitempty"`
	Keys            []string          `json:"keys,omitempty"`
	BrokerName      string            `json:"brokerName"`
	QueueID         int32             `json:"queueId"`
	QueueOffset     int64             `json:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset"`
	ReconsumeTimes  int32             `json:"reconsumeTimes"`
	BornTime        time_             `json:"bornTime"`
	StoreTime       time_             `json:"storeTime"`
	BornHost        string            `json:"bornHost"`
	StoreHost       string            `json:"storeHost"`
	Properties      map[string]string `json:"properties,omitempty"`
	// Body is the body when it is valid UTF-8 (cut at maxBody), else
	// BodyBase64 holds it.
	Body       string `json:"body,omitempty"`
	BodyBase64 string `json:"bodyBase64,omitempty"`
	BodySize   int    `json:"bodySize"`
}

func viewOf(m *mqclient.MessageExt) MessageView {
	v := MessageView{MsgID: m.MsgID, OffsetMsgID: m.OffsetMsgID, Topic: m.Topic, Tag: m.Tag, Keys: m.Keys, BrokerName: m.Queue.BrokerName,
		QueueID: m.Queue.QueueID, QueueOffset: m.QueueOffset, CommitLogOffset: m.CommitLogOffset, ReconsumeTimes: m.ReconsumeTimes,
		BornTime: time_{m.BornTimestamp}, StoreTime: time_{m.StoreTimestamp}, BornHost: m.BornHost, StoreHost: m.StoreHost,
		Properties: m.Properties, BodySize: len(m.Body)}
	body := m.Body
	if len(body) > maxBody {
		body = body[:maxBody]
	}
	if utf8.Valid(body) {
		v.Body = string(body)
	} else {
		v.BodyBase64 = base64.StdEncoding.EncodeToString(body)
	}
	return v
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

// parseTime reads Unix milliseconds, "now", RFC 3339, or the
// datetime-local input format (local time).
func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "now" {
		return time.Now(), nil
	}
	var ms int64
	if _, err := fmt.Sscanf(s, "%d", &ms); err == nil && fmt.Sprint(ms) == s {
		return time.UnixMilli(ms), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: bad time %q: want Unix ms, now, RFC 3339 or yyyy-mm-ddThh:mm", ErrBadRequest, s)
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
	if _, _, err := protocol.ParseOffsetMsgID(id); err == nil {
		if m, err := s.admin.ViewMessage(ctx, id); err == nil {
			if m.Queue.BrokerName == "" {
				m.Queue.BrokerName = s.brokerNameOf(ctx, m.StoreHost)
			}
			return []*mqclient.MessageExt{m}, nil
		} else if topic == "" {
			return nil, fmt.Errorf("%w: message %s: %v", ErrNotFound, id, err)
		}
	}
	if topic == "" {
		return nil, fmt.Errorf("%w: %q is not an offset message id; choose its topic to look it up as a unique id", ErrBadRequest, id)
	}
	return s.admin.QueryByUniqID(ctx, topic, id)
}

// brokerNameOf maps a store host address to its broker name ("" if none).
func (s *Server) brokerNameOf(ctx context.Context, addr string) string {
	bs, err := s.brokers(ctx)
	if err != nil {
		return ""
	}
	for _, b := range bs {
		if b.Addr == addr {
			return b.BrokerName
		}
	}
	return ""
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
	err = s.scan(ctx, qs, func(mq mqclient.Queue) (int64, error) {
		return s.admin.SearchOffset(ctx, master[mq.BrokerName], mq, begin)
	}, q.Max, func(m *mqclient.MessageExt) bool {
		if m.StoreTimestamp.After(end) {
			return false
		}
		if !m.StoreTimestamp.Before(begin) {
			out = append(out, m)
		}
		return true
	})
	return out, err
}

// scan pulls each queue of qs from its start offset up to the queue end
// as it was when the queue's reading began, at most limit messages in
// total. visit returning false ends the queue (not the scan).
func (s *Server) scan(ctx context.Context, qs []mqclient.Queue, start func(mqclient.Queue) (int64, error), limit int,
	visit func(*mqclient.MessageExt) bool) error {
	n := 0
	for _, q := range qs {
		off, err := start(q)
		if err != nil {
			return err
		}
		stop := int64(-1)
	queue:
		for n < limit {
			res, err := s.pull.Pull(ctx, q, "*", off, min(32, limit-n), 0)
			if err != nil {
				return err
			}
			if stop < 0 {
				stop = res.MaxOffset
			}
			if res.Status == mqclient.PullOffsetIllegal {
				if res.NextOffset == off {
					break
				}
				off = res.NextOffset
				continue
			}
			for _, m := range res.Messages {
				if m.QueueOffset >= stop {
					break queue
				}
				n++
				if !visit(m) || n >= limit {
					break queue
				}
			}
			if res.Status == mqclient.PullNoNewMessage || res.NextOffset <= off || res.NextOffset >= stop {
				break
			}
			off = res.NextOffset
		}
	}
	return nil
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
