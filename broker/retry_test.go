package broker_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

const scheduleTopic = "SCHEDULE_TOPIC_XXXX"

func fastDelays(o *broker.Options) { o.Store.MessageDelayLevel = fastDelayLevels }

// TestRetryThenDLQ: a concurrent consumer returning ConsumeRetryLater
// (examples/consumer/retry/concurrent) gets the message back from
// %RETRY%group with ReconsumeTimes incremented, never before its delay
// level (3 + reconsumeTimes) is due; after MaxReconsumeTimes (2) the
// broker moves it to %DLQ%group. Messages that succeed are not retried.
func TestRetryThenDLQ(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastDelays)
	topic := uniq("Retry")
	p := e.producer()
	sendOne(t, p, primitive.NewMessage(topic, []byte("ok")))
	failRes := sendOne(t, p, primitive.NewMessage(topic, []byte("fail")).WithTag("F").WithKeys([]string{"fail-key"}))
	e.waitRoute(topic)

	group := uniq("rg")
	// The broker creates %RETRY%group on the group's first heartbeat, which
	// v2.1.2 sends after Start fetched its routes: a brand-new group would
	// see its retry topic only at the next route refresh (30 s), with Java
	// as with Tide. Create it first, as an existing group would have it.
	ch := protocol.CreateTopicRequestHeader{Topic: "%RETRY%" + group, DefaultTopic: "defaultTopic", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	if resp := e.invoke(protocol.NewRequest(protocol.UpdateAndCreateTopic, ch.Encode(), nil)); resp.Code != protocol.Success {
		t.Fatalf("create the retry topic: code %d %s", resp.Code, resp.Remark)
	}
	e.waitRoute("%RETRY%" + group)
	type attempt struct {
		at             time.Time
		reconsumeTimes int32
		topic          string
		msgID          string
	}
	var (
		mu       sync.Mutex
		attempts []attempt
		oks      int
	)
	fn := func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			if string(m.Body) != "fail" {
				oks++
				continue
			}
			attempts = append(attempts, attempt{time.Now(), m.ReconsumeTimes, m.Topic, m.MsgId})
			return consumer.ConsumeRetryLater, nil
		}
		return consumer.ConsumeSuccess, nil
	}
	e.consumer(group, topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, fn,
		consumer.WithMaxReconsumeTimes(2))
	nAttempts := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(attempts)
	}
	eventually(t, 10*time.Second, "the first attempt", func() bool { return nAttempts() >= 1 })

	// The send-back parks the copy in the schedule queue of level 3.
	eventually(t, 5*time.Second, "the retry copy in SCHEDULE_TOPIC_XXXX queue 2", func() bool {
		return e.maxOffset(scheduleTopic, 2) >= 1
	})
	parked := e.pullAll("raw_reader", scheduleTopic, 2)
	if len(parked) != 1 || string(parked[0].Body) != "fail" {
		t.Fatalf("schedule queue 2 holds %d messages", len(parked))
	}
	pm := parked[0]
	if pm.Property(protocol.PropRealTopic) != "%RETRY%"+group || pm.Property(protocol.PropDelayLevel) != "3" ||
		pm.Property(protocol.PropRetryTopic) != topic || pm.ReconsumeTimes != 1 ||
		pm.Property(protocol.PropOriginMessageID) != failRes.MsgID {
		t.Errorf("parked retry copy: reconsumeTimes %d, properties %v", pm.ReconsumeTimes, pm.Properties)
	}
	if !scheduleWired() {
		t.Skip(noSchedule + "; retried messages cannot come back")
	}

	dlq := "%DLQ%" + group
	deadline := time.Now().Add(15 * time.Second)
	for !(nAttempts() >= 3 && e.maxOffset(dlq, 0) == 1) {
		if time.Now().After(deadline) {
			mu.Lock()
			defer mu.Unlock()
			var retryMax int64
			for q := int32(0); q < 1; q++ {
				retryMax += e.maxOffset("%RETRY%"+group, q)
			}
			var sched []int64
			for q := int32(0); q < 18; q++ {
				sched = append(sched, e.maxOffset(scheduleTopic, q))
			}
			t.Fatalf("no DLQ message after 15s: attempts %+v, %%RETRY%% max offset %d, schedule queues %v, DLQ max offset %d",
				attempts, retryMax, sched, e.maxOffset(dlq, 0))
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	got := append([]attempt(nil), attempts...)
	nOK := oks
	mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("%d attempts, want 3 (first + 2 reconsumes)", len(got))
	}
	for i, a := range got {
		if a.reconsumeTimes != int32(i) {
			t.Errorf("attempt %d: ReconsumeTimes %d, want %d", i, a.reconsumeTimes, i)
		}
		if a.topic != topic {
			t.Errorf("attempt %d: topic %q, want the original %q", i, a.topic, topic)
		}
		if i > 0 {
			level := 3 + i - 1
			// Store timestamps are whole milliseconds (as in RocketMQ) and
			// the delay runs from the send-back's store time, which can
			// truncate to just before the previous callback's clock reading:
			// up to 1 ms early is the format, not a bug.
			if d := a.at.Sub(got[i-1].at); d < delayOf(level)-time.Millisecond {
				t.Errorf("attempt %d came %v after the previous one, before its delay level %d (%v)", i, d, level, delayOf(level))
			}
		}
	}
	if nOK != 1 {
		t.Errorf("the successful message was consumed %d times", nOK)
	}
	msgs := e.pullAll("raw_reader", dlq, 0)
	if len(msgs) != 1 || string(msgs[0].Body) != "fail" {
		t.Fatalf("DLQ holds %d messages", len(msgs))
	}
	if m := msgs[0]; m.ReconsumeTimes != 3 || m.Property(protocol.PropOriginMessageID) != failRes.MsgID || m.Tags() != "F" {
		t.Errorf("DLQ message: reconsumeTimes %d, properties %v", m.ReconsumeTimes, m.Properties)
	}
	// No retry after the DLQ.
	if n := nAttempts(); n != 3 {
		t.Errorf("%d attempts after the DLQ move", n)
	}
}

// TestDelayLevels sends messages with msg.WithDelayTimeLevel
// (examples/producer/delay): they are parked in SCHEDULE_TOPIC_XXXX
// (queue level-1, level clamped to 18) at once, and delivered to their
// topic never before the configured delay.
func TestDelayLevels(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastDelays)
	topic := uniq("Delay")
	p := e.producer()
	sendOne(t, p, primitive.NewMessage(topic, []byte("now")))
	e.waitRoute(topic)

	levels := []int{1, 2, 6, 30} // 30 is clamped to 18
	sentAt := map[string]time.Time{}
	for _, l := range levels {
		body := fmt.Sprintf("level %d", l)
		sentAt[body] = time.Now()
		sendOne(t, p, primitive.NewMessage(topic, []byte(body)).WithDelayTimeLevel(l))
	}
	for _, l := range levels {
		q := int32(min(l, 18) - 1)
		eventually(t, 5*time.Second, fmt.Sprintf("level %d parked in schedule queue %d", l, q), func() bool {
			return e.maxOffset(scheduleTopic, q) >= 1
		})
	}
	// Dispatched in commit log order: "now" is visible, the rest is not.
	if n := e.totalMax(topic, 4); n != 1 {
		t.Fatalf("delayed messages reached the topic at once: %d messages", n)
	}
	parked := e.pullAll("raw_reader", scheduleTopic, 17)
	if len(parked) != 1 || parked[0].Property(protocol.PropDelayLevel) != "18" || parked[0].Property(protocol.PropRealTopic) != topic {
		t.Errorf("level 30 parked as %v", parked)
	}
	if !scheduleWired() {
		t.Skip(noSchedule)
	}

	var ib inbox
	e.consumer(uniq("dg"), topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, ib.handler("c"))
	ib.waitLen(t, 1+len(levels), 15*time.Second)
	for _, r := range ib.snapshot() {
		body := string(r.msg.Body)
		if body == "now" {
			continue
		}
		l, _ := strconv.Atoi(body[len("level "):])
		want := delayOf(min(l, 18))
		if early := r.at.UnixMilli() - sentAt[body].UnixMilli(); early < want.Milliseconds() {
			t.Errorf("%s consumed %d ms after the send, before its delay of %v", body, early, want)
		}
		if d := r.msg.StoreTimestamp - r.msg.BornTimestamp; d < want.Milliseconds() {
			t.Errorf("%s stored in its topic %d ms after birth, before its delay of %v", body, d, want)
		}
		if r.msg.Topic != topic {
			t.Errorf("%s delivered with topic %q", body, r.msg.Topic)
		}
	}
}
