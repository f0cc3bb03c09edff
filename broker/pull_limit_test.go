package broker_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestHeldPullLimits: with maxHeldPullRequests=3 and
// maxHeldPullRequestsPerConn=2, a third held pull on one connection and
// a fourth in the broker are answered SYSTEM_BUSY at once and counted;
// pulls that find messages are never refused; held pulls still wake on
// new messages, freeing their places; and an official consumer started
// while the broker is full gets its messages (it backs off on
// SYSTEM_BUSY and retries from the same offset).
func TestHeldPullLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *broker.Options) {
		o.MaxHeldPullRequests = 3
		o.MaxHeldPullRequestsPerConn = 2
		o.MetricsListenAddr = "127.0.0.1:0"
	})
	topic := uniq("HeldLimit")
	send := func(topic string, queue int32, body string) {
		t.Helper()
		sh := protocol.SendMessageRequestHeader{ProducerGroup: "raw_pg", Topic: topic, DefaultTopic: protocol.DefaultTopicTemplate,
			DefaultTopicQueueNums: 4, QueueID: queue, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1}
		if resp := e.invoke(protocol.NewRequest(protocol.SendMessage, sh.Encode(), []byte(body))); resp.Code != protocol.Success {
			t.Fatalf("send: code %d %s", resp.Code, resp.Remark)
		}
	}
	send(topic, 0, "first") // creates the topic; queues 1..3 stay empty
	pullReq := func(queue int32, offset int64) *protocol.Command {
		h := protocol.PullMessageRequestHeader{ConsumerGroup: "held_cg", Topic: topic, QueueID: queue, QueueOffset: offset, MaxMsgNums: 32,
			SysFlag: protocol.PullSuspend | protocol.PullSubscription, SuspendTimeoutMillis: 20000, Subscription: "*", ExpressionType: "TAG"}
		return protocol.NewRequest(protocol.PullMessage, h.Encode(), nil)
	}
	type answer struct {
		resp *protocol.Command
		err  error
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// hold sends a pull without waiting; the answer arrives on the channel.
	hold := func(cl *remoting.Client, queue int32) chan answer {
		t.Helper()
		ch := make(chan answer, 1)
		if err := cl.InvokeAsync(ctx, e.addr, pullReq(queue, 0), func(r *protocol.Command, err error) { ch <- answer{r, err} }); err != nil {
			t.Fatal(err)
		}
		return ch
	}
	scrape := func() string {
		resp, err := http.Get("http://" + e.b.MetricsAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	waitHeld := func(n string) {
		t.Helper()
		eventually(t, 10*time.Second, n+" held pulls", func() bool {
			return strings.Contains(scrape(), "tide_broker_longpoll_held_requests "+n+"\n")
		})
	}
	expectBusy := func(what string, ch chan answer) {
		t.Helper()
		select {
		case a := <-ch:
			if a.err != nil || a.resp.Code != protocol.SystemBusy || !strings.Contains(a.resp.Remark, "too many held pull requests") {
				t.Fatalf("%s: %v %+v, want SYSTEM_BUSY", what, a.err, a.resp)
			}
		case <-time.After(5 * time.Second): // far below the 20 s suspend timeout
			t.Fatalf("%s: not answered at once", what)
		}
	}
	expectHeld := func(what string, ch chan answer) {
		t.Helper()
		select {
		case a := <-ch:
			t.Fatalf("%s: answered at once: %v %+v", what, a.err, a.resp)
		default:
		}
	}

	a := e.raw
	b := remoting.NewClient(remoting.ClientOptions{})
	defer b.Close()
	a1, a2 := hold(a, 1), hold(a, 1)
	waitHeld("2")
	expectBusy("third pull on one connection", hold(a, 2))
	b1 := hold(b, 2)
	waitHeld("3")
	expectBusy("fourth pull in the broker", hold(b, 3))
	expectHeld("first pull", a1)
	expectHeld("second pull", a2)
	expectHeld("other connection's pull", b1)

	// A pull that finds messages is answered whatever the limits.
	if resp := e.invoke(pullReq(0, 0)); resp.Code != protocol.Success {
		t.Fatalf("pull with a message while full: code %d %s", resp.Code, resp.Remark)
	}
	body := scrape()
	for _, want := range []string{`tide_broker_longpoll_refused_total{limit="broker"} 1`, `tide_broker_longpoll_refused_total{limit="connection"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// Held pulls wake on a message and free their places.
	send(topic, 1, "wake")
	for i, ch := range []chan answer{a1, a2} {
		select {
		case r := <-ch:
			if r.err != nil || r.resp.Code != protocol.Success {
				t.Fatalf("held pull %d: %v %+v", i, r.err, r.resp)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("held pull %d not woken", i)
		}
	}
	waitHeld("1")
	a3, a4 := hold(a, 3), hold(a, 3)
	waitHeld("3") // both accepted: the woken pulls gave their places back
	expectHeld("pull after places freed", a3)
	expectHeld("pull after places freed", a4)

	// An official consumer of another topic, started while the broker is
	// full, still gets its message: its long polls are refused, it waits
	// and pulls again, and the pull that finds the message is answered.
	other := uniq("HeldLimitOther")
	send(other, 0, "for the official consumer")
	e.waitRoute(other)
	ib := &inbox{}
	e.consumer(uniq("held_official_cg"), other, consumer.MessageSelector{}, ib.handler("c"))
	ib.waitLen(t, 1, 30*time.Second)
	// Once its long polls of the empty queues have been refused, a new
	// message still reaches it (after v2.1.2's 3 s back-off).
	eventually(t, 30*time.Second, "the official consumer's long polls refused", func() bool {
		return !strings.Contains(scrape(), `tide_broker_longpoll_refused_total{limit="broker"} 1`+"\n")
	})
	send(other, 1, "sent while the consumer is refused")
	ib.waitLen(t, 2, 30*time.Second)

}
