package broker_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestTagFilter subscribes with "TagA || TagC" (examples/consumer/tag):
// only TagA and TagC messages arrive, each once.
func TestTagFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	topic := uniq("Tags")
	p := e.producer()
	tags := []string{"TagA", "TagB", "TagC", "TagD"}
	want := 0
	for i := 0; i < 24; i++ {
		tag := tags[i%4]
		if tag == "TagA" || tag == "TagC" {
			want++
		}
		sendOne(t, p, primitive.NewMessage(topic, []byte(fmt.Sprintf("%s %d", tag, i))).WithTag(tag))
	}
	// An untagged message matches no tag subscription either.
	sendOne(t, p, primitive.NewMessage(topic, []byte("untagged")))
	e.waitRoute(topic)

	var ib inbox
	e.consumer(uniq("cg"), topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "TagA || TagC"}, ib.handler("c"))
	ib.waitLen(t, want, 20*time.Second)
	// A last TagC message to each queue (the producer round-robins): once
	// all four arrived, every earlier message has been pulled and filtered.
	for q := 0; q < 4; q++ {
		sendOne(t, p, primitive.NewMessage(topic, []byte(fmt.Sprintf("marker %d", q))).WithTag("TagC"))
		want++
	}
	ib.waitLen(t, want, 20*time.Second)
	seen := map[string]bool{}
	for _, r := range ib.snapshot() {
		tag := r.msg.GetTags()
		if tag != "TagA" && tag != "TagC" {
			t.Errorf("filter let %q through (%s)", tag, r.msg.Body)
		}
		if seen[string(r.msg.Body)] {
			t.Errorf("%s delivered twice", r.msg.Body)
		}
		seen[string(r.msg.Body)] = true
	}
	if len(seen) != want {
		t.Errorf("%d distinct messages, want %d", len(seen), want)
	}
}

// TestSQL92Filter subscribes with a SQL92 expression over user
// properties: the client does not re-filter SQL92, so only the broker
// keeps non-matching messages away.
func TestSQL92Filter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	topic := uniq("SQL")
	p := e.producer()
	var want []string
	for i := 0; i < 40; i++ {
		b := []string{"x", "y"}[i%2]
		a := i % 10
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("a=%d b=%s i=%d", a, b, i)))
		m.WithProperty("a", strconv.Itoa(a))
		m.WithProperty("b", b)
		if i%7 == 0 {
			m.WithTag("T") // tags do not matter to SQL92
		}
		if a > 5 && b == "x" {
			want = append(want, string(m.Body))
		}
		sendOne(t, p, m)
	}
	// Messages without the properties never match.
	sendOne(t, p, primitive.NewMessage(topic, []byte("no properties")))
	e.waitRoute(topic)

	var ib inbox
	e.consumer(uniq("cg"), topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: "a > 5 AND b = 'x'"}, ib.handler("c"))
	ib.waitLen(t, len(want), 20*time.Second)

	// Send a last matching message to each queue: once all four arrived,
	// every earlier message has been pulled and filtered.
	for q := 0; q < 4; q++ {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("a=9 b=x marker %d", q)))
		m.WithProperty("a", "9")
		m.WithProperty("b", "x")
		sendOne(t, p, m)
		want = append(want, string(m.Body))
	}
	ib.waitLen(t, len(want), 20*time.Second)
	got := map[string]int{}
	for _, r := range ib.snapshot() {
		got[string(r.msg.Body)]++
		a, _ := strconv.Atoi(r.msg.GetProperty("a"))
		if !(a > 5 && r.msg.GetProperty("b") == "x") {
			t.Errorf("SQL92 filter let %q through", r.msg.Body)
		}
	}
	for _, w := range want {
		if got[w] != 1 {
			t.Errorf("%q delivered %d times", w, got[w])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d distinct messages, want %d", len(got), len(want))
	}

	// Raw pulls with the subscription bit filter the same way.
	n := 0
	for q := int32(0); q < 4; q++ {
		resp, msgs := e.pull("raw_sql", topic, q, 0, 64, "SQL92", "a > 5 AND b = 'x'")
		if resp.Code != protocol.Success && resp.Code != protocol.PullRetryImmediately {
			t.Fatalf("raw SQL92 pull: code %d %s", resp.Code, resp.Remark)
		}
		n += len(msgs)
	}
	if n != len(want) {
		t.Errorf("raw SQL92 pulls found %d messages, want %d", n, len(want))
	}
}

// TestMalformedSQL92 subscribes with an expression that does not parse.
// The official client starts (subscriptions are only parsed by the
// broker); its pulls -- sysFlag SUSPEND, no subscription, the broker uses
// the heartbeat's -- get SUBSCRIPTION_PARSE_FAILED (23), which v2.1.2
// treats as a pull error and retries after 3 s. Nothing is delivered and
// the broker keeps serving everyone else.
func TestMalformedSQL92(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	topic := uniq("BadSQL")
	p := e.producer()
	m := primitive.NewMessage(topic, []byte("a=9"))
	m.WithProperty("a", "9")
	sendOne(t, p, m)
	e.waitRoute(topic)

	const bad = "a > AND (b = 'x'"
	group := uniq("cg_bad")
	var badInbox inbox
	e.consumer(group, topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: bad}, badInbox.handler("bad"))

	// What the client's pulls get: the same request it sends.
	eventually(t, 5*time.Second, "the heartbeat subscription", func() bool {
		h := protocol.PullMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: 0, QueueOffset: 0, MaxMsgNums: 32,
			SysFlag: protocol.PullSuspend, SuspendTimeoutMillis: 20000, ExpressionType: "TAG"}
		resp := e.invoke(protocol.NewRequest(protocol.PullMessage, h.Encode(), nil))
		if resp.Code == protocol.SubscriptionNotExist {
			return false
		}
		if resp.Code != protocol.SubscriptionParseFailed || !strings.Contains(resp.Remark, bad) {
			t.Fatalf("client-shaped pull with a malformed heartbeat subscription: code %d %q, want 23 naming the expression", resp.Code, resp.Remark)
		}
		return true
	})

	// A raw pull carrying the expression (subscription bit) gets 23 with a
	// remark, on a connection that stays usable.
	resp, _ := e.pull("raw_bad", topic, 0, 0, 32, "SQL92", bad)
	if resp.Code != protocol.SubscriptionParseFailed || resp.Remark == "" {
		t.Fatalf("raw pull with a malformed SQL92 expression: code %d %q, want 23 with a remark", resp.Code, resp.Remark)
	}
	t.Logf("broker remark: %s", resp.Remark)
	for _, expr := range []string{"", "a >", "a = 'unterminated", "a BETWEEN 1", "((a > 1)", "a IN ()", "a > 5 AND"} {
		resp, _ := e.pull("raw_bad", topic, 0, 0, 32, "SQL92", expr)
		if resp.Code != protocol.SubscriptionParseFailed {
			t.Errorf("SQL92 %q: code %d %q, want 23", expr, resp.Code, resp.Remark)
		}
	}
	// An unknown expression type is refused too.
	if resp, _ := e.pull("raw_bad", topic, 0, 0, 32, "CLASS", "x"); resp.Code == protocol.Success {
		t.Errorf("expression type CLASS: code %d", resp.Code)
	}

	// The broker still serves a well-formed consumer of the same topic.
	var good inbox
	e.consumer(uniq("cg_good"), topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: "a = 9"}, good.handler("good"))
	good.waitLen(t, 1, 20*time.Second)
	if n := badInbox.len(); n != 0 {
		t.Errorf("the consumer with the malformed expression got %d messages", n)
	}
}
