package broker_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// committedOffset returns the group's committed offset of a queue (-1 if
// none).
func (e *env) committedOffset(group, topic string, queue int32) int64 {
	e.t.Helper()
	h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queue}
	resp := e.invoke(protocol.NewRequest(protocol.QueryConsumerOffset, h.Encode(), nil))
	if resp.Code == protocol.QueryNotFound {
		return -1
	}
	off, err := strconv.ParseInt(resp.Ext("offset"), 10, 64)
	if resp.Code != protocol.Success || err != nil {
		e.t.Fatalf("query consumer offset: code %d %q %v", resp.Code, resp.Remark, err)
	}
	return off
}

// TestRestartResumesFromCommittedOffset produces, consumes part, stops the
// broker, starts a new one on the same store directory and port, and
// checks that messages, consume queues and committed offsets survived and
// that the group resumes where it left off: nothing lost, and the only
// redeliveries are messages past the committed offset of their queue.
func TestRestartResumesFromCommittedOffset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	withDir := func(o *broker.Options) { o.Store.StorePathRootDir = dir }
	e := newEnv(t, withDir)
	topic := uniq("Restart")
	p := e.producer()

	type sentMsg struct {
		queue  int32
		offset int64
	}
	sent := map[string]sentMsg{}
	send := func(from, to int) {
		for i := from; i < to; i++ {
			body := fmt.Sprintf("m %d", i)
			res := sendOne(t, p, primitive.NewMessage(topic, []byte(body)).WithKeys([]string{"rk-" + strconv.Itoa(i)}))
			sent[body] = sentMsg{int32(res.MessageQueue.QueueId), res.QueueOffset}
		}
	}
	send(0, 30)
	e.waitRoute(topic)

	group := uniq("rsg")
	var first inbox
	c1 := e.consumer(group, topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, first.handler("before"))
	first.waitLen(t, 30, 20*time.Second)
	// Shutdown persists the consumer's offsets (UPDATE_CONSUMER_OFFSET,
	// not waited for): wait until the broker has all of them.
	c1.Shutdown()
	eventually(t, 5*time.Second, "committed offsets of the first consumer", func() bool {
		var sum int64
		for q := int32(0); q < 4; q++ {
			sum += max(e.committedOffset(group, topic, q), 0)
		}
		return sum == 30
	})
	// More messages nobody has consumed yet.
	send(30, 50)
	eventually(t, 5*time.Second, "dispatch of all 50 messages", func() bool { return e.totalMax(topic, 4) == 50 })
	committed := map[int32]int64{}
	maxOff := map[int32]int64{}
	for q := int32(0); q < 4; q++ {
		committed[q] = e.committedOffset(group, topic, q)
		maxOff[q] = e.maxOffset(topic, q)
	}

	// Restart on the same directory and port.
	port := e.b.Addr()[strings.LastIndex(e.b.Addr(), ":")+1:]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := e.b.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	cancel()
	e.raw.CloseConn(e.addr)
	b2 := brokertest.Start(t, e.ns, withDir, func(o *broker.Options) { o.ListenPort, _ = strconv.Atoi(port) })
	if b2.Addr() != e.addr {
		t.Fatalf("restarted broker on %s, want %s", b2.Addr(), e.addr)
	}
	e.b = b2
	eventually(t, 5*time.Second, "the new broker to accept connections", func() bool {
		c, err := net.DialTimeout("tcp", e.addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	for q := int32(0); q < 4; q++ {
		if got := e.maxOffset(topic, q); got != maxOff[q] {
			t.Errorf("queue %d: max offset %d after restart, %d before", q, got, maxOff[q])
		}
		if got := e.committedOffset(group, topic, q); got != committed[q] {
			t.Errorf("queue %d: committed offset %d after restart, %d before", q, got, committed[q])
		}
		// Consume queue and commit log agree with what was sent.
		for _, m := range e.pullAll("raw_reader", topic, q) {
			s, ok := sent[string(m.Body)]
			if !ok || s.queue != q || s.offset != m.QueueOffset {
				t.Errorf("queue %d offset %d holds %q (sent to %d/%d)", q, m.QueueOffset, m.Body, s.queue, s.offset)
			}
		}
	}
	h := protocol.QueryMessageRequestHeader{Topic: topic, Key: "rk-7", MaxNum: 32, EndTimestamp: time.Now().Add(time.Hour).UnixMilli()}
	if resp := e.invoke(protocol.NewRequest(protocol.QueryMessage, h.Encode(), nil)); resp.Code != protocol.Success {
		t.Errorf("query by key after restart: code %d %s", resp.Code, resp.Remark)
	}

	var second inbox
	e.consumer(group, topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, second.handler("after"))
	var want int
	for _, s := range sent {
		if s.offset >= committed[s.queue] {
			want++
		}
	}
	second.waitLen(t, want, 20*time.Second)
	got := map[string]int{}
	for _, r := range second.snapshot() {
		got[string(r.msg.Body)]++
	}
	for body, s := range sent {
		after := s.offset >= committed[s.queue]
		switch {
		case after && got[body] != 1:
			t.Errorf("%q (queue %d offset %d, committed %d) consumed %d times after the restart", body, s.queue, s.offset, committed[s.queue], got[body])
		case !after && got[body] != 0:
			t.Errorf("%q was committed before the restart but consumed again", body)
		}
	}
	// Produce once more through the restarted broker.
	p2 := e.producer()
	sendOne(t, p2, primitive.NewMessage(topic, []byte("after restart")))
	eventually(t, 20*time.Second, "a message sent after the restart", func() bool {
		return second.count(func(r received) bool { return string(r.msg.Body) == "after restart" }) == 1
	})
}
