package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func TestClusterAndTopicCommands(t *testing.T) {
	h := start(t)
	if out := h.ok(t, "clusterList"); !strings.Contains(out, "#Cluster") || !strings.Contains(out, "broker-a") || !strings.Contains(out, h.broker.Addr()) {
		t.Fatalf("clusterList:\n%s", out)
	}
	var bs []brokerRef
	h.okJSON(t, &bs, "clusterList", "-n", h.ns)
	if len(bs) != 1 || bs[0].BrokerName != "broker-a" || bs[0].BrokerID != 0 || bs[0].Cluster != "DefaultCluster" {
		t.Fatalf("clusterList --json: %+v", bs)
	}

	out := h.ok(t, "updateTopic", "-c", "DefaultCluster", "-t", "orders", "-r", "4", "-w", "4")
	if !strings.Contains(out, "create topic orders on "+h.broker.Addr()+" success") {
		t.Fatalf("updateTopic:\n%s", out)
	}
	var topics []string
	h.okJSON(t, &topics, "topicList")
	if !contains(topics, "orders") {
		t.Fatalf("topicList: %v", topics)
	}
	h.okJSON(t, &topics, "topicList", "-c", "DefaultCluster")
	if !contains(topics, "orders") || !contains(topics, "TBW102") {
		t.Fatalf("topicList -c: %v", topics)
	}
	var rv routeView
	h.okJSON(t, &rv, "topicRoute", "-t", "orders")
	if len(rv.Queues) != 1 || rv.Queues[0].ReadQueueNums != 4 || rv.Queues[0].Perm != "RW-" || len(rv.Brokers) != 1 {
		t.Fatalf("topicRoute: %+v", rv)
	}
	if out := h.ok(t, "topicRoute", "-t", "orders"); !strings.Contains(out, "#ReadQueues") {
		t.Fatalf("topicRoute table:\n%s", out)
	}

	for i := 0; i < 3; i++ {
		h.ok(t, "sendMessage", "-t", "orders", "-p", "body", "-b", "broker-a", "-i", "2")
	}
	// consume queues are built asynchronously after the send replies
	var qs []queueStatus
	waitFor(t, "3 messages dispatched", func() bool {
		r := h.mqadmin(t, "topicStatus", "-t", "orders", "--json")
		return r.code == 0 && fromJSON(r.stdout, &qs) == nil && len(qs) == 4 && qs[2].MaxOffset == 3
	})
	if len(qs) != 4 || qs[2].MaxOffset != 3 || qs[0].MaxOffset != 0 || qs[2].LastUpdateTime.IsZero() {
		t.Fatalf("topicStatus: %+v", qs)
	}
	if out := h.ok(t, "topicStatus", "-t", "orders"); !strings.Contains(out, "#MaxOffset") {
		t.Fatalf("topicStatus table:\n%s", out)
	}

	var st []brokerStatus
	h.okJSON(t, &st, "brokerStatus")
	if len(st) != 1 || st[0].Role != "ASYNC_MASTER" || st[0].Topics == 0 || st[0].CommitLogSize == 0 || st[0].Error != "" {
		t.Fatalf("brokerStatus: %+v", st)
	}
	if out := h.ok(t, "brokerStatus", "-b", h.broker.Addr()); !strings.Contains(out, "ASYNC_MASTER") || !strings.Contains(out, "0 slave(s)") {
		t.Fatalf("brokerStatus table:\n%s", out)
	}
	h.fails(t, 1, "did not answer", "brokerStatus", "-b", "127.0.0.1:1", "--timeout", "500ms")
	var ha []protocol.HAStatus
	h.okJSON(t, &ha, "haStatus")
	if len(ha) != 1 || ha[0].Role != "ASYNC_MASTER" || ha[0].BrokerName != "broker-a" {
		t.Fatalf("haStatus: %+v", ha)
	}
	if out := h.ok(t, "replicationStatus"); !strings.Contains(out, "no slave") {
		t.Fatalf("haStatus table:\n%s", out)
	}

	h.ok(t, "deleteTopic", "-t", "orders")
	h.fails(t, 1, "topic route not found", "topicRoute", "-t", "orders")
	h.fails(t, 1, "does not exist", "deleteTopic", "-t", "orders")
	h.fails(t, 2, "refusing to delete system topic", "deleteTopic", "-t", "TBW102")
}

func TestMessageCommands(t *testing.T) {
	h := start(t)
	h.createTopic(t, "mail", 2)
	var sent sendView
	h.okJSON(t, &sent, "sendMessage", "-t", "mail", "-p", "hello", "-k", "order-7", "-c", "TagA")
	if sent.Status != "SEND_OK" || sent.OffsetMsgID == "" || sent.BrokerName != "broker-a" {
		t.Fatalf("sendMessage: %+v", sent)
	}
	if out := h.ok(t, "sendMessage", "-t", "mail", "-p", "second"); !strings.Contains(out, "SEND_OK") {
		t.Fatalf("sendMessage table:\n%s", out)
	}

	var ms []messageView
	h.okJSON(t, &ms, "queryMsgById", "-i", sent.OffsetMsgID)
	if len(ms) != 1 || ms[0].Body != "hello" || ms[0].Tags != "TagA" || ms[0].MsgID != sent.MsgID {
		t.Fatalf("queryMsgById: %+v", ms)
	}
	// a unique id is looked up in the index, built asynchronously
	var out string
	waitFor(t, "unique id indexed", func() bool {
		r := h.mqadmin(t, "queryMsgById", "-i", sent.MsgID, "-t", "mail")
		out = r.stdout
		return r.code == 0
	})
	if !strings.Contains(out, `Message Body:     "hello"`) && !strings.Contains(out, `"hello"`) {
		t.Fatalf("queryMsgById by unique id:\n%s", out)
	}
	h.fails(t, 2, "give -t topic", "queryMsgById", "-i", "not-an-id")

	waitFor(t, "key index", func() bool {
		r := h.mqadmin(t, "queryMsgByKey", "-t", "mail", "-k", "order-7")
		return r.code == 0 && strings.Contains(r.stdout, sent.MsgID)
	})
	h.fails(t, 1, `has key "nope"`, "queryMsgByKey", "-t", "mail", "-k", "nope")

	h.okJSON(t, &ms, "queryMsgByOffset", "-t", "mail", "-b", "broker-a", "-i", strconv.Itoa(int(sent.QueueID)), "-o", strconv.FormatInt(sent.QueueOffset, 10))
	if len(ms) != 1 || ms[0].Body != "hello" {
		t.Fatalf("queryMsgByOffset: %+v", ms)
	}
	h.fails(t, 1, "no message at", "queryMsgByOffset", "-t", "mail", "-b", "broker-a", "-i", strconv.Itoa(int(sent.QueueID)), "-o", "99")

	h.okJSON(t, &ms, "consumeMessage", "-t", "mail")
	if len(ms) != 2 {
		t.Fatalf("consumeMessage: %+v", ms)
	}
	h.okJSON(t, &ms, "consumeMessage", "-t", "mail", "-c", "1")
	if len(ms) != 1 {
		t.Fatalf("consumeMessage -c 1: %+v", ms)
	}
	if out := h.ok(t, "consumeMessage", "-t", "mail", "-s", "now"); strings.Contains(out, "hello") {
		t.Fatalf("consumeMessage -s now printed old messages:\n%s", out)
	}
	if out := h.ok(t, "consumeMessage", "-t", "mail"); !strings.Contains(out, `"hello"`) || !strings.Contains(out, `"second"`) {
		t.Fatalf("consumeMessage table:\n%s", out)
	}
}

func TestConsumerCommands(t *testing.T) {
	h := start(t)
	h.createTopic(t, "jobs", 2)
	for i := 0; i < 6; i++ {
		h.ok(t, "sendMessage", "-t", "jobs", "-p", fmt.Sprint("job-", i), "-b", "broker-a", "-i", strconv.Itoa(i%2))
	}
	// An offline group that consumed everything.
	ctx := context.Background()
	pc, err := mqclient.NewPullConsumer("g-offline", mqclient.WithNameServers(h.ns))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for q := int32(0); q < 2; q++ {
		if err := pc.Commit(ctx, mqclient.Queue{Topic: "jobs", BrokerName: "broker-a", QueueID: q}, 3); err != nil {
			t.Fatal(err)
		}
	}
	shutdown(pc)

	var pv progressView
	h.okJSON(t, &pv, "consumerProgress", "-g", "g-offline", "-t", "jobs")
	if len(pv.Queues) != 2 || pv.TotalLag != 0 || pv.Queues[0].ConsumerOffset != 3 {
		t.Fatalf("consumerProgress: %+v", pv)
	}
	h.fails(t, 1, "not online", "consumerConnection", "-g", "g-offline")

	var rs []resetRow
	h.okJSON(t, &rs, "resetOffsetByTime", "-g", "g-offline", "-t", "jobs", "-s", "0")
	if len(rs) != 2 || rs[0].OldOffset != 3 || rs[0].NewOffset != 0 || rs[0].Error != "" {
		t.Fatalf("resetOffsetByTime: %+v", rs)
	}
	var out string
	waitFor(t, "the reset offsets", func() bool {
		r := h.mqadmin(t, "consumerProgress", "-g", "g-offline")
		out = r.stdout
		return r.code == 0 && strings.Contains(out, "Diff Total: 6")
	})
	if !strings.Contains(out, "Diff Total: 6") {
		t.Fatalf("consumerProgress after reset:\n%s", out)
	}
	// Forward to now: -f=false keeps offsets that are already earlier.
	h.okJSON(t, &rs, "resetOffsetByTime", "-g", "g-offline", "-t", "jobs", "-s", "now", "-f=false")
	if rs[0].NewOffset != 0 {
		t.Fatalf("reset without force moved forward: %+v", rs)
	}
	h.okJSON(t, &rs, "resetOffsetByTime", "-g", "g-offline", "-t", "jobs", "-s", "now")
	if rs[0].NewOffset != 3 {
		t.Fatalf("reset to now: %+v", rs)
	}

	// An online group: consumerConnection lists it, reset refuses.
	c, err := mqclient.NewPushConsumer("g-online", mqclient.WithNameServers(h.ns), mqclient.WithHeartbeatInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe("jobs", "*", func(context.Context, *mqclient.MessageExt) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(c) })
	var cv connectionView
	waitFor(t, "consumer online", func() bool {
		r := h.mqadmin(t, "consumerConnection", "-g", "g-online", "--json")
		return r.code == 0 && fromJSON(r.stdout, &cv) == nil && len(cv.Connections) == 1
	})
	if len(cv.Subscriptions) == 0 || cv.MessageModel != "CLUSTERING" {
		t.Fatalf("consumerConnection: %+v", cv)
	}
	if out := h.ok(t, "consumerConnection", "-g", "g-online"); !strings.Contains(out, "#ClientId") || !strings.Contains(out, "jobs") {
		t.Fatalf("consumerConnection table:\n%s", out)
	}
	h.fails(t, 1, "stop them first", "resetOffsetByTime", "-g", "g-online", "-t", "jobs", "-s", "0")

	// A producer group: producerConnection lists its one client once it
	// has heartbeated to the broker; an unknown group is not online.
	p, err := mqclient.NewProducer(mqclient.WithProducerGroup("p-online"), mqclient.WithNameServers(h.ns), mqclient.WithHeartbeatInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(p) })
	if _, err := p.Send(ctx, &mqclient.Message{Topic: "jobs", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	var prv producerView
	waitFor(t, "producer online", func() bool {
		r := h.mqadmin(t, "producerConnection", "-g", "p-online", "--json")
		return r.code == 0 && fromJSON(r.stdout, &prv) == nil && len(prv.Connections) == 1
	})
	if prv.Group != "p-online" || prv.Connections[0].ClientID != p.ClientID() || prv.Connections[0].Language != "GO" || prv.Connections[0].ClientAddr == "" {
		t.Fatalf("producerConnection: %+v, want the producer %s", prv, p.ClientID())
	}
	if out := h.ok(t, "producerConnection", "-g", "p-online"); !strings.Contains(out, "#ClientId") || !strings.Contains(out, p.ClientID()) {
		t.Fatalf("producerConnection table:\n%s", out)
	}
	h.fails(t, 1, "producer group not online", "producerConnection", "-g", "p-nobody")
	h.fails(t, 2, "-g group", "producerConnection")
	h.fails(t, 1, "has no offsets or subscriptions", "consumerProgress", "-g", "nobody")
}

func TestDLQCommands(t *testing.T) {
	h := start(t)
	h.createTopic(t, "pay", 1)
	a := h.admin(t)
	ctx := context.Background()
	var sent []sendView
	for i := 0; i < 3; i++ {
		var s sendView
		h.okJSON(t, &s, "sendMessage", "-t", "pay", "-p", fmt.Sprint("pay-", i), "-k", fmt.Sprint("k", i))
		sent = append(sent, s)
		// Straight to %DLQ%g-pay, as a consumer that gave up would.
		_, off, err := protocol.ParseOffsetMsgID(s.OffsetMsgID)
		if err != nil {
			t.Fatal(err)
		}
		hd := protocol.ConsumerSendMsgBackRequestHeader{Offset: off, Group: "g-pay", DelayLevel: -1, OriginMsgID: s.MsgID, OriginTopic: "pay", MaxReconsumeTimes: -1}
		resp, err := a.Invoke(ctx, h.broker.Addr(), protocol.NewRequest(protocol.ConsumerSendMsgBack, hd.Encode(), nil))
		if err == nil {
			err = resp.Err()
		}
		if err != nil {
			t.Fatalf("send back: %v", err)
		}
	}
	var rows []dlqRow
	waitFor(t, "dead letters", func() bool {
		r := h.mqadmin(t, "dlq", "list", "-g", "g-pay", "--json")
		return r.code == 0 && fromJSON(r.stdout, &rows) == nil && len(rows) == 3
	})
	if rows[0].OriginTopic != "pay" || rows[0].Body != "pay-0" || rows[0].Topic != "%DLQ%g-pay" {
		t.Fatalf("dlq list: %+v", rows[0])
	}
	if out := h.ok(t, "dlq", "list", "-g", "g-pay"); !strings.Contains(out, "#OriginTopic") || !strings.Contains(out, "pay") {
		t.Fatalf("dlq list table:\n%s", out)
	}

	// Resend one by id to the group's retry topic.
	out := h.ok(t, "dlq", "resend", "-g", "g-pay", "-i", rows[1].OffsetMsgID, "--rate", "100")
	if !strings.Contains(out, "[1/1] offset=1 "+rows[1].OffsetMsgID+" -> %RETRY%g-pay OK") || !strings.Contains(out, "resent 1, failed 0") {
		t.Fatalf("dlq resend -i:\n%s", out)
	}
	// The broker creates %RETRY%g-pay on the resend and registers it with
	// the NameServer asynchronously: wait for its route.
	var ms []messageView
	waitFor(t, "the resent copy", func() bool {
		r := h.mqadmin(t, "consumeMessage", "-t", "%RETRY%g-pay", "--json")
		return r.code == 0 && fromJSON(r.stdout, &ms) == nil && len(ms) == 1
	})
	if len(ms) != 1 || ms[0].Body != "pay-1" || ms[0].Properties["RETRY_TOPIC"] != "pay" ||
		ms[0].Properties["ORIGIN_MESSAGE_ID"] != sent[1].MsgID || ms[0].Properties["RESEND_OF"] != rows[1].OffsetMsgID {
		t.Fatalf("resent copy: %+v", ms)
	}

	// Resend all to the original topic, JSON results.
	var res []resendResult
	h.okJSON(t, &res, "dlq", "resend", "-g", "g-pay", "--to-origin", "--rate", "1000")
	if len(res) != 3 || !res[2].OK || res[2].Target != "pay" || res[2].NewMsgID == "" {
		t.Fatalf("dlq resend --to-origin: %+v", res)
	}
	// The broker answers a send before its dispatcher has written the
	// consume-queue unit that topicStatus counts: wait for the three.
	var qs []queueStatus
	waitFor(t, "pay's queue to hold the three resent copies", func() bool {
		r := h.mqadmin(t, "topicStatus", "-t", "pay", "--json")
		return r.code == 0 && fromJSON(r.stdout, &qs) == nil && len(qs) == 1 && qs[0].MaxOffset >= 6
	})
	if qs[0].MaxOffset != 6 {
		t.Fatalf("pay after resend: %+v", qs)
	}
	res = nil
	h.okJSON(t, &res, "dlq", "resend", "-g", "g-pay", "-o", "2", "--dry-run")
	if len(res) != 1 || res[0].Offset != 2 || res[0].NewMsgID != "" {
		t.Fatalf("dry run: %+v", res)
	}
	h.fails(t, 1, "g-none", "dlq", "list", "-g", "g-none")
}

func TestHalfCommands(t *testing.T) {
	h := start(t)
	h.createTopic(t, "tx", 1)
	ctx := context.Background()
	p, err := mqclient.NewTransactionProducer(func(context.Context, *mqclient.MessageExt) mqclient.TransactionState {
		return mqclient.TransactionUnknown
	},
		mqclient.WithNameServers(h.ns), mqclient.WithProducerGroup("pg-tx"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(p) })
	for i := 0; i < 2; i++ {
		if _, _, err := p.SendInTransaction(ctx, &mqclient.Message{Topic: "tx", Body: []byte(fmt.Sprint("tx-", i))},
			func(context.Context) error { return mqclient.ErrTransactionUnknown }); err == nil {
			t.Fatal("want ErrTransactionUnknown back")
		}
	}
	var hs []halfRow
	h.okJSON(t, &hs, "half", "list")
	if len(hs) != 2 || hs[0].ProducerGroup != "pg-tx" || hs[0].Topic != "tx" || hs[0].Parked {
		t.Fatalf("half list: %+v", hs)
	}
	if out := h.ok(t, "half", "list", "-b", h.broker.Addr()); !strings.Contains(out, "pending") || !strings.Contains(out, "pg-tx") {
		t.Fatalf("half list table:\n%s", out)
	}
	h.ok(t, "half", "list", "--parked")

	off0, off1 := strconv.FormatInt(hs[0].QueueOffset, 10), strconv.FormatInt(hs[1].QueueOffset, 10)
	h.ok(t, "half", "resume", "-b", h.broker.Addr(), "-o", off0, "--operator", "alice")
	if out := h.ok(t, "half", "commit", "-b", h.broker.Addr(), "-o", off0, "--operator", "alice"); !strings.Contains(out, "commit half message at offset "+off0) {
		t.Fatalf("half commit:\n%s", out)
	}
	h.ok(t, "half", "rollback", "-b", h.broker.Addr(), "-o", off1, "--operator", "bob", "--json")
	h.okJSON(t, &hs, "half", "list")
	if len(hs) != 0 {
		t.Fatalf("half list after decisions: %+v", hs)
	}
	var qs []queueStatus
	waitFor(t, "committed message visible", func() bool {
		r := h.mqadmin(t, "topicStatus", "-t", "tx", "--json")
		return r.code == 0 && fromJSON(r.stdout, &qs) == nil && qs[0].MaxOffset == 1
	})
	h.fails(t, 1, "no pending half message", "half", "commit", "-b", h.broker.Addr(), "-o", off0, "--operator", "alice")
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
