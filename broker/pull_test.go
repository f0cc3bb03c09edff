package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestPullResponseCodes checks the raw PULL_MESSAGE answers the official
// client depends on (rocketmq-protocol.md §2.8, §5.7, §7.1 #8 and #21):
// every one of codes 0/19/20/21 carries nextBeginOffset, minOffset,
// maxOffset and suggestWhichBrokerId.
func TestPullResponseCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const topic = "PullCodes"
	ch := protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "defaultTopic", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	if resp := e.invoke(protocol.NewRequest(protocol.UpdateAndCreateTopic, ch.Encode(), nil)); resp.Code != protocol.Success {
		t.Fatalf("create topic: code %d %s", resp.Code, resp.Remark)
	}
	for i, tag := range []string{"A", "A", "B", "B", "B", "A"} {
		h := protocol.SendMessageRequestHeader{ProducerGroup: "raw_pg", Topic: topic, DefaultTopic: protocol.DefaultTopicTemplate,
			DefaultTopicQueueNums: 4, QueueID: 0, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1,
			Properties: protocol.EncodeProperties(map[string]string{protocol.PropTags: tag})}
		if resp := e.invoke(protocol.NewRequest(protocol.SendMessage, h.Encode(), []byte{byte('0' + i)})); resp.Code != protocol.Success {
			t.Fatalf("send: code %d %s", resp.Code, resp.Remark)
		}
	}
	eventually(t, 5*time.Second, "dispatch", func() bool { return e.maxOffset(topic, 0) == 6 })

	tests := []struct {
		name        string
		queue       int32
		offset      int64
		max         int32
		expr        string
		code        int16
		next, count int64
	}{
		{"found", 0, 0, 32, "*", protocol.Success, 6, 6},
		{"maxMsgNums 0 returns one message", 0, 0, 0, "*", protocol.Success, 1, 1},
		{"maxMsgNums limits", 0, 1, 2, "*", protocol.Success, 3, 2},
		{"tag filter skips, next offset past the scanned entries", 0, 2, 32, "A", protocol.Success, 6, 1},
		{"nothing matches", 0, 2, 3, "C", protocol.PullRetryImmediately, 6, 0},
		{"at the end", 0, 6, 32, "*", protocol.PullNotFound, 6, 0},
		{"past the end", 0, 9, 32, "*", protocol.PullOffsetMoved, 6, 0},
		{"empty queue at 0", 1, 0, 32, "*", protocol.PullNotFound, 0, 0},
		{"empty queue past 0", 1, 5, 32, "*", protocol.PullOffsetMoved, 0, 0},
	}
	for _, tc := range tests {
		resp, msgs := e.pull("raw_cg", topic, tc.queue, tc.offset, tc.max, "TAG", tc.expr)
		if resp.Code != tc.code {
			t.Errorf("%s: code %d %s, want %d", tc.name, resp.Code, resp.Remark, tc.code)
			continue
		}
		for _, k := range []string{"nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId"} {
			if _, ok := resp.ExtFields[k]; !ok {
				t.Errorf("%s: response lacks %s: %v", tc.name, k, resp.ExtFields)
			}
		}
		var rh protocol.PullMessageResponseHeader
		if err := rh.Decode(resp.ExtFields); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if rh.NextBeginOffset != tc.next || int64(len(msgs)) != tc.count {
			t.Errorf("%s: next %d with %d messages, want %d with %d", tc.name, rh.NextBeginOffset, len(msgs), tc.next, tc.count)
		}
		for i, m := range msgs {
			if tc.expr != "*" && m.Tags() != tc.expr {
				t.Errorf("%s: tag %q passed", tc.name, m.Tags())
			}
			if i > 0 && m.QueueOffset <= msgs[i-1].QueueOffset {
				t.Errorf("%s: queue offsets not increasing", tc.name)
			}
		}
	}

	// No heartbeat and no subscription bit: SUBSCRIPTION_NOT_EXIST.
	h := protocol.PullMessageRequestHeader{ConsumerGroup: "never_heartbeat", Topic: topic, QueueID: 0, MaxMsgNums: 32, SysFlag: protocol.PullSuspend, SuspendTimeoutMillis: 20000}
	if resp := e.invoke(protocol.NewRequest(protocol.PullMessage, h.Encode(), nil)); resp.Code != protocol.SubscriptionNotExist {
		t.Errorf("pull without a subscription: code %d %s, want 24", resp.Code, resp.Remark)
	}

	// Long polling: a pull at the end is held and answered once a message
	// arrives, well before its 20 s suspend timeout.
	lp := protocol.PullMessageRequestHeader{ConsumerGroup: "raw_cg", Topic: topic, QueueID: 1, MaxMsgNums: 32,
		SysFlag: protocol.PullSuspend | protocol.PullSubscription, SuspendTimeoutMillis: 20000, Subscription: "*", ExpressionType: "TAG"}
	type result struct {
		resp *protocol.Command
		err  error
	}
	held := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := e.raw.Invoke(ctx, e.addr, protocol.NewRequest(protocol.PullMessage, lp.Encode(), nil))
		held <- result{resp, err}
	}()
	sh := protocol.SendMessageRequestHeader{ProducerGroup: "raw_pg", Topic: topic, DefaultTopic: protocol.DefaultTopicTemplate,
		DefaultTopicQueueNums: 4, QueueID: 1, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1}
	if resp := e.invoke(protocol.NewRequest(protocol.SendMessage, sh.Encode(), []byte("wake up"))); resp.Code != protocol.Success {
		t.Fatalf("send: code %d %s", resp.Code, resp.Remark)
	}
	select {
	case r := <-held:
		if r.err != nil || r.resp.Code != protocol.Success {
			t.Fatalf("held pull: %v %+v", r.err, r.resp)
		}
		msgs, err := protocol.DecodeMessages(r.resp.Body)
		if err != nil || len(msgs) != 1 || string(msgs[0].Body) != "wake up" {
			t.Errorf("held pull returned %d messages (%v)", len(msgs), err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held pull was not woken by the new message")
	}
}
