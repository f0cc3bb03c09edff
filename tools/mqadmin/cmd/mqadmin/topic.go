package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func runTopicList(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("topicList", "[-c cluster]")
	cluster := fs.String("c", "", "only the topics of this cluster")
	if err := parse(fs, args); err != nil {
		return err
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	var topics []string
	if *cluster == "" {
		if topics, err = a.Topics(ctx); err != nil {
			return err
		}
	} else if topics, err = clusterTopics(ctx, a, *cluster); err != nil {
		return err
	}
	return e.emit(co.json, topics, func(tw *tabwriter.Writer) {
		row(tw, "#Topic")
		for _, t := range topics {
			row(tw, t)
		}
	})
}

// clusterTopics lists the topics of one cluster from its masters' topic
// tables (GET_ALL_TOPIC_CONFIG), so system topics are included.
func clusterTopics(ctx context.Context, a *mqclient.Admin, cluster string) ([]string, error) {
	bs, err := brokers(ctx, a, cluster, true)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, b := range bs {
		w, err := fetchTopicConfigs(ctx, a, b.Addr)
		if err != nil {
			return nil, err
		}
		for t := range w.TopicConfigTable {
			seen[t] = true
		}
	}
	return sortedKeys(seen), nil
}

// routeView is topicRoute's JSON output.
type routeView struct {
	Topic   string          `json:"topic"`
	Brokers []brokerRef     `json:"brokers"`
	Queues  []queueDataView `json:"queues"`
	Order   string          `json:"orderTopicConf,omitempty"`
}

// queueDataView is the route's QueueData with its permission as text
// ("RW"); the outer Perm hides the number in JSON.
type queueDataView struct {
	protocol.QueueData
	Perm string `json:"perm"`
}

func runTopicRoute(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("topicRoute", "-t topic")
	topic := fs.String("t", "", "topic name")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-t topic", *topic); err != nil {
		return err
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	r, err := a.TopicRoute(ctx, *topic)
	if err != nil {
		return err
	}
	v := routeView{Topic: *topic, Order: r.OrderTopicConf, Brokers: []brokerRef{}, Queues: []queueDataView{}}
	for _, bd := range r.BrokerDatas {
		for id, addr := range bd.BrokerAddrs {
			v.Brokers = append(v.Brokers, brokerRef{Cluster: bd.Cluster, BrokerName: bd.BrokerName, BrokerID: id, Addr: addr})
		}
	}
	sort.Slice(v.Brokers, func(i, j int) bool {
		if v.Brokers[i].BrokerName != v.Brokers[j].BrokerName {
			return v.Brokers[i].BrokerName < v.Brokers[j].BrokerName
		}
		return v.Brokers[i].BrokerID < v.Brokers[j].BrokerID
	})
	for _, q := range r.QueueDatas {
		v.Queues = append(v.Queues, queueDataView{QueueData: q, Perm: protocol.PermString(q.Perm)})
	}
	sort.Slice(v.Queues, func(i, j int) bool { return v.Queues[i].BrokerName < v.Queues[j].BrokerName })
	return e.emit(co.json, v, func(tw *tabwriter.Writer) {
		row(tw, "#Cluster", "#BrokerName", "#BID", "#Addr")
		for _, b := range v.Brokers {
			row(tw, b.Cluster, b.BrokerName, b.BrokerID, b.Addr)
		}
		row(tw)
		row(tw, "#BrokerName", "#ReadQueues", "#WriteQueues", "#Perm")
		for _, q := range v.Queues {
			row(tw, q.BrokerName, q.ReadQueueNums, q.WriteQueueNums, q.Perm)
		}
	})
}

// queueStatus is one row of topicStatus.
type queueStatus struct {
	BrokerName     string    `json:"brokerName"`
	QueueID        int32     `json:"queueId"`
	MinOffset      int64     `json:"minOffset"`
	MaxOffset      int64     `json:"maxOffset"`
	LastUpdateTime time.Time `json:"lastUpdateTime"`
}

// masterOf returns the master address of each broker of a route.
func masterOf(r *protocol.TopicRouteData) map[string]string {
	m := map[string]string{}
	for _, bd := range r.BrokerDatas {
		if addr, ok := bd.BrokerAddrs[protocol.MasterID]; ok {
			m[bd.BrokerName] = addr
		}
	}
	return m
}

func runTopicStatus(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("topicStatus", "-t topic")
	topic := fs.String("t", "", "topic name")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-t topic", *topic); err != nil {
		return err
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	r, err := a.TopicRoute(ctx, *topic)
	if err != nil {
		return err
	}
	masters := masterOf(r)
	var out []queueStatus
	for _, name := range sortedKeys(masters) {
		st, err := a.TopicStats(ctx, masters[name], *topic)
		if err != nil {
			return fmt.Errorf("topic stats of %s on %s: %w", *topic, name, err)
		}
		for q, o := range st.OffsetTable {
			out = append(out, queueStatus{BrokerName: q.BrokerName, QueueID: q.QueueID, MinOffset: o.MinOffset, MaxOffset: o.MaxOffset,
				LastUpdateTime: time.UnixMilli(o.LastUpdateTimestamp)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].BrokerName != out[j].BrokerName {
			return out[i].BrokerName < out[j].BrokerName
		}
		return out[i].QueueID < out[j].QueueID
	})
	return e.emit(co.json, out, func(tw *tabwriter.Writer) {
		row(tw, "#BrokerName", "#QID", "#MinOffset", "#MaxOffset", "#LastUpdated")
		for _, q := range out {
			row(tw, q.BrokerName, q.QueueID, q.MinOffset, q.MaxOffset, fmtTime(q.LastUpdateTime))
		}
	})
}

// opResult is the outcome of one operation on one broker.
type opResult struct {
	Target string `json:"target"`
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
}

func runUpdateTopic(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("updateTopic", "-t topic (-c cluster | -b brokerAddr) [-r readQueueNums] [-w writeQueueNums] [-p perm] [-o order]")
	topic := fs.String("t", "", "topic name")
	cluster := fs.String("c", "", "create on every master of this cluster")
	addr := fs.String("b", "", "create on this broker address")
	readQ := fs.Int("r", 8, "read queue count")
	writeQ := fs.Int("w", 8, "write queue count")
	perm := fs.Int("p", int(protocol.PermRead|protocol.PermWrite), "permission: 2 write, 4 read, 6 read and write")
	order := fs.Bool("o", false, "ordered topic")
	wait := fs.Bool("wait", true, "wait until the NameServers route the topic")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-t topic", *topic); err != nil {
		return err
	}
	if (*cluster == "") == (*addr == "") {
		return usagef("exactly one of -c cluster or -b brokerAddr is required")
	}
	if *readQ <= 0 || *writeQ <= 0 || *readQ > 1024 || *writeQ > 1024 {
		return usagef("-r and -w must be in 1..1024")
	}
	if *perm != 2 && *perm != 4 && *perm != 6 {
		return usagef("-p must be 2, 4 or 6, got %d", *perm)
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	ts, err := targets(ctx, a, *addr, *cluster, true)
	if err != nil {
		return err
	}
	cfg := mqclient.TopicConfig{ReadQueues: *readQ, WriteQueues: *writeQ, Perm: int32(*perm), Order: *order}
	var res []opResult
	failed := 0
	for _, t := range ts {
		err := a.CreateTopicOn(ctx, t.Addr, *topic, cfg)
		r := opResult{Target: t.Addr, OK: err == nil}
		if err != nil {
			r.Error, failed = err.Error(), failed+1
		}
		res = append(res, r)
	}
	if failed == 0 && *wait {
		wctx, cancel := context.WithTimeout(ctx, 4*co.timeout)
		err := a.WaitTopic(wctx, *topic)
		cancel()
		if err != nil {
			fmt.Fprintf(e.stderr, "warning: %v\n", err)
		}
	}
	err = e.emit(co.json, res, func(tw *tabwriter.Writer) {
		for _, r := range res {
			if r.OK {
				row(tw, fmt.Sprintf("create topic %s on %s success", *topic, r.Target))
			} else {
				row(tw, fmt.Sprintf("create topic %s on %s FAILED: %s", *topic, r.Target, r.Error))
			}
		}
	})
	if err == nil && failed > 0 {
		return fmt.Errorf("create topic %s failed on %d of %d brokers: %w", *topic, failed, len(res), errFailed)
	}
	return err
}

func runDeleteTopic(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("deleteTopic", "-t topic")
	topic := fs.String("t", "", "topic name")
	_ = fs.String("c", "", "cluster (accepted for RocketMQ compatibility; the topic is deleted wherever its route points)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-t topic", *topic); err != nil {
		return err
	}
	if strings.HasPrefix(*topic, "rmq_sys_") || *topic == protocol.DefaultTopicTemplate {
		return usagef("refusing to delete system topic %s", *topic)
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	if err := a.DeleteTopic(ctx, *topic); err != nil {
		if errors.Is(err, mqclient.ErrTopicNotFound) {
			return fmt.Errorf("topic %s does not exist: %w", *topic, err)
		}
		return err
	}
	res := []opResult{{Target: *topic, OK: true}}
	return e.emit(co.json, res, func(tw *tabwriter.Writer) {
		row(tw, fmt.Sprintf("delete topic %s success", *topic))
	})
}
