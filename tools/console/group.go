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

// QueueLag is a group's position in one queue.
type QueueLag struct {
	ops.QueueProgress
	LastTimestamp time_ `json:"lastConsumedStoreTime"`
}

// consumeStats merges GET_CONSUME_STATS of group (topic "" = all of the
// group's topics) from every master, sorted.
func (s *Server) consumeStats(ctx context.Context, group, topic string) ([]QueueLag, error) {
	ms, err := s.masterList(ctx)
	if err != nil {
		return nil, err
	}
	qs, _, err := ops.Progress(ctx, s.admin, ms, group, topic)
	if err != nil {
		return nil, err
	}
	out := make([]QueueLag, 0, len(qs))
	for _, q := range qs {
		out = append(out, QueueLag{QueueProgress: q, LastTimestamp: time_{q.LastConsumed}})
	}
	return out, nil
}

// Members are a group's online clients and subscriptions.
type Members struct {
	Online bool `json:"online"`
	ops.GroupConnections
}

// members merges GET_CONSUMER_CONNECTION_LIST of group from every master.
func (s *Server) members(ctx context.Context, group string) (*Members, error) {
	ms, err := s.masterList(ctx)
	if err != nil {
		return nil, err
	}
	gc, online, err := ops.Connections(ctx, s.admin, ms, group)
	if err != nil {
		return nil, err
	}
	return &Members{Online: online, GroupConnections: *gc}, nil
}

// GroupSummary is a row of the groups page.
type GroupSummary struct {
	Group   string `json:"group"`
	Members int    `json:"members"`
	Topics  int    `json:"topics"`
	Lag     int64  `json:"lag"`
	DLQ     bool   `json:"hasDlq"`
	Error   string `json:"error,omitempty"`
}

// GroupsView is the groups page.
type GroupsView struct {
	Groups []GroupSummary `json:"groups"`
	All    bool           `json:"all"`
}

// systemGroup tells RocketMQ's and the tools' built-in groups apart.
func systemGroup(g string) bool {
	switch g {
	case "TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PERMISSION",
		"CID_ONSAPI_OWNER", "CID_ONSAPI_PULL", "CID_RMQ_SYS_TRANS", "CID_SYS_RMQ_TRANS":
		return true
	}
	return strings.HasPrefix(g, "CID_RMQ_SYS_")
}

func (s *Server) groups(ctx context.Context, all bool) (*GroupsView, error) {
	ms, err := s.masters(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for name, addr := range ms {
		w, err := s.admin.SubscriptionGroups(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("groups on %s: %w", name, err)
		}
		for g := range w.SubscriptionGroupTable {
			names[g] = true
		}
	}
	topics, _ := s.admin.Topics(ctx)
	dlq := map[string]bool{}
	for _, t := range topics {
		if g, ok := strings.CutPrefix(t, protocol.DLQTopicPrefix); ok {
			dlq[g] = true
		}
	}
	v := &GroupsView{Groups: []GroupSummary{}, All: all}
	for _, g := range sortedKeys(names) {
		if !all && systemGroup(g) {
			continue
		}
		gs := GroupSummary{Group: g, DLQ: dlq[g]}
		if m, err := s.members(ctx, g); err != nil {
			gs.Error = err.Error()
		} else {
			gs.Members = len(m.Connections)
		}
		qs, err := s.consumeStats(ctx, g, "")
		if err != nil && gs.Error == "" {
			gs.Error = err.Error()
		}
		seen := map[string]bool{}
		for _, q := range qs {
			gs.Lag += q.Lag
			seen[q.Topic] = true
		}
		gs.Topics = len(seen)
		v.Groups = append(v.Groups, gs)
	}
	return v, nil
}

// GroupView is the page of one group.
type GroupView struct {
	Group    string     `json:"group"`
	Members  *Members   `json:"members"`
	Queues   []QueueLag `json:"queues"`
	TotalLag int64      `json:"totalLag"`
	Topics   []string   `json:"topics"`
	DLQ      int64      `json:"dlqMessages"`
	Reset    []ResetRow `json:"reset,omitempty"`
}

func (s *Server) group(ctx context.Context, group string) (*GroupView, error) {
	m, err := s.members(ctx, group)
	if err != nil {
		return nil, err
	}
	qs, err := s.consumeStats(ctx, group, "")
	if err != nil {
		return nil, err
	}
	v := &GroupView{Group: group, Members: m, Queues: qs, Topics: []string{}}
	seen := map[string]bool{}
	for _, q := range qs {
		v.TotalLag += q.Lag
		if !seen[q.Topic] {
			seen[q.Topic] = true
			v.Topics = append(v.Topics, q.Topic)
		}
	}
	for _, sub := range m.Subscriptions {
		if !seen[sub.Topic] {
			seen[sub.Topic] = true
			v.Topics = append(v.Topics, sub.Topic)
		}
	}
	// Business topics first: the reset form preselects the first one.
	sort.Slice(v.Topics, func(i, j int) bool {
		pi, pj := strings.HasPrefix(v.Topics[i], "%"), strings.HasPrefix(v.Topics[j], "%")
		if pi != pj {
			return pj
		}
		return v.Topics[i] < v.Topics[j]
	})
	if dq, err := s.topicQueues(ctx, protocol.DLQTopic(group)); err == nil {
		for _, q := range dq {
			v.DLQ += q.MaxOffset - q.MinOffset
		}
	}
	if len(qs) == 0 && !m.Online {
		return nil, fmt.Errorf("%w: group %s has no offsets and no online member", ErrNotFound, group)
	}
	return v, nil
}

// ResetRow is the outcome of resetting one queue.
type ResetRow struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	OldOffset  int64  `json:"oldOffset"`
	NewOffset  int64  `json:"newOffset"`
	Error      string `json:"error,omitempty"`
}

// errOnline: a reset was asked for while the group has live members,
// which would overwrite it with their next commit.
var errOnline = errors.New("group has online consumers")

// resetOffset moves group's committed offsets on topic to the first
// message stored at or after at (RocketMQ's offline resetOffsetByTime).
func (s *Server) resetOffset(ctx context.Context, group, topic string, at time.Time, allowOnline bool) ([]ResetRow, error) {
	m, err := s.members(ctx, group)
	if err != nil {
		return nil, err
	}
	if m.Online && len(m.Connections) > 0 && !allowOnline {
		return nil, fmt.Errorf("%w: %d online consumer(s) of %s would overwrite the reset with their next commit; stop them first or tick \"reset anyway\"",
			errOnline, len(m.Connections), group)
	}
	r, err := s.admin.TopicRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("%w: topic %s: %v", ErrBadRequest, topic, err)
	}
	var out []ResetRow
	for _, bd := range r.BrokerDatas {
		addr, ok := bd.BrokerAddrs[protocol.MasterID]
		if !ok {
			continue
		}
		for _, qd := range r.QueueDatas {
			if qd.BrokerName != bd.BrokerName {
				continue
			}
			for q := int32(0); q < qd.ReadQueueNums; q++ {
				row := s.resetQueue(ctx, addr, group, topic, q, at)
				row.BrokerName = bd.BrokerName
				out = append(out, row)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].BrokerName != out[j].BrokerName {
			return out[i].BrokerName < out[j].BrokerName
		}
		return out[i].QueueID < out[j].QueueID
	})
	return out, nil
}

func (s *Server) resetQueue(ctx context.Context, addr, group, topic string, qid int32, at time.Time) ResetRow {
	r, err := s.admin.ResetOffset(ctx, addr, group, mqclient.Queue{Topic: topic, QueueID: qid}, at, false)
	row := ResetRow{QueueID: qid, OldOffset: r.OldOffset, NewOffset: r.NewOffset}
	if err != nil {
		row.Error = err.Error()
	}
	return row
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
