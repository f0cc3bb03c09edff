package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestRequestReply runs examples/producer/rpc against examples/consumer/rpc:
// producer.Request sends to a topic, a consumer answers with
// consumer.CreateReplyMessage through its own producer (code 324), and the
// broker pushes the reply to the requester (code 326).
//
// v2.1.2 quirk (rocketmq-protocol.md §7.3): CreateReplyMessage parses the
// reply body as a property string instead of using it as the body, so the
// reply arrives with an empty body and the payload can only travel as
// properties ("key\x01value\x02").
func TestRequestReply(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	topic := uniq("RequestTopic")
	requester := e.producer()
	replier := e.producer()
	// The requester must not know the topic yet: Request then fetches the
	// route and heartbeats before sending, so the broker knows where to
	// push the reply (otherwise the first periodic heartbeat, 1 s after
	// Start, is needed -- the same with RocketMQ).
	sendOne(t, replier, primitive.NewMessage(topic, []byte("warm-up")))
	e.waitRoute(topic)

	replyErrs := make(chan error, 16)
	e.consumer(uniq("rpc"), topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				if string(m.Body) == "warm-up" {
					continue
				}
				reply, err := consumer.CreateReplyMessage(m, []byte("answer\x01re: "+string(m.Body)+"\x02"))
				if err != nil {
					replyErrs <- fmt.Errorf("CreateReplyMessage: %w", err)
					continue
				}
				if _, err := replier.SendSync(ctx, reply); err != nil {
					replyErrs <- fmt.Errorf("send reply: %w", err)
				}
			}
			return consumer.ConsumeSuccess, nil
		})

	type result struct {
		msg *primitive.Message
		err error
	}
	// request sends one request and waits for its answer, or for a failed
	// reply send on the replier's side.
	request := func(body string, ttl time.Duration) (*primitive.Message, error) {
		done := make(chan result, 1)
		go func() {
			m, err := requester.Request(context.Background(), ttl, primitive.NewMessage(topic, []byte(body)))
			done <- result{m, err}
		}()
		select {
		case rerr := <-replyErrs:
			t.Fatalf("%s: %v", body, rerr)
		case r := <-done:
			return r.msg, r.err
		}
		return nil, nil
	}
	// The broker pushes a reply on the requester's producer connection,
	// known from its heartbeat; v2.1.2 sends the first one 1 s after Start
	// (Request heartbeats at once only for a topic the NameServer does not
	// know). Until then replies are stored but cannot be pushed: retry the
	// first request until the requester is known.
	var warm *primitive.Message
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; warm == nil; i++ {
		m, err := request(fmt.Sprintf("hello %d", i), 2*time.Second)
		if err == nil {
			warm = m
		} else if time.Now().After(deadline) {
			t.Fatalf("no reply within 10 s: %v", err)
		}
	}

	for i := 0; i < 3; i++ {
		body := fmt.Sprintf("question %d", i)
		start := time.Now()
		resp, err := request(body, 5*time.Second)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got := resp.GetProperty("answer"); got != "re: "+body {
			t.Errorf("request %d: reply property answer=%q, want %q (properties %v)", i, got, "re: "+body, resp.GetProperties())
		}
		if len(resp.Body) != 0 {
			t.Errorf("request %d: reply body %q; v2.1.2 sends replies without a body", i, resp.Body)
		}
		if resp.Topic != "DefaultCluster_REPLY_TOPIC" {
			t.Errorf("request %d: reply topic %q", i, resp.Topic)
		}
		t.Logf("request %d answered in %v", i, time.Since(start))
	}

	// storeReplyMessageEnable (default true): the replies are stored too.
	eventually(t, 5*time.Second, "the stored replies", func() bool { return e.maxOffset("DefaultCluster_REPLY_TOPIC", 0) >= 4 })
	for _, m := range e.pullAll("raw_reader", "DefaultCluster_REPLY_TOPIC", 0) {
		if m.Property(protocol.PropCorrelationID) == "" || m.Property(protocol.PropMsgType) != "reply" {
			t.Errorf("stored reply properties %v", m.Properties)
		}
	}
}

// TestReplyToUnknownClient sends a reply (code 324) whose requester is not
// connected: the broker still stores it (storeReplyMessageEnable) and
// answers the sender without crashing.
func TestReplyToUnknownClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "raw_pg", Topic: "DefaultCluster_REPLY_TOPIC", DefaultTopic: protocol.DefaultTopicTemplate,
		DefaultTopicQueueNums: 4, QueueID: 0, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1,
		Properties: protocol.EncodeProperties(map[string]string{
			protocol.PropMsgType: "reply", protocol.PropCorrelationID: "c-1", protocol.PropReplyToClient: "10.0.0.1@nobody", protocol.PropTTL: "3",
		})}
	resp := e.invoke(protocol.NewRequest(protocol.SendReplyMessage, h.Encode(), []byte("orphan reply")))
	if resp.Code != protocol.Success {
		t.Fatalf("orphan reply: code %d %s", resp.Code, resp.Remark)
	}
	if resp.Remark == "" {
		t.Errorf("orphan reply: no remark about the failed push")
	}
	eventually(t, 5*time.Second, "the stored reply", func() bool { return e.maxOffset("DefaultCluster_REPLY_TOPIC", 0) == 1 })
}
