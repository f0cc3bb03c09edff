package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/tools/ops"
)

// toolsGroup is the group mqadmin pulls with (RocketMQ's tools use the
// same name); it never commits offsets.
const toolsGroup = "TOOLS_CONSUMER"

// messageView is how mqadmin prints a message.
type messageView struct {
	ops.MessageFields
	Tags           string    `json:"tags,omitempty"`
	BrokerName     string    `json:"brokerName,omitempty"`
	BornTimestamp  time.Time `json:"bornTimestamp"`
	StoreTimestamp time.Time `json:"storeTimestamp"`
	SysFlag        int32     `json:"sysFlag"`
}

func viewOf(m *mqclient.MessageExt) messageView {
	return messageView{MessageFields: ops.FieldsOf(m, 0), Tags: m.Tag, BrokerName: m.Queue.BrokerName,
		BornTimestamp: m.BornTimestamp, StoreTimestamp: m.StoreTimestamp, SysFlag: m.SysFlag}
}

// printMessage writes one message as "key: value" lines.
func printMessage(tw *tabwriter.Writer, v messageView) {
	kv := func(k string, val any) { fmt.Fprintf(tw, "%s:\t%v\n", k, val) }
	kv("OffsetID", v.OffsetMsgID)
	kv("MsgId", v.MsgID)
	kv("Topic", v.Topic)
	kv("Tags", "["+v.Tags+"]")
	kv("Keys", "["+strings.Join(v.Keys, " ")+"]")
	kv("Queue ID", v.QueueID)
	kv("Queue Offset", v.QueueOffset)
	kv("CommitLog Offset", v.CommitLogOffset)
	kv("Reconsume Times", v.ReconsumeTimes)
	kv("Born Timestamp", fmtTime(v.BornTimestamp))
	kv("Store Timestamp", fmtTime(v.StoreTimestamp))
	kv("Born Host", v.BornHost)
	kv("Store Host", v.StoreHost)
	kv("System Flag", v.SysFlag)
	var props []string
	for _, k := range sortedKeys(v.Properties) {
		props = append(props, k+"="+v.Properties[k])
	}
	kv("Properties", "{"+strings.Join(props, ", ")+"}")
	if v.BodyBase64 != "" {
		kv("Message Body (base64)", v.BodyBase64)
	} else {
		kv("Message Body", strconv.Quote(v.Body))
	}
}

func emitMessages(e *cli, asJSON bool, ms []*mqclient.MessageExt) error {
	vs := make([]messageView, 0, len(ms))
	for _, m := range ms {
		vs = append(vs, viewOf(m))
	}
	return e.emit(asJSON, vs, func(tw *tabwriter.Writer) {
		for i, v := range vs {
			if i > 0 {
				fmt.Fprintln(tw)
			}
			printMessage(tw, v)
		}
	})
}

func runQueryMsgByID(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("queryMsgById", "-i msgId [-t topic]")
	id := fs.String("i", "", "offset message id (32 hex digits), or the unique (client) id with -t")
	topic := fs.String("t", "", "topic, needed to look up a unique (client) message id")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-i msgId", *id); err != nil {
		return err
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	ms, err := ops.FindByID(ctx, a, *topic, *id)
	if errors.Is(err, ops.ErrNeedTopic) {
		return usagef("%q is not an offset message id; give -t topic to look it up as a unique id", *id)
	}
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		return fmt.Errorf("message %s not found", *id)
	}
	return emitMessages(e, co.json, ms)
}

func runQueryMsgByKey(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("queryMsgByKey", "-t topic -k key [-b begin] [-e end] [-m maxNum]")
	topic := fs.String("t", "", "topic")
	key := fs.String("k", "", "message key")
	begin := fs.String("b", "0", "begin time (Unix ms, now, yyyy-MM-dd#HH:mm:ss:SSS or RFC 3339)")
	end := fs.String("e", "", "end time (default now + 1h)")
	maxNum := fs.Int("m", 64, "maximum number of messages")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-t topic", *topic, "-k key", *key); err != nil {
		return err
	}
	from, err := parseTime(*begin)
	if err != nil {
		return usagef("-b: %v", err)
	}
	to := time.Now().Add(time.Hour)
	if *end != "" {
		if to, err = parseTime(*end); err != nil {
			return usagef("-e: %v", err)
		}
	}
	if *maxNum <= 0 {
		return usagef("-m must be positive")
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	ms, err := a.QueryByKey(ctx, *topic, *key, *maxNum, from, to)
	if err != nil {
		return err
	}
	vs := make([]messageView, 0, len(ms))
	for _, m := range ms {
		vs = append(vs, viewOf(m))
	}
	if len(vs) == 0 && !co.json {
		return fmt.Errorf("no message of %s has key %q", *topic, *key)
	}
	return e.emit(co.json, vs, func(tw *tabwriter.Writer) {
		row(tw, "#Message ID", "#QID", "#Offset", "#StoreTime", "#Tags", "#Keys")
		for _, v := range vs {
			row(tw, v.MsgID, v.QueueID, v.QueueOffset, fmtTime(v.StoreTimestamp), v.Tags, strings.Join(v.Keys, " "))
		}
	})
}

// newPuller starts a pull consumer of toolsGroup.
func newPuller(ctx context.Context, co *common) (*mqclient.PullConsumer, error) {
	if strings.TrimSpace(co.namesrv) == "" {
		return nil, usagef("-n namesrvAddr is required (or set NAMESRV_ADDR)")
	}
	opts, err := co.clientOptions(mqclient.WithInstanceName(fmt.Sprintf("mqadmin-%d", os.Getpid())))
	if err != nil {
		return nil, err
	}
	pc, err := mqclient.NewPullConsumer(toolsGroup, opts...)
	if err != nil {
		return nil, err
	}
	if err := pc.Start(ctx); err != nil {
		return nil, err
	}
	return pc, nil
}

func runQueryMsgByOffset(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("queryMsgByOffset", "-t topic -b brokerName -i queueId -o offset")
	topic := fs.String("t", "", "topic")
	brokerName := fs.String("b", "", "broker name")
	qid := fs.Int("i", -1, "queue id")
	off := fs.Int64("o", -1, "queue offset")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-t topic", *topic, "-b brokerName", *brokerName); err != nil {
		return err
	}
	if *qid < 0 || *off < 0 {
		return usagef("-i queueId and -o offset are required (>= 0)")
	}
	pc, err := newPuller(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(pc)
	q := mqclient.Queue{Topic: *topic, BrokerName: *brokerName, QueueID: int32(*qid)}
	res, err := pc.Pull(ctx, q, "*", *off, 1, 0)
	if err != nil {
		return err
	}
	if res.Status != mqclient.PullFound || len(res.Messages) == 0 || res.Messages[0].QueueOffset != *off {
		return fmt.Errorf("no message at %s offset %d (queue holds %d..%d)", q, *off, res.MinOffset, res.MaxOffset)
	}
	return emitMessages(e, co.json, res.Messages[:1])
}

// sendView is sendMessage's output.
type sendView struct {
	BrokerName  string `json:"brokerName"`
	QueueID     int32  `json:"queueId"`
	QueueOffset int64  `json:"queueOffset"`
	Status      string `json:"sendStatus"`
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId"`
}

func runSendMessage(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("sendMessage", "-t topic -p body [-k keys] [-c tags] [-b brokerName -i queueId] [-d delayLevel]")
	topic := fs.String("t", "", "topic")
	body := fs.String("p", "", "message body")
	keys := fs.String("k", "", "message keys (space-separated)")
	tags := fs.String("c", "", "message tag")
	brokerName := fs.String("b", "", "send to this broker (with -i)")
	qid := fs.Int("i", -1, "send to this queue (with -b)")
	delay := fs.Int("d", 0, "delay level (1..18)")
	group := fs.String("producerGroup", "TOOLS_PRODUCER", "producer group")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-t topic", *topic, "-p body", *body); err != nil {
		return err
	}
	if (*brokerName == "") != (*qid < 0) {
		return usagef("-b brokerName and -i queueId go together")
	}
	if strings.TrimSpace(co.namesrv) == "" {
		return usagef("-n namesrvAddr is required (or set NAMESRV_ADDR)")
	}
	opts, err := co.clientOptions(mqclient.WithProducerGroup(*group), mqclient.WithSendTimeout(co.timeout),
		mqclient.WithInstanceName(fmt.Sprintf("mqadmin-%d", os.Getpid())))
	if err != nil {
		return err
	}
	p, err := mqclient.NewProducer(opts...)
	if err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		return err
	}
	defer shutdown(p)
	m := &mqclient.Message{Topic: *topic, Body: []byte(*body), Tag: *tags, Keys: strings.Fields(*keys), DelayLevel: *delay}
	var res *mqclient.SendResult
	if *brokerName != "" {
		res, err = p.SendTo(ctx, m, mqclient.Queue{Topic: *topic, BrokerName: *brokerName, QueueID: int32(*qid)})
	} else {
		res, err = p.Send(ctx, m)
	}
	if err != nil {
		return err
	}
	v := sendView{BrokerName: res.Queue.BrokerName, QueueID: res.Queue.QueueID, QueueOffset: res.QueueOffset, Status: res.Status.String(),
		MsgID: res.MsgID, OffsetMsgID: res.OffsetMsgID}
	return e.emit(co.json, v, func(tw *tabwriter.Writer) {
		row(tw, "#Broker Name", "#QID", "#Queue Offset", "#Send Result", "#MsgId", "#OffsetMsgId")
		row(tw, v.BrokerName, v.QueueID, v.QueueOffset, v.Status, v.MsgID, v.OffsetMsgID)
	})
}

// pullRange reads the messages of qs (ops.PullRange).
func pullRange(ctx context.Context, pc *mqclient.PullConsumer, qs []mqclient.Queue, start func(mqclient.Queue) (int64, error),
	limit int, end time.Time, visit func(*mqclient.MessageExt) bool) error {
	return ops.PullRange(ctx, pc, qs, start, limit, end, visit)
}

// searchOffset returns the first offset of q stored at or after t.
func searchOffset(ctx context.Context, a *mqclient.Admin, addr string, q mqclient.Queue, t time.Time) (int64, error) {
	off, err := a.SearchOffset(ctx, addr, q, t)
	if err != nil {
		return 0, fmt.Errorf("search offset of %s: %w", q, err)
	}
	return off, nil
}

func runConsumeMessage(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("consumeMessage", "-t topic [-b brokerName -i queueId] [-o offset] [-s begin] [-e end] [-c count]")
	topic := fs.String("t", "", "topic")
	brokerName := fs.String("b", "", "only this broker")
	qid := fs.Int("i", -1, "only this queue (with -b)")
	off := fs.Int64("o", -1, "start offset (with -b and -i; default the queue's first message)")
	begin := fs.String("s", "", "start at messages stored at or after this time")
	end := fs.String("e", "", "stop at messages stored after this time")
	count := fs.Int("c", 128, "maximum number of messages")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-t topic", *topic); err != nil {
		return err
	}
	if *qid >= 0 && *brokerName == "" {
		return usagef("-i queueId needs -b brokerName")
	}
	if *off >= 0 && *qid < 0 {
		return usagef("-o offset needs -b brokerName and -i queueId")
	}
	if *count <= 0 {
		return usagef("-c must be positive")
	}
	var from, to time.Time
	var err error
	if *begin != "" {
		if from, err = parseTime(*begin); err != nil {
			return usagef("-s: %v", err)
		}
	}
	if *end != "" {
		if to, err = parseTime(*end); err != nil {
			return usagef("-e: %v", err)
		}
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	pc, err := newPuller(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(pc)
	all, err := pc.Queues(ctx, *topic)
	if err != nil {
		return err
	}
	var qs []mqclient.Queue
	for _, q := range all {
		if (*brokerName == "" || q.BrokerName == *brokerName) && (*qid < 0 || q.QueueID == int32(*qid)) {
			qs = append(qs, q)
		}
	}
	if len(qs) == 0 {
		return fmt.Errorf("topic %s has no such queue (broker %q, queue %d)", *topic, *brokerName, *qid)
	}
	r, err := a.TopicRoute(ctx, *topic)
	if err != nil {
		return err
	}
	masters := masterOf(r)
	start := func(q mqclient.Queue) (int64, error) {
		switch {
		case *off >= 0:
			return *off, nil
		case !from.IsZero():
			return searchOffset(ctx, a, masters[q.BrokerName], q, from)
		}
		return 0, nil // an illegal offset is corrected by the broker
	}
	var vs []messageView
	var tw *tabwriter.Writer
	if !co.json {
		tw = newTable(e.stdout)
		row(tw, "#Broker", "#QID", "#Offset", "#StoreTime", "#MsgId", "#Tags", "#Keys", "#Body")
	}
	err = pullRange(ctx, pc, qs, start, *count, to, func(m *mqclient.MessageExt) bool {
		v := viewOf(m)
		if co.json {
			vs = append(vs, v)
			return true
		}
		body := v.Body
		if v.BodyBase64 != "" {
			body = "base64:" + v.BodyBase64
		}
		row(tw, v.BrokerName, v.QueueID, v.QueueOffset, fmtTime(v.StoreTimestamp), v.MsgID, v.Tags, strings.Join(v.Keys, " "), strconv.Quote(body))
		return true
	})
	if tw != nil {
		tw.Flush()
	}
	if err != nil {
		return err
	}
	if co.json {
		if vs == nil {
			vs = []messageView{}
		}
		return e.emit(true, vs, nil)
	}
	return nil
}
