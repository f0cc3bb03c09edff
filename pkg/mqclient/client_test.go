package mqclient_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/tidetest"
)

// sharedClient starts a Client with the env's options, released when the
// test ends.
func sharedClient(t *testing.T, e *env) *mqclient.Client {
	t.Helper()
	c, err := mqclient.NewClient(e.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown(context.Background()) })
	return c
}

// TestSharedClient runs a producer, two consumer groups and an admin on one
// Client: one client id and one connection carry both groups to the broker,
// members shut down independently, and the last one's Shutdown closes the
// Client for good.
func TestSharedClient(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 4)
	c := sharedClient(t, e)
	ctx := context.Background()
	on := mqclient.WithClient(c)

	p := e.Producer(t, on, mqclient.WithProducerGroup("pg-shared"))
	a := tidetest.Admin(t, on)
	recA, recB := tidetest.NewRecorder(), tidetest.NewRecorder()
	ca := e.Consumer(t, "g-shared-a", topic, recA.Handle, on, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))
	cb := e.Consumer(t, "g-shared-b", topic, recB.Handle, on, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))
	for _, id := range []string{p.ClientID(), ca.ClientID(), cb.ClientID()} {
		if id != c.ClientID() {
			t.Fatalf("member client id %s, Client's %s", id, c.ClientID())
		}
	}

	dup, err := mqclient.NewPushConsumer("g-shared-a", e.Options(on)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := dup.Subscribe(topic, "*", recA.Handle); err != nil {
		t.Fatal(err)
	}
	if err := dup.Start(ctx); !errors.Is(err, mqclient.ErrDuplicateGroup) {
		t.Fatalf("second consumer of a group on one Client: Start = %v, want ErrDuplicateGroup", err)
	}

	send := func(from, n int) {
		for i := from; i < from+n; i++ {
			if _, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte(strconv.Itoa(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(0, 20)
	tidetest.WaitFor(t, 15*time.Second, "both groups get 20", func() bool { return recA.Distinct() == 20 && recB.Distinct() == 20 })

	var addrs []string
	for _, g := range []string{"g-shared-a", "g-shared-b"} {
		cc, err := a.ConsumerConnections(ctx, e.Broker.Addr(), g)
		if err != nil {
			t.Fatal(err)
		}
		if len(cc.ConnectionSet) != 1 || cc.ConnectionSet[0].ClientID != c.ClientID() {
			t.Fatalf("%s's members on the broker: %+v, want the one Client %s", g, cc.ConnectionSet, c.ClientID())
		}
		addrs = append(addrs, cc.ConnectionSet[0].ClientAddr)
	}
	if addrs[0] != addrs[1] {
		t.Fatalf("the two groups came over connections %s and %s, want one", addrs[0], addrs[1])
	}

	// One member leaving, and the caller's own reference, close nothing
	// the others use.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := ca.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	send(20, 10)
	tidetest.WaitFor(t, 15*time.Second, "group b gets 30", func() bool { return recB.Distinct() == 30 })
	if n := recA.Distinct(); n != 20 {
		t.Fatalf("group a got %d after its Shutdown, want 20", n)
	}

	// The last member's Shutdown closes the Client.
	if err := cb.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	a.Shutdown(ctx)
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	late, err := mqclient.NewProducer(e.Options(on)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := late.Start(ctx); !errors.Is(err, mqclient.ErrClosed) {
		t.Fatalf("Start on a closed Client = %v, want ErrClosed", err)
	}
}

// TestSharedClientRoutesCheckBacks runs two transactional producers of
// different groups on one Client: each check-back reaches the checker of
// the half message's producer group.
func TestSharedClientRoutesCheckBacks(t *testing.T) {
	e := startEnv(t, func(o *broker.Options) {
		o.TransactionCheckInterval = 500
		o.TransactionTimeOut = 500
	})
	topic := e.Topic(t, 1)
	c := sharedClient(t, e)
	ctx := context.Background()
	var mu sync.Mutex
	checked := map[string]string{} // body -> group whose checker saw it
	producer := func(group string) *mqclient.Producer {
		check := func(_ context.Context, m *mqclient.MessageExt) mqclient.TransactionState {
			mu.Lock()
			checked[string(m.Body)] = group
			mu.Unlock()
			return mqclient.TransactionCommit
		}
		p, err := mqclient.NewTransactionProducer(check, e.Options(mqclient.WithClient(c), mqclient.WithProducerGroup(group))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Shutdown(ctx) })
		return p
	}
	groups := []string{"tx-shared-1", "tx-shared-2"}
	for _, g := range groups {
		p := producer(g)
		_, st, err := p.SendInTransaction(ctx, &mqclient.Message{Topic: topic, Body: []byte("from-" + g)}, func(context.Context) error {
			return mqclient.ErrTransactionUnknown
		})
		if st != mqclient.TransactionUnknown || !errors.Is(err, mqclient.ErrTransactionUnknown) {
			t.Fatalf("%s: state %v err %v", g, st, err)
		}
	}
	tidetest.WaitFor(t, 30*time.Second, "both check-backs", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(checked) == 2
	})
	mu.Lock()
	defer mu.Unlock()
	for _, g := range groups {
		if got := checked["from-"+g]; got != g {
			t.Errorf("check-back of %s's half message went to %q", g, got)
		}
	}
}
