package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// The tenant isolation tests (issue #25): tenant B is a valid but limited
// account (PUB|SUB on its topic TB and SUB on its group GB, nothing else);
// tenant A owns topic TA, group GA and producer group PGA. Each test first
// shows that B's request naming A's resources is refused and nothing is
// stored or returned, then that A, driven by the official client where it
// has the call, keeps working.
const isolationACL = `
accounts:
  - accessKey: adminKey
    secretKey: adminSecret
    admin: true
  - accessKey: tenantA
    secretKey: secretA1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - TA=PUB|SUB
      - DefaultCluster_REPLY_TOPIC=PUB
    groupPerms:
      - GA=SUB
  - accessKey: tenantB
    secretKey: secretB1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - TB=PUB|SUB
    groupPerms:
      - GB=SUB
`

type tenants struct {
	*env
	ta, tb, ga, gb, pga string
	a, b                *remoting.Client // signed as tenant A, tenant B
}

func newTenants(t *testing.T, opts ...func(*broker.Options)) *tenants {
	t.Helper()
	x := &tenants{ta: uniq("TA"), tb: uniq("TB"), ga: uniq("GA"), gb: uniq("GB"), pga: uniq("PGA")}
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	writeFile(t, path, strings.NewReplacer("TA=", x.ta+"=", "TB=", x.tb+"=", "GA=", x.ga+"=", "GB=", x.gb+"=").Replace(isolationACL))
	all := append([]func(*broker.Options){func(o *broker.Options) {
		o.AclEnable, o.PlainAclFile = true, path
		o.Store.MessageDelayLevel = fastDelayLevels
	}}, opts...)
	x.env = newEnv(t, all...)
	x.raw = signedClient(t, "adminKey", "adminSecret")
	x.a = signedClient(t, "tenantA", "secretA1")
	x.b = signedClient(t, "tenantB", "secretB1")
	for _, topic := range []string{x.ta, x.tb} {
		h := protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}
		if resp := x.invoke(protocol.NewRequest(protocol.UpdateAndCreateTopic, h.Encode(), nil)); resp.Code != protocol.Success {
			t.Fatalf("create %s: %d %s", topic, resp.Code, resp.Remark)
		}
		x.waitRoute(topic)
	}
	return x
}

// call sends req as cl's account.
func (x *tenants) call(cl *remoting.Client, req *protocol.Command) *protocol.Command {
	x.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, x.addr, req)
	if err != nil {
		x.t.Fatalf("invoke code %d: %v", req.Code, err)
	}
	return resp
}

// refused fails unless resp is NO_PERMISSION with no body.
func refused(t *testing.T, what string, resp *protocol.Command) {
	t.Helper()
	if resp.Code != protocol.NoPermission || len(resp.Body) != 0 {
		t.Errorf("%s: response %d %q with %d body bytes, want NO_PERMISSION and nothing", what, resp.Code, resp.Remark, len(resp.Body))
	}
}

func (x *tenants) producerA(opts ...producer.Option) rocketmq.Producer {
	return x.producer(append([]producer.Option{producer.WithCredentials(creds("tenantA", "secretA1"))}, opts...)...)
}

func (x *tenants) producerB() rocketmq.Producer {
	return x.producer(producer.WithCredentials(creds("tenantB", "secretB1")))
}

// offsetOfMsg returns the commit log offset of a send result's message.
func offsetOfMsg(t *testing.T, r *primitive.SendResult) int64 {
	t.Helper()
	_, off, err := protocol.ParseOffsetMsgID(r.OffsetMsgID)
	if err != nil {
		t.Fatalf("offset msg id %q: %v", r.OffsetMsgID, err)
	}
	return off
}

// sendHalf stores a half (prepared) message of producer group PGA in TA
// as tenant A, raw, and returns its commit log and half queue offsets.
func (x *tenants) sendHalf(t *testing.T) (int64, int64) {
	t.Helper()
	props := protocol.EncodeProperties(map[string]string{protocol.PropTransactionPrepared: "true",
		protocol.PropProducerGroup: x.pga, protocol.PropUniqKey: uniq("half")})
	h := protocol.SendMessageRequestHeader{ProducerGroup: x.pga, Topic: x.ta, DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		SysFlag: protocol.SysFlagTxPrepared, BornTimestamp: time.Now().UnixMilli(), Properties: props, MaxReconsumeTimes: -1}
	resp := x.call(x.a, protocol.NewRequest(protocol.SendMessage, h.Encode(), []byte("tenant A's half message")))
	if resp.Code != protocol.Success {
		t.Fatalf("half send as tenant A: %d %s", resp.Code, resp.Remark)
	}
	var rh protocol.SendMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		t.Fatal(err)
	}
	_, off, err := protocol.ParseOffsetMsgID(rh.MsgID)
	if err != nil {
		t.Fatal(err)
	}
	return off, rh.QueueOffset
}

// halfTopics lists the topics of the half messages cl's account sees.
func (x *tenants) halfTopics(t *testing.T, cl *remoting.Client) []string {
	t.Helper()
	resp := x.call(cl, protocol.NewRequest(protocol.TideListHalfMessages, nil, nil))
	if resp.Code != protocol.Success {
		t.Fatalf("list half messages: %d %s", resp.Code, resp.Remark)
	}
	var hs []struct {
		Topic string `json:"topic"`
	}
	if err := json.Unmarshal(resp.Body, &hs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range hs {
		out = append(out, h.Topic)
	}
	return out
}

// Finding 1: SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE are checked against the
// topic the handler stores into ("b"), not a decoy "topic" field.
func TestIsolationSendV2TopicField(t *testing.T) {
	t.Parallel()
	officialClient(t)
	x := newTenants(t)
	for _, code := range []int16{protocol.SendMessageV2, protocol.SendBatchMessage} {
		h := protocol.SendMessageRequestHeader{ProducerGroup: "pgB", Topic: x.ta, DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
			BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1}
		ext := h.V2().Encode()
		ext["topic"] = x.tb // the decoy the old check read
		body := []byte("forbidden")
		if code == protocol.SendBatchMessage {
			var err error
			if body, err = protocol.AppendBatch(nil, []protocol.BatchItem{{Body: body}}); err != nil {
				t.Fatal(err)
			}
		}
		refused(t, fmt.Sprintf("code %d to b=%s with topic=%s", code, x.ta, x.tb), x.call(x.b, protocol.NewRequest(code, ext, body)))
	}
	// Allowed: the official client's single and batch sends to B's topic.
	p := x.producerB()
	sendOne(t, p, primitive.NewMessage(x.tb, []byte("single")))
	if _, err := p.SendSync(context.Background(), primitive.NewMessage(x.tb, []byte("b1")), primitive.NewMessage(x.tb, []byte("b2"))); err != nil {
		t.Fatalf("official batch send to own topic: %v", err)
	}
	eventually(t, 5*time.Second, "B's 3 messages stored", func() bool { return x.totalMax(x.tb, 4) == 3 })
	if n := x.totalMax(x.ta, 4); n != 0 {
		t.Errorf("refused sends stored %d messages in %s", n, x.ta)
	}
}

// timerMsg is a message to topic delivered at at.
func timerMsg(topic, body string, at time.Time) *primitive.Message {
	m := primitive.NewMessage(topic, []byte(body))
	m.WithProperty("TIMER_DELIVER_MS", strconv.FormatInt(at.UnixMilli(), 10))
	return m
}

// Finding 2: TideRecallTimer needs PUB on the timer's topic (admin without
// a topic), and recalls only a timer of the topic it names.
func TestIsolationRecallTimerRequest(t *testing.T) {
	t.Parallel()
	officialClient(t)
	x := newTenants(t)
	res := sendOne(t, x.producerA(), timerMsg(x.ta, "A's timer", time.Now().Add(time.Minute)))
	recall := func(cl *remoting.Client, ext map[string]string) *protocol.Command {
		return x.call(cl, protocol.NewRequest(protocol.TideRecallTimer, ext, nil))
	}
	refused(t, "B recalls A's timer without a topic", recall(x.b, map[string]string{"handle": res.MsgID}))
	refused(t, "B recalls A's timer naming A's topic", recall(x.b, map[string]string{"handle": res.MsgID, "topic": x.ta}))
	if resp := recall(x.b, map[string]string{"handle": res.MsgID, "topic": x.tb}); resp.Code != protocol.QueryNotFound {
		t.Errorf("B recalls A's handle in its own topic: %d %q, want QUERY_NOT_FOUND (no such timer in %s)", resp.Code, resp.Remark, x.tb)
	}
	// Allowed: A, in its topic (the official client has no recall call).
	if resp := recall(x.a, map[string]string{"handle": res.MsgID, "topic": x.ta}); resp.Code != protocol.Success {
		t.Errorf("A recalls its own timer: %d %q", resp.Code, resp.Remark)
	}
}

// Finding 3: a recall marker (TIMER_DEL_UNIQKEY) cancels only timers of
// the topic it is sent to.
func TestIsolationRecallMarkerTopic(t *testing.T) {
	t.Parallel()
	officialClient(t)
	x := newTenants(t)
	pa := x.producerA()
	at := time.Now().Add(2 * time.Second)
	victim := sendOne(t, pa, timerMsg(x.ta, "victim", at))
	recalled := sendOne(t, pa, timerMsg(x.ta, "recalled by A", at))
	sentinel := sendOne(t, pa, timerMsg(x.ta, "sentinel", at.Add(500*time.Millisecond)))
	// B, allowed to publish to TB only, names A's timer in a marker.
	bad := primitive.NewMessage(x.tb, []byte("recall"))
	bad.WithProperty("TIMER_DEL_UNIQKEY", victim.MsgID)
	sendOne(t, x.producerB(), bad)
	// A recalls its own timer the same way, with the official client.
	good := primitive.NewMessage(x.ta, []byte("recall"))
	good.WithProperty("TIMER_DEL_UNIQKEY", recalled.MsgID)
	sendOne(t, pa, good)
	// Timers due at the same time fire in store order and the sentinel
	// is due last: once it is there, the others have had their turn.
	keys := map[string]bool{}
	eventually(t, 15*time.Second, "the sentinel timer delivered", func() bool {
		for q := int32(0); q < 4; q++ {
			for _, m := range x.pullAll("admin_reader", x.ta, q) {
				keys[m.Properties[protocol.PropUniqKey]] = true
			}
		}
		return keys[sentinel.MsgID]
	})
	if !keys[victim.MsgID] {
		t.Errorf("A's timer was cancelled by B's marker sent to %s", x.tb)
	}
	if keys[recalled.MsgID] {
		t.Errorf("A's own marker did not cancel A's timer")
	}
}

// Finding 4: TideListHalfMessages lists only the caller's topics (all for
// an admin).
func TestIsolationListHalf(t *testing.T) {
	t.Parallel()
	x := newTenants(t)
	x.sendHalf(t)
	if got := x.halfTopics(t, x.b); len(got) != 0 {
		t.Errorf("B lists half messages of %v", got)
	}
	if got := x.halfTopics(t, x.a); len(got) != 1 || got[0] != x.ta {
		t.Errorf("A lists %v, want its half message in %s", got, x.ta)
	}
	if got := x.halfTopics(t, x.raw); len(got) != 1 {
		t.Errorf("admin lists %v, want A's half message", got)
	}
}

// Finding 5: SEND_REPLY_MESSAGE(_V2) needs PUB on the topic it stores to.
func TestIsolationReply(t *testing.T) {
	t.Parallel()
	officialClient(t)
	x := newTenants(t, func(o *broker.Options) { o.StoreReplyMessageEnable = true })
	props := protocol.EncodeProperties(map[string]string{protocol.PropReplyToClient: "nobody@1", protocol.PropCorrelationID: "c1"})
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pgB", Topic: x.ta, DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		BornTimestamp: time.Now().UnixMilli(), Properties: props, MaxReconsumeTimes: -1}
	refused(t, "SEND_REPLY_MESSAGE to A's topic", x.call(x.b, protocol.NewRequest(protocol.SendReplyMessage, h.Encode(), []byte("r"))))
	refused(t, "SEND_REPLY_MESSAGE_V2 to A's topic", x.call(x.b, protocol.NewRequest(protocol.SendReplyMessageV2, h.V2().Encode(), []byte("r"))))
	if n := x.totalMax(x.ta, 4); n != 0 {
		t.Errorf("refused replies stored %d messages in %s", n, x.ta)
	}

	// Allowed: request/reply with the official client, both sides tenant A
	// (the replier needs PUB on DefaultCluster_REPLY_TOPIC).
	requester, replier := x.producerA(), x.producerA()
	replyErrs := make(chan error, 16)
	x.consumer(x.ga, x.ta, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				reply, err := consumer.CreateReplyMessage(m, []byte("re: "+string(m.Body)))
				if err == nil {
					_, err = replier.SendSync(ctx, reply)
				}
				if err != nil {
					replyErrs <- err
				}
			}
			return consumer.ConsumeSuccess, nil
		}, consumer.WithCredentials(creds("tenantA", "secretA1")))
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		_, err := requester.Request(context.Background(), 2*time.Second, primitive.NewMessage(x.ta, []byte(fmt.Sprint("q", i))))
		if err == nil {
			break
		}
		select {
		case rerr := <-replyErrs:
			t.Fatalf("reply send refused: %v", rerr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reply within 20 s: %v", err)
		}
	}
}

// Finding 6: END_TRANSACTION needs PUB on the half message's topic and
// its producer group.
func TestIsolationEndTransaction(t *testing.T) {
	t.Parallel()
	officialClient(t)
	x := newTenants(t)
	off, qo := x.sendHalf(t)
	for _, group := range []string{x.pga, "pgB"} {
		h := protocol.EndTransactionRequestHeader{ProducerGroup: group, TranStateTableOffset: qo, CommitLogOffset: off,
			CommitOrRollback: protocol.SysFlagTxCommit, MsgID: "x"}
		refused(t, "B commits A's half message as group "+group, x.call(x.b, protocol.NewRequest(protocol.EndTransaction, h.Encode(), nil)))
	}
	if got := x.halfTopics(t, x.raw); len(got) != 1 {
		t.Fatalf("A's half message decided by B's request: pending %v", got)
	}
	if n := x.totalMax(x.ta, 4); n != 0 {
		t.Errorf("refused commits stored %d messages in %s", n, x.ta)
	}
	// Allowed: the official transactional producer of A commits its own.
	tp, err := rocketmq.NewTransactionProducer(commitListener{},
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{x.ns})), producer.WithGroupName(x.pga),
		producer.WithInstanceName(uniq("tp")), producer.WithCredentials(creds("tenantA", "secretA1")))
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	defer tp.Shutdown()
	if _, err := tp.SendMessageInTransaction(context.Background(), primitive.NewMessage(x.ta, []byte("committed"))); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "A's committed message", func() bool { return x.totalMax(x.ta, 4) == 1 })
}

// commitListener commits every local transaction and check.
type commitListener struct{ checks *atomic.Int64 }

func (commitListener) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.CommitMessageState
}

func (l commitListener) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	if l.checks != nil {
		l.checks.Add(1)
	}
	return primitive.CommitMessageState
}

// unknownListener leaves every local transaction unknown (so the broker
// checks back) and commits on the check.
type unknownListener struct{ checks *atomic.Int64 }

func (unknownListener) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.UnknowState
}

func (l unknownListener) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	l.checks.Add(1)
	return primitive.CommitMessageState
}

// Finding 7: VIEW_MESSAGE_BY_ID needs SUB on the stored record's topic.
func TestIsolationViewMessage(t *testing.T) {
	t.Parallel()
	officialClient(t)
	x := newTenants(t)
	off := offsetOfMsg(t, sendOne(t, x.producerA(), primitive.NewMessage(x.ta, []byte("A's secret"))))
	view := protocol.ViewMessageRequestHeader{Offset: off}
	refused(t, "B views A's message", x.call(x.b, protocol.NewRequest(protocol.ViewMessageByID, view.Encode(), nil)))
	resp := x.call(x.a, protocol.NewRequest(protocol.ViewMessageByID, view.Encode(), nil))
	if resp.Code != protocol.Success || !strings.Contains(string(resp.Body), "A's secret") {
		t.Errorf("A views its own message: %d %q", resp.Code, resp.Remark)
	}
}

// Finding 8: a heartbeat naming another tenant's producer group does not
// get that group's check-backs.
func TestIsolationHeartbeatProducerGroup(t *testing.T) {
	t.Parallel()
	officialClient(t)
	x := newTenants(t, func(o *broker.Options) { o.TransactionTimeOut, o.TransactionCheckInterval = 1000, 500 })
	var checksA atomic.Int64
	tp, err := rocketmq.NewTransactionProducer(unknownListener{&checksA},
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{x.ns})), producer.WithGroupName(x.pga),
		producer.WithInstanceName(uniq("tp")), producer.WithCredentials(creds("tenantA", "secretA1")))
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	defer tp.Shutdown()
	// B registers as a producer of PGA after A did: before the fix, the
	// most recent producer of the group got the check, message included.
	var checksB atomic.Int64
	x.b.HandleFunc(protocol.CheckTransactionState, func(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
		checksB.Add(1)
		return nil
	})
	hb := protocol.HeartbeatData{ClientID: "evil@1", ProducerDataSet: []protocol.ProducerData{{GroupName: x.pga}}}
	if resp := x.call(x.b, protocol.NewRequest(protocol.HeartBeat, nil, hb.Encode())); resp.Code != protocol.Success {
		t.Fatalf("B's heartbeat: %d %s", resp.Code, resp.Remark)
	}
	// B keeps heartbeating, so it stays the producer heard from last (A's
	// client heartbeats again when it learns a route).
	stop := make(chan struct{})
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			x.b.Invoke(ctx, x.addr, protocol.NewRequest(protocol.HeartBeat, nil, hb.Encode()))
			cancel()
		}
	}()
	defer func() { close(stop); <-hbDone }()
	if _, err := tp.SendMessageInTransaction(context.Background(), primitive.NewMessage(x.ta, []byte("checked"))); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "A's producer checked and the message committed", func() bool {
		return checksA.Load() > 0 && x.totalMax(x.ta, 4) == 1
	})
	if n := checksB.Load(); n != 0 {
		t.Errorf("B received %d check-backs carrying A's half message", n)
	}
}

// Finding 9: LOCK_BATCH_MQ needs SUB on the group and the topics.
func TestIsolationLockBatch(t *testing.T) {
	t.Parallel()
	officialClient(t)
	x := newTenants(t)
	body := protocol.LockBatchRequestBody{ConsumerGroup: x.ga, ClientID: "evil@1"}
	for q := int32(0); q < 4; q++ {
		body.MQSet = append(body.MQSet, protocol.MessageQueue{Topic: x.ta, BrokerName: "broker-a", QueueID: q})
	}
	refused(t, "B locks A's queues", x.call(x.b, protocol.NewRequest(protocol.LockBatchMQ, nil, body.Encode())))
	// Allowed: A's official orderly consumer locks and consumes.
	sendOne(t, x.producerA(), primitive.NewMessage(x.ta, []byte("in order")))
	var ib inbox
	x.consumer(x.ga, x.ta, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			ib.add("a", msgs...)
			return consumer.ConsumeSuccess, nil
		}, consumer.WithConsumerOrder(true), consumer.WithCredentials(creds("tenantA", "secretA1")))
	ib.waitLen(t, 1, 30*time.Second)
}

// Finding 10: CONSUMER_SEND_MSG_BACK copies only a record of originTopic
// (or the group's retry topic) that the caller may read.
func TestIsolationSendBack(t *testing.T) {
	t.Parallel()
	officialClient(t)
	x := newTenants(t)
	pa := x.producerA()
	off := offsetOfMsg(t, sendOne(t, pa, primitive.NewMessage(x.ta, []byte("A's secret"))))
	for _, origin := range []string{x.tb, x.ta} {
		h := protocol.ConsumerSendMsgBackRequestHeader{Offset: off, Group: x.gb, OriginTopic: origin, MaxReconsumeTimes: 16}
		refused(t, "B sends A's message back into its retry topic, originTopic "+origin,
			x.call(x.b, protocol.NewRequest(protocol.ConsumerSendMsgBack, h.Encode(), nil)))
	}
	// Allowed: A's official consumer asks for a retry, which is a send-back.
	// v2.1.2 learns a new group's retry topic only at its next route
	// refresh (30 s): create it first, as an existing group has it
	// (TestRetryThenDLQ does the same).
	retry := "%RETRY%" + x.ga
	ch := protocol.CreateTopicRequestHeader{Topic: retry, DefaultTopic: "TBW102", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	if resp := x.invoke(protocol.NewRequest(protocol.UpdateAndCreateTopic, ch.Encode(), nil)); resp.Code != protocol.Success {
		t.Fatalf("create %s: %d %s", retry, resp.Code, resp.Remark)
	}
	x.waitRoute(retry)
	var ib inbox
	var first atomic.Bool
	x.consumer(x.ga, x.ta, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			ib.add("a", msgs...)
			if first.CompareAndSwap(false, true) {
				return consumer.ConsumeRetryLater, nil
			}
			return consumer.ConsumeSuccess, nil
		}, consumer.WithCredentials(creds("tenantA", "secretA1")))
	ib.waitLen(t, 2, 30*time.Second)
	if n := ib.count(func(r received) bool { return r.msg.ReconsumeTimes == 1 }); n != 1 {
		t.Errorf("A's retried message: %d deliveries with reconsumeTimes 1, want 1", n)
	}
}
