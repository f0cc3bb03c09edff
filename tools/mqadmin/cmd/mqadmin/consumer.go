package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/tools/ops"
)

// progressRow is one queue of consumerProgress.
type progressRow struct {
	ops.QueueProgress
	LastTimestamp time.Time `json:"lastTimestamp"`
}

// progressView is consumerProgress's JSON output.
type progressView struct {
	Group      string        `json:"group"`
	Queues     []progressRow `json:"queues"`
	TotalLag   int64         `json:"totalLag"`
	ConsumeTps float64       `json:"consumeTps"`
}

func runConsumerProgress(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("consumerProgress", "-g group [-t topic] [-c cluster]")
	group := fs.String("g", "", "consumer group")
	topic := fs.String("t", "", "only this topic (default every topic of the group)")
	cluster := fs.String("c", "", "only the masters of this cluster")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-g group", *group); err != nil {
		return err
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	bs, err := brokers(ctx, a, *cluster, true)
	if err != nil {
		return err
	}
	qs, tps, err := ops.Progress(ctx, a, bs, *group, *topic)
	if err != nil {
		return err
	}
	v := progressView{Group: *group, Queues: []progressRow{}, ConsumeTps: tps}
	for _, q := range qs {
		v.TotalLag += q.Lag
		v.Queues = append(v.Queues, progressRow{QueueProgress: q, LastTimestamp: q.LastConsumed})
	}
	if len(v.Queues) == 0 {
		return fmt.Errorf("group %s has no offsets or subscriptions on any broker", *group)
	}
	return e.emit(co.json, v, func(tw *tabwriter.Writer) {
		row(tw, "#Topic", "#BrokerName", "#QID", "#BrokerOffset", "#ConsumerOffset", "#Diff", "#LastTime")
		for _, r := range v.Queues {
			row(tw, r.Topic, r.BrokerName, r.QueueID, r.BrokerOffset, r.ConsumerOffset, r.Lag, fmtTime(r.LastTimestamp))
		}
		row(tw)
		row(tw, fmt.Sprintf("Consume TPS: %.2f", v.ConsumeTps))
		row(tw, fmt.Sprintf("Diff Total: %d", v.TotalLag))
	})
}

// connectionView is consumerConnection's JSON output.
type connectionView struct {
	Group string `json:"group"`
	ops.GroupConnections
}

// errNotOnline: no broker knows a live member of the group.
var errNotOnline = errors.New("consumer group not online")

// consumerConnections merges GET_CONSUMER_CONNECTION_LIST from every
// master; it returns errNotOnline when no broker knows the group.
func consumerConnections(ctx context.Context, a *mqclient.Admin, group, cluster string) (*connectionView, error) {
	bs, err := brokers(ctx, a, cluster, true)
	if err != nil {
		return nil, err
	}
	gc, online, err := ops.Connections(ctx, a, bs, group)
	if err != nil {
		return nil, err
	}
	if !online {
		return nil, fmt.Errorf("%w: %s", errNotOnline, group)
	}
	return &connectionView{Group: group, GroupConnections: *gc}, nil
}

func runConsumerConnection(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("consumerConnection", "-g group [-c cluster]")
	group := fs.String("g", "", "consumer group")
	cluster := fs.String("c", "", "only the masters of this cluster")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-g group", *group); err != nil {
		return err
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	v, err := consumerConnections(ctx, a, *group, *cluster)
	if err != nil {
		return err
	}
	return e.emit(co.json, v, func(tw *tabwriter.Writer) {
		row(tw, "#ClientId", "#ClientAddr", "#Language", "#Version")
		for _, c := range v.Connections {
			row(tw, c.ClientID, c.ClientAddr, c.Language, c.Version)
		}
		row(tw)
		row(tw, "#Topic", "#SubExpression", "#Type")
		for _, s := range v.Subscriptions {
			row(tw, s.Topic, s.SubString, s.ExpressionType)
		}
		row(tw)
		row(tw, "ConsumeType: "+v.ConsumeType)
		row(tw, "MessageModel: "+v.MessageModel)
		row(tw, "ConsumeFromWhere: "+v.ConsumeFromWhere)
	})
}

// resetRow is the outcome of resetting one queue.
type resetRow struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	OldOffset  int64  `json:"oldOffset"`
	NewOffset  int64  `json:"newOffset"`
	Error      string `json:"error,omitempty"`
}

// runResetOffsetByTime is RocketMQ's offline reset: for every queue it
// finds the first offset stored at or after the timestamp
// (SEARCH_OFFSET_BY_TIMESTAMP) and commits it (UPDATE_CONSUMER_OFFSET).
// The group's consumers must be stopped: a running consumer keeps its
// position in memory and overwrites the reset with its next commit. It
// therefore refuses to run while the group has online members unless
// --allow-online is given.
func runResetOffsetByTime(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("resetOffsetByTime", "-g group -t topic -s timestamp [-f=false] [--allow-online]")
	group := fs.String("g", "", "consumer group")
	topic := fs.String("t", "", "topic")
	ts := fs.String("s", "", "timestamp: Unix ms, now, yyyy-MM-dd#HH:mm:ss:SSS or RFC 3339")
	force := fs.Bool("f", true, "also move offsets forward; with -f=false a queue is only moved back (RocketMQ's force rollback switch)")
	allowOnline := fs.Bool("allow-online", false, "reset even though consumers of the group are online (they will overwrite it)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-g group", *group, "-t topic", *topic, "-s timestamp", *ts); err != nil {
		return err
	}
	at, err := parseTime(*ts)
	if err != nil {
		return usagef("-s: %v", err)
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	cv, err := consumerConnections(ctx, a, *group, "")
	switch {
	case err == nil && len(cv.Connections) > 0 && !*allowOnline:
		return fmt.Errorf("group %s has %d online consumer(s) (%s...): stop them first, or they overwrite the reset with their next commit (--allow-online to reset anyway)",
			*group, len(cv.Connections), cv.Connections[0].ClientID)
	case err != nil && !errors.Is(err, errNotOnline):
		return err
	}
	r, err := a.TopicRoute(ctx, *topic)
	if err != nil {
		return err
	}
	masters := masterOf(r)
	type target struct {
		broker string
		qid    int32
	}
	var qs []target
	for _, qd := range r.QueueDatas {
		if _, ok := masters[qd.BrokerName]; !ok || !protocol.PermReadable(qd.Perm) {
			continue
		}
		for q := int32(0); q < qd.ReadQueueNums; q++ {
			qs = append(qs, target{qd.BrokerName, q})
		}
	}
	sort.Slice(qs, func(i, j int) bool {
		if qs[i].broker != qs[j].broker {
			return qs[i].broker < qs[j].broker
		}
		return qs[i].qid < qs[j].qid
	})
	if len(qs) == 0 {
		return fmt.Errorf("topic %s has no readable queue on a master", *topic)
	}
	var out []resetRow
	failed := 0
	for i, q := range qs {
		res := resetQueue(ctx, a, masters[q.broker], *group, *topic, q.qid, at, *force)
		res.BrokerName = q.broker
		if res.Error != "" {
			failed++
		}
		out = append(out, res)
		if !co.json {
			fmt.Fprintf(e.stderr, "\r[%d/%d] reset %s queue %d", i+1, len(qs), q.broker, q.qid)
		}
	}
	if !co.json {
		fmt.Fprintln(e.stderr)
	}
	err = e.emit(co.json, out, func(tw *tabwriter.Writer) {
		row(tw, "#BrokerName", "#QID", "#OldOffset", "#NewOffset", "#Result")
		for _, r := range out {
			result := "OK"
			if r.Error != "" {
				result = "FAILED: " + r.Error
			}
			row(tw, r.BrokerName, r.QueueID, r.OldOffset, r.NewOffset, result)
		}
	})
	if err == nil && failed > 0 {
		return fmt.Errorf("%d of %d queues were not reset: %w", failed, len(out), errFailed)
	}
	return err
}

func resetQueue(ctx context.Context, a *mqclient.Admin, addr, group, topic string, qid int32, at time.Time, force bool) resetRow {
	r, err := a.ResetOffset(ctx, addr, group, mqclient.Queue{Topic: topic, QueueID: qid}, at, !force)
	res := resetRow{QueueID: qid, OldOffset: r.OldOffset, NewOffset: r.NewOffset}
	if err != nil {
		res.Error = err.Error()
	}
	return res
}
