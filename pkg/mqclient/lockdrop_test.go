package mqclient_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/tidetest"
)

// queueOwners records, per queue, which consumers are running a handler
// on it, and counts the moments two consumers ran one on the same queue.
type queueOwners struct {
	t        *testing.T
	mu       sync.Mutex
	active   map[mqclient.Queue]map[string]int
	handled  map[string]int64 // by consumer
	seen     map[string]bool
	overlaps int
}

func (o *queueOwners) handler(who string, hold time.Duration) mqclient.Handler {
	return func(ctx context.Context, m *mqclient.MessageExt) error {
		o.mu.Lock()
		a := o.active[m.Queue]
		if a == nil {
			a = map[string]int{}
			o.active[m.Queue] = a
		}
		for other, n := range a {
			if other != who && n > 0 {
				o.overlaps++
				o.t.Errorf("queue %d handled by %s while %s runs a handler on it", m.Queue.QueueID, who, other)
			}
		}
		a[who]++
		o.mu.Unlock()
		time.Sleep(hold)
		o.mu.Lock()
		a[who]--
		o.handled[who]++
		o.seen[string(m.Body)] = true
		o.mu.Unlock()
		return nil
	}
}

func (o *queueOwners) count(who string) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.handled[who]
}

func (o *queueOwners) distinct() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.seen)
}

// TestOrderedConnectionDropNoOverlap: two ordered consumers share a
// topic; consumer a's connection to the broker is cut three times while
// both work. At no moment do both run a handler on the same queue, and
// every message is handled. The rule (docs/broker.md, package doc): the
// broker keeps a's queue locks until they expire or a unlocks them, and a
// treats its locks on that broker as lost when the connection drops, so it
// starts nothing on those queues until it has locked them again. Before,
// the broker released a's locks when its connection closed and b took the
// queues while a was still working through what it had pulled.
func TestOrderedConnectionDropNoOverlap(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 4)
	p := e.Producer(t)
	own := &queueOwners{t: t, active: map[mqclient.Queue]map[string]int{}, handled: map[string]int64{}, seen: map[string]bool{}}
	opts := []mqclient.Option{mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst), mqclient.WithOrdered()}
	const n = 5000 // sent over several seconds: the cuts happen while it flows
	var sent atomic.Int64
	done := keyedLoad(t, p, topic, n, 40, &sent)
	a := e.Consumer(t, "g-lockdrop", topic, own.handler("a", 5*time.Millisecond), opts...)
	e.Consumer(t, "g-lockdrop", topic, own.handler("b", 5*time.Millisecond), opts...)
	addr := e.Broker.Addr()
	for cut := 1; cut <= 3; cut++ {
		ca, cb := own.count("a"), own.count("b")
		tidetest.WaitFor(t, 30*time.Second, fmt.Sprintf("both consumers working before cut %d", cut), func() bool {
			return own.count("a") > ca+10 && own.count("b") > cb+10
		})
		t.Logf("cut %d: a %d, b %d handled, %d sent", cut, own.count("a"), own.count("b"), sent.Load())
		if err := mqclient.DropBrokerConn(a, addr); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	tidetest.WaitFor(t, 120*time.Second, "every message", func() bool { return own.distinct() == n })
	own.mu.Lock()
	defer own.mu.Unlock()
	t.Logf("handled: a %d, b %d; overlaps %d", own.handled["a"], own.handled["b"], own.overlaps)
}
