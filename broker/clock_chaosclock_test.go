//go:build chaosclock

package broker_test

import (
	"github.com/tidemq/tide/broker"
	"strconv"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/internal/clock"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// sendProps sends one message with properties on queue 0 with the raw
// client and fails the test unless it is stored.
func (e *env) sendProps(topic, body string, props map[string]string) {
	e.t.Helper()
	h := protocol.SendMessageRequestHeader{ProducerGroup: "raw", Topic: topic, DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 0, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1, Properties: protocol.EncodeProperties(props)}
	if resp := e.invoke(protocol.NewRequest(protocol.SendMessage, h.Encode(), []byte(body))); resp.Code != protocol.Success {
		e.t.Fatalf("send %s: code %d %s", body, resp.Code, resp.Remark)
	}
}

// bodies returns the bodies of queue 0 of topic and their store times.
func (e *env) bodies(topic string) map[string]int64 {
	out := map[string]int64{}
	for _, m := range e.pullAll("clockcg", topic, 0) {
		out[string(m.Body)] = m.StoreTimestamp
	}
	return out
}

// TestClockSkewedBroker steps the wall clock of a broker built with the
// chaosclock tag (the chaos campaign's clock-jump fault): store timestamps
// follow the broker's clock; a timer is due at the broker's time, so a
// clock ahead fires it before the producer's time (early by design, as
// RocketMQ's broker does) and a clock behind holds it back; a delay level
// is due at the store time the broker stamped plus the delay, so a step
// between storing and firing moves it by the step: held back by a step
// back, early (in the producer's time) after a step forward.
func TestClockSkewedBroker(t *testing.T) {
	t.Cleanup(func() { clock.Set(0) })
	e := newEnv(t, func(o *broker.Options) { o.Store.MessageDelayLevel = "300ms 600ms 1s 60s" })
	const topic = "ClockTopic"
	if err := createTopic(e.addr, topic, 1); err != nil {
		t.Fatal(err)
	}

	// a clock an hour ahead stamps store times an hour ahead
	clock.Set(time.Hour)
	before := time.Now().Add(time.Hour).UnixMilli()
	e.sendProps(topic, "ahead", nil)
	after := time.Now().Add(time.Hour).UnixMilli()
	// SEND_OK does not wait for the consume queue's dispatch
	var st int64
	waitFor(t, "the message sent under a clock 1 h ahead in its queue", 10*time.Second, func() bool {
		var ok bool
		st, ok = e.bodies(topic)["ahead"]
		return ok
	})
	if st < before || st > after {
		t.Fatalf("store timestamp %d under a clock 1 h ahead, want %d..%d", st, before, after)
	}

	// a clock ahead fires a timer due in 30 minutes of the producer's time
	e.sendProps(topic, "timer-early", map[string]string{protocol.PropTimerDeliverMS: strconv.FormatInt(time.Now().Add(30*time.Minute).UnixMilli(), 10)})
	waitFor(t, "a timer due in 30 min fired by a clock 1 h ahead", 20*time.Second, func() bool { _, ok := e.bodies(topic)["timer-early"]; return ok })

	// a delay level is due at the store time the broker stamped plus the
	// delay: stored under a clock an hour ahead, it is held back once the
	// clock is set right, and due when the clock is ahead again
	e.sendProps(topic, "level-3-ahead", map[string]string{protocol.PropDelayLevel: "3"}) // 1 s
	clock.Set(0)
	// a timer is due at the broker's time: one due in 1 s of the
	// producer's time is held back by a clock an hour behind
	clock.Set(-time.Hour)
	e.sendProps(topic, "timer-behind", map[string]string{protocol.PropTimerDeliverMS: strconv.FormatInt(time.Now().Add(time.Second).UnixMilli(), 10)})
	// stored under a clock an hour behind, a 60 s delay level is due at
	// once when the clock is set right: early in the producer's time
	born := time.Now().UnixMilli()
	e.sendProps(topic, "level-4-behind", map[string]string{protocol.PropDelayLevel: "4"}) // 60 s
	time.Sleep(3 * time.Second)                                                           // three times the 1 s delays
	got := e.bodies(topic)
	for _, k := range []string{"level-3-ahead", "timer-behind", "level-4-behind"} {
		if _, ok := got[k]; ok {
			t.Fatalf("%s delivered while the broker's clock was stepped away from its due time", k)
		}
	}
	clock.Set(0)
	waitFor(t, "the timer and the 60 s delay level", 50*time.Second, func() bool {
		got = e.bodies(topic)
		_, a := got["timer-behind"]
		_, b := got["level-4-behind"]
		return a && b
	})
	if _, ok := got["level-3-ahead"]; ok {
		t.Fatal("a delay level stored under a clock 1 h ahead was delivered with the clock set right")
	}
	if st := got["level-4-behind"]; st-born >= 60_000 {
		t.Fatalf("the 60 s delay level stored under a clock 1 h behind was delivered %d ms after its send, want early", st-born)
	}
	clock.Set(time.Hour)
	waitFor(t, "the delay level stored ahead", 20*time.Second, func() bool { _, ok := e.bodies(topic)["level-3-ahead"]; return ok })
}
