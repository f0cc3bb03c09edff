// Package tidetest is the one in-process test harness of the client and
// its patterns: a NameServer and a broker (nameservertest, brokertest), an
// Admin client, client options with short intervals, fresh topics,
// producers and consumers that are shut down when the test ends, and a
// delivery recorder.
//
// It is a test library: it imports the broker, so only tests import it.
// Everything it starts is stopped by t.Cleanup. Set TIDE_TEST_LOG=1 to see
// the logs of the broker and of the clients.
package tidetest

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
)

// startTimeout bounds each start, topic creation and shutdown the harness
// does on the test's behalf.
const startTimeout = 10 * time.Second

// Env is one NameServer and one broker, in process, and an Admin client
// on them. Its methods may be called from the test's goroutine only
// (they call t.Fatal).
type Env struct {
	// NameServer is the NameServer's address.
	NameServer string
	// Broker is the master broker.
	Broker *broker.Broker
	// Admin is a started Admin client (fast options).
	Admin *mqclient.Admin
}

// Start runs a NameServer and a broker (brokertest.Start, opts applied to
// its options) and starts an Admin client. All three stop when the test
// ends.
func Start(t testing.TB, opts ...func(*broker.Options)) *Env {
	t.Helper()
	ns := nameservertest.Start(t)
	e := &Env{NameServer: ns, Broker: brokertest.Start(t, ns, opts...)}
	e.Admin = Admin(t, e.Options()...)
	return e
}

// Logger is the clients' logger in tests: discarded unless TIDE_TEST_LOG
// is set, then debug level on stderr.
func Logger() *slog.Logger {
	var w io.Writer = io.Discard
	if os.Getenv("TIDE_TEST_LOG") != "" {
		w = os.Stderr
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Options are the options every test client uses on the NameServer ns:
// short intervals so that route refreshes, heartbeats, rebalances, commits
// and lock renewals happen within test time; extra are applied last.
func Options(ns string, extra ...mqclient.Option) []mqclient.Option {
	return append([]mqclient.Option{
		mqclient.WithNameServers(ns),
		mqclient.WithLogger(Logger()),
		mqclient.WithRouteRefreshInterval(time.Second),
		mqclient.WithHeartbeatInterval(time.Second),
		mqclient.WithRebalanceInterval(500 * time.Millisecond),
		mqclient.WithCommitInterval(200 * time.Millisecond),
		mqclient.WithLockInterval(time.Second),
		mqclient.WithPollTimeout(2 * time.Second),
	}, extra...)
}

// Options are Options on the env's NameServer.
func (e *Env) Options(extra ...mqclient.Option) []mqclient.Option {
	return Options(e.NameServer, extra...)
}

var seq atomic.Int64

// Name returns a name unique within the test binary (and very likely
// across runs): prefix, a time component and a counter.
func Name(prefix string) string {
	return fmt.Sprintf("%s%d-%d", prefix, time.Now().UnixNano()%1e6, seq.Add(1))
}

// Topic creates a fresh topic with the given number of queues and waits
// until its route is served.
func (e *Env) Topic(t testing.TB, queues int) string {
	t.Helper()
	return e.CreateTopic(t, "t", mqclient.TopicConfig{Queues: queues})
}

// CreateTopic creates a fresh topic named after prefix (Name) with cfg and
// waits until its route is served.
func (e *Env) CreateTopic(t testing.TB, prefix string, cfg mqclient.TopicConfig) string {
	t.Helper()
	name := Name(prefix)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := e.Admin.CreateTopic(ctx, name, cfg); err != nil {
		t.Fatal(err)
	}
	if err := e.Admin.WaitTopic(ctx, name); err != nil {
		t.Fatal(err)
	}
	return name
}

// Admin starts an Admin client with opts, shut down when the test ends.
func Admin(t testing.TB, opts ...mqclient.Option) *mqclient.Admin {
	t.Helper()
	a, err := mqclient.NewAdmin(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Shutdown(context.Background()) })
	return a
}

// Producer starts a producer with the env's options and opts, shut down
// when the test ends.
func (e *Env) Producer(t testing.TB, opts ...mqclient.Option) *mqclient.Producer {
	t.Helper()
	p, err := mqclient.NewProducer(e.Options(opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	return p
}

// Consumer starts a push consumer of group on topic (all tags) with h,
// the env's options and opts. It is shut down when the test ends unless
// the test did it.
func (e *Env) Consumer(t testing.TB, group, topic string, h mqclient.Handler, opts ...mqclient.Option) *mqclient.PushConsumer {
	t.Helper()
	c, err := mqclient.NewPushConsumer(group, e.Options(opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	StartConsumer(t, c, topic, h)
	return c
}

// StartConsumer subscribes c (built by the caller, e.g. by a pattern's
// constructor) to topic with h and starts it. It returns stop, which
// shuts c down within 10 s and is also run when the test ends (Shutdown is
// idempotent).
func StartConsumer(t testing.TB, c *mqclient.PushConsumer, topic string, h mqclient.Handler) (stop func()) {
	t.Helper()
	if err := c.Subscribe(topic, "*", h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		c.Shutdown(ctx)
	}
	t.Cleanup(stop)
	return stop
}

// WaitFor polls cond every 20 ms until it holds; the test fails if d
// passes first, naming what it waited for.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Recorder collects deliveries by message id. Its Handle is a
// mqclient.Handler; all methods are safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	byID  map[string]int
	msgs  []*mqclient.MessageExt
	total int
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{byID: map[string]int{}} }

// Handle records m and returns nil.
func (r *Recorder) Handle(_ context.Context, m *mqclient.MessageExt) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID[m.MsgID] == 0 {
		r.msgs = append(r.msgs, m)
	}
	r.byID[m.MsgID]++
	r.total++
	return nil
}

// Distinct is the number of distinct message ids delivered.
func (r *Recorder) Distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// Total is the number of deliveries, redeliveries included.
func (r *Recorder) Total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// Count is how many times the message with id was delivered.
func (r *Recorder) Count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byID[id]
}

// Messages returns the first delivery of each message, in arrival order.
func (r *Recorder) Messages() []*mqclient.MessageExt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*mqclient.MessageExt(nil), r.msgs...)
}
