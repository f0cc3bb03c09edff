package mqclient_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// env is one NameServer and one broker, in process.
type env struct {
	ns     string
	broker *broker.Broker
	admin  *mqclient.Admin
}

var topicSeq atomic.Int64

func testLogger() *slog.Logger {
	var w io.Writer = io.Discard
	if os.Getenv("TIDE_TEST_LOG") != "" {
		w = os.Stderr
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func startEnv(t *testing.T, opts ...func(*broker.Options)) *env {
	t.Helper()
	ns := nameservertest.Start(t)
	b := brokertest.Start(t, ns, opts...)
	e := &env{ns: ns, broker: b}
	e.admin = e.newAdmin(t)
	return e
}

// fast are the options every test client uses: short intervals so that
// rebalances, commits and lock renewals happen within test time.
func (e *env) fast(extra ...mqclient.Option) []mqclient.Option {
	return append([]mqclient.Option{
		mqclient.WithNameServers(e.ns),
		mqclient.WithLogger(testLogger()),
		mqclient.WithRouteRefreshInterval(time.Second),
		mqclient.WithHeartbeatInterval(time.Second),
		mqclient.WithRebalanceInterval(500 * time.Millisecond),
		mqclient.WithCommitInterval(200 * time.Millisecond),
		mqclient.WithLockInterval(time.Second),
		mqclient.WithPollTimeout(2 * time.Second),
	}, extra...)
}

func (e *env) newAdmin(t *testing.T) *mqclient.Admin {
	t.Helper()
	a, err := mqclient.NewAdmin(e.fast()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Shutdown(context.Background()) })
	return a
}

// topic creates a fresh topic with n queues and waits for its route.
func (e *env) topic(t *testing.T, n int) string {
	t.Helper()
	name := fmt.Sprintf("t%d-%d", time.Now().UnixNano()%1e6, topicSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.admin.CreateTopic(ctx, name, mqclient.TopicConfig{Queues: n}); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.WaitTopic(ctx, name); err != nil {
		t.Fatal(err)
	}
	return name
}

func (e *env) producer(t *testing.T, opts ...mqclient.Option) *mqclient.Producer {
	t.Helper()
	p, err := mqclient.NewProducer(e.fast(opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	return p
}

// consumer starts a push consumer of group on topic with h; it is shut
// down at the end of the test unless the test did it.
func (e *env) consumer(t *testing.T, group, topic string, h mqclient.Handler, opts ...mqclient.Option) *mqclient.PushConsumer {
	t.Helper()
	c, err := mqclient.NewPushConsumer(group, e.fast(opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, "*", h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Shutdown(ctx)
	})
	return c
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recorder collects deliveries by message id.
type recorder struct {
	mu    sync.Mutex
	byID  map[string]int
	msgs  []*mqclient.MessageExt
	total int
}

func newRecorder() *recorder { return &recorder{byID: map[string]int{}} }

func (r *recorder) handle(_ context.Context, m *mqclient.MessageExt) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID[m.MsgID] == 0 {
		r.msgs = append(r.msgs, m)
	}
	r.byID[m.MsgID]++
	r.total++
	return nil
}

func (r *recorder) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// probe reports whether the broker serves a request code (anything but
// REQUEST_CODE_NOT_SUPPORTED), so tests of features other teams are still
// adding skip instead of failing.
func (e *env) probe(t *testing.T, feature string) bool {
	t.Helper()
	var req *protocol.Command
	switch feature {
	case "sendback":
		h := protocol.ConsumerSendMsgBackRequestHeader{Offset: -1, Group: "probe", OriginTopic: "probe", MaxReconsumeTimes: 16}
		req = protocol.NewRequest(protocol.ConsumerSendMsgBack, h.Encode(), nil)
	case "transaction":
		h := protocol.EndTransactionRequestHeader{ProducerGroup: "probe", CommitOrRollback: 12}
		req = protocol.NewRequest(protocol.EndTransaction, h.Encode(), nil)
	default:
		t.Fatalf("unknown feature %q", feature)
	}
	cl := remoting.NewClient(remoting.ClientOptions{Logger: testLogger()})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, e.broker.Addr(), req)
	if err != nil {
		t.Fatalf("probe %s: %v", feature, err)
	}
	return resp.Code != protocol.RequestCodeNotSupported
}
