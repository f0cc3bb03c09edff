// Package testbed starts what the examples' tests run against: a
// NameServer and a broker in process (Tide's, with or without its
// extensions: TIDE_BROKER_EXTENSIONS=off makes it answer as Apache
// RocketMQ 4.9), a private MariaDB database and, on request, a private
// redis-server. Nothing is mocked.
package testbed

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/testenv"
)

// Bed is one test's broker, NameServer and database.
type Bed struct {
	NameServer string
	Broker     *broker.Broker
	// DSN is the test's own MariaDB database (go-sql-driver format).
	DSN   string
	Admin *mqclient.Admin
}

var seq atomic.Int64

// Start starts a NameServer, a broker (opts applied last) and a database;
// all are stopped when the test ends.
func Start(t *testing.T, opts ...func(*broker.Options)) *Bed {
	t.Helper()
	b := &Bed{NameServer: nameservertest.Start(t)}
	b.Broker = brokertest.Start(t, b.NameServer, opts...)
	b.DSN = testenv.MariaDB(t).DSN
	a, err := mqclient.NewAdmin(b.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Shutdown(context.Background()) })
	b.Admin = a
	return b
}

// Redis starts a private redis-server for the test.
func Redis(t *testing.T) *testenv.RedisServer { return testenv.Redis(t) }

// Topic creates a topic with a fresh name and waits for its route.
func (b *Bed) Topic(t *testing.T, prefix string, queues int) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e6, seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Admin.CreateTopic(ctx, name, mqclient.TopicConfig{Queues: queues}); err != nil {
		t.Fatal(err)
	}
	if err := b.Admin.WaitTopic(ctx, name); err != nil {
		t.Fatal(err)
	}
	return name
}

// ClientOptions are short intervals (routes, heartbeats, rebalances,
// commits) so that clients settle within test time; a service keeps the
// defaults.
func (b *Bed) ClientOptions() []mqclient.Option {
	return []mqclient.Option{
		mqclient.WithNameServers(b.NameServer),
		mqclient.WithLogger(Logger()),
		mqclient.WithRouteRefreshInterval(time.Second),
		mqclient.WithHeartbeatInterval(time.Second),
		mqclient.WithRebalanceInterval(500 * time.Millisecond),
		mqclient.WithCommitInterval(200 * time.Millisecond),
		mqclient.WithLockInterval(time.Second),
		mqclient.WithPollTimeout(2 * time.Second),
	}
}

// Logger discards unless TIDE_TEST_LOG is set.
func Logger() *slog.Logger {
	var w io.Writer = io.Discard
	if os.Getenv("TIDE_TEST_LOG") != "" {
		w = os.Stderr
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// WaitFor polls cond every 20 ms until it holds, failing the test after d.
func WaitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitCaughtUp waits until group has committed every message of topic
// (no lag on any queue): whatever was sent before has been handled.
func (b *Bed) WaitCaughtUp(t *testing.T, group, topic string) {
	t.Helper()
	WaitFor(t, 30*time.Second, group+" caught up on "+topic, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		qs, err := b.Admin.ConsumerProgress(ctx, group, topic)
		if err != nil {
			return false
		}
		for _, q := range qs {
			if q.Lag != 0 || (q.BrokerOffset > 0 && q.ConsumerOffset < q.BrokerOffset) {
				return false
			}
		}
		return true
	})
}
