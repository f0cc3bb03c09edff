package mqclient

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// fakeQueue is a one-queue broker for consumer unit tests: it serves
// heartbeats, the member list, offsets and pulls from a fixed message
// list, and can inject bad pull answers.
type fakeQueue struct {
	*fakeBroker
	mu        sync.Mutex
	msgs      [][]byte // stored records, offset = index
	committed atomic.Int64
	pulls     atomic.Int32
	// answer, if set, replaces the normal pull answer for one pull.
	answer func(req *protocol.Command, h *protocol.PullMessageRequestHeader) *protocol.Command
}

func record(t *testing.T, topic string, off int64, body string) []byte {
	t.Helper()
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	m := &protocol.MessageExt{Message: protocol.Message{Topic: topic, Body: []byte(body)}, QueueOffset: off,
		CommitLogOffset: off * 100, BornHost: host, StoreHost: host, BornTimestamp: 1, StoreTimestamp: 1}
	b, err := protocol.AppendStored(nil, m, protocol.EncodeProperties(map[string]string{protocol.PropUniqKey: body}))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newFakeQueue(t *testing.T, topic string, bodies ...string) *fakeQueue {
	f := &fakeQueue{fakeBroker: newFakeBroker(t, "broker-a")}
	f.committed.Store(-1)
	for i, b := range bodies {
		f.msgs = append(f.msgs, record(t, topic, int64(i), b))
	}
	ok := func(req *protocol.Command) *protocol.Command { return protocol.NewResponse(req, protocol.Success, "") }
	f.srv.HandleFunc(protocol.GetConsumerListByGroup, func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		resp := ok(req)
		resp.Body = (&protocol.GetConsumerListByGroupResponseBody{ConsumerIDList: []string{"127.0.0.1@test"}}).Encode()
		return resp
	})
	f.srv.HandleFunc(protocol.QueryConsumerOffset, func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		if off := f.committed.Load(); off >= 0 {
			resp := ok(req)
			resp.ExtFields = (&protocol.OffsetResponseHeader{Offset: off}).Encode()
			return resp
		}
		return protocol.NewResponse(req, protocol.QueryNotFound, "")
	})
	f.srv.HandleFunc(protocol.GetMinOffset, func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		resp := ok(req)
		resp.ExtFields = (&protocol.OffsetResponseHeader{Offset: 0}).Encode()
		return resp
	})
	f.srv.HandleFunc(protocol.UpdateConsumerOffset, func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		var h protocol.UpdateConsumerOffsetRequestHeader
		h.Decode(req.ExtFields)
		f.committed.Store(h.CommitOffset)
		return ok(req)
	})
	f.srv.HandleFunc(protocol.PullMessage, func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		f.pulls.Add(1)
		h, err := protocol.DecodePullRequest(req)
		if err != nil {
			return protocol.NewResponse(req, protocol.SystemError, err.Error())
		}
		f.mu.Lock()
		answer := f.answer
		f.answer = nil
		n := int64(len(f.msgs))
		var body []byte
		for o := h.QueueOffset; o < n && o < h.QueueOffset+int64(h.MaxMsgNums); o++ {
			body = append(body, f.msgs[o]...)
		}
		f.mu.Unlock()
		if answer != nil {
			return answer(req, h)
		}
		code, next := protocol.Success, h.QueueOffset+int64(len(body))
		if len(body) == 0 {
			select { // a short long-poll
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
			}
			code, next = protocol.PullNotFound, h.QueueOffset
		} else {
			next = min(n, h.QueueOffset+int64(h.MaxMsgNums))
		}
		resp := protocol.NewResponse(req, code, "")
		resp.ExtFields = (&protocol.PullMessageResponseHeader{NextBeginOffset: next, MinOffset: 0, MaxOffset: n}).Encode()
		resp.Body = body
		return resp
	})
	return f
}

func startTestConsumer(t *testing.T, ns, topic string, h Handler, opts ...Option) *PushConsumer {
	t.Helper()
	all := append([]Option{WithNameServers(ns), WithClientIP("127.0.0.1"), WithInstanceName("test"),
		WithConsumeFrom(ConsumeFromFirst), WithCommitInterval(50 * time.Millisecond), WithPullBatchSize(2)}, opts...)
	c, err := NewPushConsumer("g", all...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, "*", h); err != nil {
		t.Fatal(err)
	}
	c.s.pullBackoff = 20 * time.Millisecond
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown(context.Background()) })
	return c
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPushConsumerSurvivesBadPullAnswers(t *testing.T) {
	f := newFakeQueue(t, "orders", "m0", "m1", "m2", "m3")
	ns := startFakeNameServer(t, "orders", 1, f.fakeBroker)
	bad := []func(req *protocol.Command, h *protocol.PullMessageRequestHeader) *protocol.Command{
		func(req *protocol.Command, h *protocol.PullMessageRequestHeader) *protocol.Command { // garbage body
			resp := protocol.NewResponse(req, protocol.Success, "")
			resp.ExtFields = (&protocol.PullMessageResponseHeader{NextBeginOffset: 4, MaxOffset: 4}).Encode()
			resp.Body = []byte("not a message at all")
			return resp
		},
		func(req *protocol.Command, h *protocol.PullMessageRequestHeader) *protocol.Command { // header missing
			return protocol.NewResponse(req, protocol.Success, "")
		},
		func(req *protocol.Command, h *protocol.PullMessageRequestHeader) *protocol.Command { // unexpected code
			return protocol.NewResponse(req, protocol.SubscriptionNotExist, "no subscription")
		},
	}
	var mu sync.Mutex
	got := map[string]int{}
	h := func(ctx context.Context, m *MessageExt) error {
		mu.Lock()
		got[string(m.Body)]++
		mu.Unlock()
		return nil
	}
	f.mu.Lock()
	f.answer = bad[0]
	f.mu.Unlock()
	startTestConsumer(t, ns, "orders", h)
	for i := 1; i < len(bad); i++ {
		before := f.pulls.Load()
		waitUntil(t, "a pull after the bad answer", func() bool { return f.pulls.Load() > before })
		f.mu.Lock()
		f.answer = bad[i]
		f.mu.Unlock()
	}
	waitUntil(t, "all four messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 4
	})
	waitUntil(t, "offset 4 committed", func() bool { return f.committed.Load() == 4 })
}

func TestPushConsumerOffsetMoved(t *testing.T) {
	f := newFakeQueue(t, "orders", "m0", "m1", "m2", "m3")
	ns := startFakeNameServer(t, "orders", 1, f.fakeBroker)
	f.mu.Lock()
	f.answer = func(req *protocol.Command, h *protocol.PullMessageRequestHeader) *protocol.Command {
		resp := protocol.NewResponse(req, protocol.PullOffsetMoved, "")
		resp.ExtFields = (&protocol.PullMessageResponseHeader{NextBeginOffset: 2, MinOffset: 2, MaxOffset: 4}).Encode()
		return resp
	}
	f.mu.Unlock()
	var mu sync.Mutex
	var got []string
	startTestConsumer(t, ns, "orders", func(ctx context.Context, m *MessageExt) error {
		mu.Lock()
		got = append(got, string(m.Body))
		mu.Unlock()
		return nil
	})
	waitUntil(t, "messages after the moved offset", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 2
	})
	mu.Lock()
	defer mu.Unlock()
	if got[0] == "m0" || got[1] == "m0" {
		t.Fatalf("read before the moved offset: %v", got)
	}
}

func TestPushConsumerResumesFromCommittedOffset(t *testing.T) {
	f := newFakeQueue(t, "orders", "m0", "m1", "m2", "m3")
	f.committed.Store(3)
	ns := startFakeNameServer(t, "orders", 1, f.fakeBroker)
	var mu sync.Mutex
	var got []string
	startTestConsumer(t, ns, "orders", func(ctx context.Context, m *MessageExt) error {
		mu.Lock()
		got = append(got, string(m.Body))
		mu.Unlock()
		return nil
	})
	waitUntil(t, "m3", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if got[0] != "m3" {
		t.Fatalf("got %v", got)
	}
}

func TestPushConsumerValidation(t *testing.T) {
	for _, g := range []string{"", "a.b", "DEFAULT_CONSUMER"} {
		if _, err := NewPushConsumer(g, WithNameServers("127.0.0.1:1")); err == nil {
			t.Errorf("group %q accepted", g)
		}
	}
	if _, err := NewPushConsumer("g", WithNameServers("127.0.0.1:1"), WithOrdered(), WithMessageModel(Broadcasting)); err == nil {
		t.Error("ordered broadcasting accepted")
	}
	c, err := NewPushConsumer("g", WithNameServers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err == nil {
		t.Error("Start without a subscription succeeded")
	}
	if err := c.Subscribe("t", "*", nil); err == nil {
		t.Error("nil handler accepted")
	}
}

// logCapture is a slog.Handler keeping every record's message and
// attributes as one line.
type logCapture struct {
	mu    sync.Mutex
	lines []string
}

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCapture) WithGroup(string) slog.Handler            { return l }
func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	s := r.Message
	r.Attrs(func(a slog.Attr) bool { s += " " + a.String(); return true })
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
	return nil
}

func (l *logCapture) grep(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			out = append(out, s)
		}
	}
	return out
}

// The broker answers a consumer's first heartbeat with a
// NOTIFY_CONSUMER_IDS_CHANGED to the group; the consumer must already
// have its handler then, or it logs "no handler for server request" at
// every start (issue #24). The fake broker writes the notification before
// the heartbeat's response on the same connection, so the client reads it
// before its first heartbeat (sent while Start fetches the routes) returns.
func TestPushConsumerHandlesNotifyFromFirstHeartbeat(t *testing.T) {
	f := newFakeQueue(t, "orders")
	var notified atomic.Int32
	f.srv.HandleFunc(protocol.HeartBeat, func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		h := protocol.ConsumerGroupHeader{ConsumerGroup: "g"}
		if err := c.InvokeOneway(ctx, protocol.NewRequest(protocol.NotifyConsumerIDsChanged, h.Encode(), nil)); err == nil {
			notified.Add(1)
		}
		return protocol.NewResponse(req, protocol.Success, "")
	})
	ns := startFakeNameServer(t, "orders", 1, f.fakeBroker)
	logs := &logCapture{}
	startTestConsumer(t, ns, "orders", func(context.Context, *MessageExt) error { return nil }, WithLogger(slog.New(logs)))
	if notified.Load() == 0 {
		t.Fatal("the fake broker sent no notification")
	}
	if got := logs.grep("no handler"); len(got) > 0 {
		t.Fatalf("consumer had no handler for the broker's notification at start: %q", got)
	}
}

// A client that restarted under the same id (a stable instance name) may
// still be listed on its old connection: the duplicate is one member, so
// the allocation gives it its share instead of leaving queues to nobody.
func TestConsumerIDsOneMemberPerID(t *testing.T) {
	f := newFakeQueue(t, "orders")
	f.srv.HandleFunc(protocol.GetConsumerListByGroup, func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		resp := protocol.NewResponse(req, protocol.Success, "")
		resp.Body = (&protocol.GetConsumerListByGroupResponseBody{
			ConsumerIDList: []string{"127.0.0.1@test", "127.0.0.1@other", "127.0.0.1@test"}}).Encode()
		return resp
	})
	ns := startFakeNameServer(t, "orders", 4, f.fakeBroker)
	pc, err := NewPushConsumer("g", WithNameServers(ns), WithClientIP("127.0.0.1"), WithInstanceName("test"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := pc.c.route(ctx, "orders", false)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pc.rb.consumerIDs(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"127.0.0.1@other", "127.0.0.1@test"}; strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("consumerIDs = %v, want %v", ids, want)
	}
	if mine := AllocateAveragely().Allocate(r.sub, ids, pc.c.clientID); len(mine) != 2 {
		t.Fatalf("allocated %d of 4 queues to one of 2 members: %v", len(mine), mine)
	}
}
