package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/tools/ops"
)

// Broker is one broker process as the NameServers know it.
type Broker = ops.Broker

// BrokerStatus is a row of the cluster page.
type BrokerStatus struct {
	Broker
	Role         string   `json:"role,omitempty"`
	MaxPhyOffset int64    `json:"commitLogMaxOffset"`
	MinPhyOffset int64    `json:"commitLogMinOffset"`
	DiskRatio    *float64 `json:"diskUsedRatio,omitempty"`
	DiskTotal    int64    `json:"diskTotalBytes,omitempty"`
	DiskFree     int64    `json:"diskFreeBytes,omitempty"`
	DiskFull     bool     `json:"diskFull"`
	PutTPS       *float64 `json:"putTps,omitempty"`
	GetTPS       *float64 `json:"getTps,omitempty"`
	Held         int64    `json:"longPollHeld"`
	BootTime     time_    `json:"bootTime"`
	// Replication: for a master, its slaves; for a slave, its master.
	Slaves      []SlaveStatus `json:"slaves,omitempty"`
	MasterAddr  string        `json:"masterAddr,omitempty"`
	MasterConn  bool          `json:"masterConnected,omitempty"`
	MaxLagBytes int64         `json:"maxReplicationLagBytes"`
	Error       string        `json:"error,omitempty"`
}

// SlaveStatus is a master's view of one slave.
type SlaveStatus struct {
	Addr        string  `json:"addr"`
	Ready       bool    `json:"ready"`
	AckedOffset int64   `json:"ackedOffset"`
	LagBytes    int64   `json:"lagBytes"`
	LagSeconds  float64 `json:"lagSeconds"`
}

// ClusterView is the cluster page.
type ClusterView struct {
	NameServers []string       `json:"nameServers"`
	Brokers     []BrokerStatus `json:"brokers"`
}

// time_ is a time that renders as "-" when zero and as RFC 3339 in JSON.
type time_ struct{ time.Time }

func (t time_) String() string {
	if t.IsZero() || t.UnixMilli() <= 0 {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05.000")
}

func (t time_) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.Time)
}

// brokers lists the brokers the NameServers know, sorted.
func (s *Server) brokers(ctx context.Context) ([]Broker, error) {
	return ops.Brokers(ctx, s.admin, "", false)
}

// masterList lists the master brokers (none: an empty list).
func (s *Server) masterList(ctx context.Context) ([]Broker, error) {
	ms, err := ops.Brokers(ctx, s.admin, "", true)
	if errors.Is(err, ops.ErrNoBroker) {
		return nil, nil
	}
	return ms, err
}

// masters returns broker name -> master address.
func (s *Server) masters(ctx context.Context) (map[string]string, error) {
	bs, err := s.brokers(ctx)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, b := range bs {
		if b.BrokerID == protocol.MasterID {
			m[b.BrokerName] = b.Addr
		}
	}
	return m, nil
}

// runtimeInfo asks addr for GET_BROKER_RUNTIME_INFO and records its totals
// with the sampler. A broker without the code answers an error.
func (s *Server) runtimeInfo(ctx context.Context, addr string) (map[string]string, error) {
	info, err := s.admin.RuntimeInfo(ctx, addr)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if v, err := strconv.ParseFloat(info["msgPutTotal"], 64); err == nil {
		s.rates.observe("put:"+addr, v, now)
	}
	if v, err := strconv.ParseFloat(info["msgGetTotal"], 64); err == nil {
		s.rates.observe("get:"+addr, v, now)
	}
	return info, nil
}

func (s *Server) cluster(ctx context.Context) (*ClusterView, error) {
	bs, err := s.brokers(ctx)
	if err != nil {
		return nil, err
	}
	v := &ClusterView{NameServers: s.opts.NameServers, Brokers: []BrokerStatus{}}
	for _, b := range bs {
		v.Brokers = append(v.Brokers, s.brokerStatus(ctx, b))
	}
	return v, nil
}

func (s *Server) brokerStatus(ctx context.Context, b Broker) BrokerStatus {
	st := BrokerStatus{Broker: b}
	ha, err := s.admin.HAStatus(ctx, b.Addr)
	if err != nil {
		st.Error = "replication status: " + err.Error()
		return st
	}
	st.Role, st.MaxPhyOffset = ha.Role, ha.MaxPhyOffset
	if ha.Server != nil {
		for _, sl := range ha.Server.Slaves {
			st.Slaves = append(st.Slaves, SlaveStatus{Addr: sl.Addr, Ready: sl.Ready, AckedOffset: sl.AckedOffset, LagBytes: sl.LagBytes,
				LagSeconds: sl.LagTime.Seconds()})
			st.MaxLagBytes = max(st.MaxLagBytes, sl.LagBytes)
		}
	}
	if ha.Client != nil {
		st.MasterAddr, st.MasterConn = ha.Client.MasterAddr, ha.Client.Connected
	}
	kv, err := s.runtimeInfo(ctx, b.Addr)
	if err != nil {
		st.Error = "runtime info: " + err.Error()
		return st
	}
	if r, err := strconv.ParseFloat(kv["commitLogDiskRatio"], 64); err == nil {
		st.DiskRatio = &r
	}
	st.DiskTotal, _ = strconv.ParseInt(kv["diskTotalBytes"], 10, 64)
	st.DiskFree, _ = strconv.ParseInt(kv["diskFreeBytes"], 10, 64)
	st.MinPhyOffset, _ = strconv.ParseInt(kv["commitLogMinOffset"], 10, 64)
	st.Held, _ = strconv.ParseInt(kv["longPollHeld"], 10, 64)
	st.DiskFull = kv["diskFull"] == "true"
	if ms, err := strconv.ParseInt(kv["bootTimestamp"], 10, 64); err == nil {
		st.BootTime = time_{time.UnixMilli(ms)}
	}
	if r, ok := s.rates.rate("put:" + b.Addr); ok {
		st.PutTPS = &r
	}
	if r, ok := s.rates.rate("get:" + b.Addr); ok {
		st.GetTPS = &r
	}
	return st
}

// QueueStat is one queue of a topic.
type QueueStat struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	MinOffset  int64  `json:"minOffset"`
	MaxOffset  int64  `json:"maxOffset"`
	LastUpdate time_  `json:"lastUpdate"`
}

// TopicSummary is a row of the topics page.
type TopicSummary struct {
	Topic    string   `json:"topic"`
	Kind     string   `json:"kind"` // normal, retry, dlq, system
	Queues   int      `json:"queues"`
	Messages int64    `json:"messages"`
	TPS      *float64 `json:"tps,omitempty"`
	Error    string   `json:"error,omitempty"`
}

func topicKind(t string) string {
	switch {
	case strings.HasPrefix(t, protocol.RetryTopicPrefix):
		return "retry"
	case strings.HasPrefix(t, protocol.DLQTopicPrefix):
		return "dlq"
	case t == protocol.DefaultTopicTemplate || t == protocol.BenchmarkTopic || strings.HasSuffix(t, protocol.ReplyTopicSuffix) ||
		t == protocol.ScheduleTopic || t == protocol.TransHalfTopic || t == protocol.TransOpHalfTopic ||
		t == protocol.OffsetMovedEventTopic || t == protocol.SelfTestTopic || strings.HasPrefix(t, "rmq_sys_") || strings.HasPrefix(t, "RMQ_SYS_") ||
		strings.HasPrefix(t, "TIDE_"):
		return "system"
	}
	return "normal"
}

// topicQueues returns the queues of topic on every master, sorted, and
// records the summed max offsets with the sampler.
func (s *Server) topicQueues(ctx context.Context, topic string) ([]QueueStat, error) {
	r, err := s.admin.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []QueueStat
	for _, bd := range r.BrokerDatas {
		addr, ok := bd.BrokerAddrs[protocol.MasterID]
		if !ok {
			continue
		}
		st, err := s.admin.TopicStats(ctx, addr, topic)
		if err != nil {
			return nil, fmt.Errorf("topic stats of %s on %s: %w", topic, bd.BrokerName, err)
		}
		for q, o := range st.OffsetTable {
			out = append(out, QueueStat{BrokerName: q.BrokerName, QueueID: q.QueueID, MinOffset: o.MinOffset, MaxOffset: o.MaxOffset,
				LastUpdate: time_{time.UnixMilli(o.LastUpdateTimestamp)}})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].BrokerName != out[j].BrokerName {
			return out[i].BrokerName < out[j].BrokerName
		}
		return out[i].QueueID < out[j].QueueID
	})
	var sum float64
	for _, q := range out {
		sum += float64(q.MaxOffset)
	}
	s.rates.observe("topic:"+topic, sum, time.Now())
	return out, nil
}

// TopicsView is the topics page.
type TopicsView struct {
	Topics []TopicSummary `json:"topics"`
	All    bool           `json:"all"`
}

func (s *Server) topics(ctx context.Context, all bool) (*TopicsView, error) {
	names, err := s.admin.Topics(ctx)
	if err != nil {
		return nil, fmt.Errorf("topic list: %w", err)
	}
	// Brokers register topics named after their cluster and broker name.
	named := map[string]bool{}
	if bs, err := s.brokers(ctx); err == nil {
		for _, b := range bs {
			named[b.Cluster], named[b.BrokerName] = true, true
		}
	}
	v := &TopicsView{Topics: []TopicSummary{}, All: all}
	for _, t := range names {
		kind := topicKind(t)
		if named[t] {
			kind = "system"
		}
		if !all && kind == "system" {
			continue
		}
		ts := TopicSummary{Topic: t, Kind: kind}
		qs, err := s.topicQueues(ctx, t)
		if err != nil {
			ts.Error = err.Error()
		}
		ts.Queues = len(qs)
		for _, q := range qs {
			ts.Messages += q.MaxOffset - q.MinOffset
		}
		if r, ok := s.rates.rate("topic:" + t); ok {
			ts.TPS = &r
		}
		v.Topics = append(v.Topics, ts)
	}
	// Business topics first, then retry, dead letter and system topics.
	rank := map[string]int{"normal": 0, "retry": 1, "dlq": 2, "system": 3}
	sort.SliceStable(v.Topics, func(i, j int) bool { return rank[v.Topics[i].Kind] < rank[v.Topics[j].Kind] })
	return v, nil
}

// TopicView is the page of one topic.
type TopicView struct {
	Topic  string         `json:"topic"`
	Kind   string         `json:"kind"`
	Route  []RouteRow     `json:"route"`
	Queues []QueueStat    `json:"queues"`
	TPS    *float64       `json:"tps,omitempty"`
	Groups []GroupOnTopic `json:"groups"`
}

// RouteRow is one broker's queues of a topic.
type RouteRow struct {
	BrokerName  string `json:"brokerName"`
	Master      string `json:"master"`
	ReadQueues  int32  `json:"readQueues"`
	WriteQueues int32  `json:"writeQueues"`
	Perm        string `json:"perm"`
}

// GroupOnTopic is a consumer group's progress on one topic.
type GroupOnTopic struct {
	Group string `json:"group"`
	Lag   int64  `json:"lag"`
	Error string `json:"error,omitempty"`
}

func permString(p int32) string {
	b := []byte("---")
	if protocol.PermReadable(p) {
		b[0] = 'R'
	}
	if p&protocol.PermWrite != 0 {
		b[1] = 'W'
	}
	if p&protocol.PermInherit != 0 {
		b[2] = 'X'
	}
	return string(b)
}

func (s *Server) topic(ctx context.Context, topic string) (*TopicView, error) {
	r, err := s.admin.TopicRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("%w: topic %s: %v", ErrNotFound, topic, err)
	}
	v := &TopicView{Topic: topic, Kind: topicKind(topic), Groups: []GroupOnTopic{}}
	master := map[string]string{}
	for _, bd := range r.BrokerDatas {
		master[bd.BrokerName] = bd.BrokerAddrs[protocol.MasterID]
	}
	for _, qd := range r.QueueDatas {
		v.Route = append(v.Route, RouteRow{BrokerName: qd.BrokerName, Master: master[qd.BrokerName], ReadQueues: qd.ReadQueueNums,
			WriteQueues: qd.WriteQueueNums, Perm: permString(qd.Perm)})
	}
	sort.Slice(v.Route, func(i, j int) bool { return v.Route[i].BrokerName < v.Route[j].BrokerName })
	if v.Queues, err = s.topicQueues(ctx, topic); err != nil {
		return nil, err
	}
	if r, ok := s.rates.rate("topic:" + topic); ok {
		v.TPS = &r
	}
	groups, err := s.consumedBy(ctx, topic)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		gt := GroupOnTopic{Group: g}
		qs, err := s.consumeStats(ctx, g, topic)
		if err != nil {
			gt.Error = err.Error()
		}
		for _, q := range qs {
			gt.Lag += q.Lag
		}
		v.Groups = append(v.Groups, gt)
	}
	return v, nil
}

// consumedBy lists the groups that have offsets or subscriptions on topic,
// across masters.
func (s *Server) consumedBy(ctx context.Context, topic string) ([]string, error) {
	ms, err := s.masters(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, addr := range ms {
		gl, err := s.admin.ConsumedBy(ctx, addr, topic)
		if err != nil {
			return nil, fmt.Errorf("groups of %s on %s: %w", topic, addr, err)
		}
		for _, g := range gl {
			if !seen[g] && g != "TOOLS_CONSUMER" {
				seen[g] = true
				out = append(out, g)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
