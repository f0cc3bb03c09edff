package e2e

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Failover budgets: with broker-a's master SIGKILLed, the order flow (an
// order placed after the kill acknowledged and paid) works again within
// flowBudget, issue 19's 20 s; the restarted replica is back in the
// SyncStateSet, as a slave, within rejoinBudget of its restart. One CI
// run of 2026-12-02 took 29 s: the master was killed before the slave
// had copied the topic inventory-events (created < 2 s before), so the
// new master auto-created it with 4 queues instead of 8 and refused
// inventory's outbox pinned to queue 5. Brokers now answer a creation
// only once the SyncStateSet has it (docs/controller.md, the metadata
// sync), and the test waits until the slave has the master's topics and
// groups before the kill, as a deployment that has been up a while has.
const (
	flowBudget   = 20 * time.Second
	rejoinBudget = 60 * time.Second
)

// brokerListenPort is broker-a's client port inside the network
// (listenPort in both modes' configs).
const brokerListenPort = "10911"

// metadataDiff compares the topic and subscription group tables of two
// broker-a replicas, read with mqclient.Admin.TopicConfigs and
// SubscriptionGroups on their container addresses: it returns "" when
// slave has every topic of master with the same queue counts and
// permission, and every group; otherwise what differs.
func (s *stack) metadataDiff(ctx context.Context, master, slave string) (string, error) {
	a, err := s.admin(ctx)
	if err != nil {
		return "", err
	}
	addr := func(name string) (string, error) {
		ip, err := s.node(name).c.ContainerIP(ctx)
		return net.JoinHostPort(ip, brokerListenPort), err
	}
	var tables [2]*protocol.TopicConfigSerializeWrapper
	var groups [2]*protocol.SubscriptionGroupWrapper
	for i, name := range []string{master, slave} {
		ad, err := addr(name)
		if err != nil {
			return "", fmt.Errorf("%s address: %w", name, err)
		}
		if tables[i], err = a.TopicConfigs(ctx, ad); err != nil {
			return "", fmt.Errorf("%s topics: %w", name, err)
		}
		if groups[i], err = a.SubscriptionGroups(ctx, ad); err != nil {
			return "", fmt.Errorf("%s subscription groups: %w", name, err)
		}
	}
	var diff []string
	for name, tc := range tables[0].TopicConfigTable {
		sc, ok := tables[1].TopicConfigTable[name]
		switch {
		case !ok:
			diff = append(diff, "topic "+name+" missing")
		case sc.ReadQueueNums != tc.ReadQueueNums || sc.WriteQueueNums != tc.WriteQueueNums || sc.Perm != tc.Perm:
			diff = append(diff, fmt.Sprintf("topic %s %d/%d/%d, master %d/%d/%d", name,
				sc.ReadQueueNums, sc.WriteQueueNums, sc.Perm, tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm))
		}
	}
	for name := range groups[0].SubscriptionGroupTable {
		if _, ok := groups[1].SubscriptionGroupTable[name]; !ok {
			diff = append(diff, "group "+name+" missing")
		}
	}
	slices.Sort(diff)
	return strings.Join(diff, ", "), nil
}

// flowOrder is one order of the background flow, with the times it passed
// each step (zero when it did not).
type flowOrder struct {
	id                string
	sent, acked, paid time.Time // POST /v1/orders sent and answered; payment SUCCEEDED answered
	createErr, payErr error
}

// orderFlow places and pays orders, workers at a time, until stopped:
// what a shop front does while the broker group fails over.
type orderFlow struct {
	mu     sync.Mutex
	orders []*flowOrder
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

func startOrderFlow(ctx context.Context, s *stack, workers int) *orderFlow {
	fctx, stop := context.WithCancel(ctx)
	f := &orderFlow{stop: stop}
	users := []string{"u-alice", "u-bob", "u-carol"}
	for w := range workers {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for i := 0; fctx.Err() == nil; i++ {
				user := users[(w+i)%len(users)]
				o := &flowOrder{sent: time.Now()}
				f.mu.Lock()
				f.orders = append(f.orders, o)
				f.mu.Unlock()
				// each step retries transient failures (503 while the
				// group has no master) on the scenario's context, not the
				// flow's: an order once sent is carried to its end
				info, err := s.createOrder(ctx, user, apple(1))
				f.mu.Lock()
				o.id, o.createErr = info.ID, err
				if err == nil {
					o.acked = time.Now()
				}
				f.mu.Unlock()
				if err != nil {
					return
				}
				info, err = s.waitOrder(ctx, info.ID, "RESERVED", "CANCELLED")
				if err != nil || info.Status != "RESERVED" {
					continue
				}
				p, err := s.payRetrying(ctx, idemKey("flow"), info.ID, user, int64(info.TotalAmount))
				f.mu.Lock()
				o.payErr = err
				if err == nil && p.Status == "SUCCEEDED" {
					o.paid = time.Now()
				}
				f.mu.Unlock()
			}
		}()
	}
	return f
}

// snapshot returns copies of the orders so far.
func (f *orderFlow) snapshot() []flowOrder {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]flowOrder, len(f.orders))
	for i, o := range f.orders {
		out[i] = *o
	}
	return out
}

// firstPaidSentAfter returns the first order sent after t whose payment
// succeeded (ok false if none yet).
func (f *orderFlow) firstPaidSentAfter(t time.Time) (flowOrder, bool) {
	var best flowOrder
	found := false
	for _, o := range f.snapshot() {
		if o.sent.After(t) && !o.paid.IsZero() && (!found || o.paid.Before(best.paid)) {
			best, found = o, true
		}
	}
	return best, found
}

// halt stops placing new orders and waits for the ones in flight.
func (f *orderFlow) halt() {
	f.stop()
	f.wg.Wait()
}

// 9b (controller mode, the default). broker-a's master is SIGKILLed while
// orders and payments flow: the controllers elect the in-sync slave, the
// order flow works again within 20 s of the kill, the killed replica,
// restarted, rejoins as a slave in the SyncStateSet, and the invariants
// hold (no acknowledged order, payment or stock movement lost or doubled).
func TestBrokerMasterFailover(t *testing.T) {
	s, ctx := begin(t, 5*time.Minute)
	if s.mode != modeController {
		t.Skip("E2E_BROKER_MODE=masterslave: no controller (TestBrokerMasterKilledAndRestarted covers 4.x)")
	}
	var before groupView
	waitFor(t, ctx, "broker-a with a master and both replicas in sync", func() bool {
		g, err := s.brokerGroup(ctx)
		before = g
		return err == nil && g.Master != "" && len(g.InSync) == 2
	})
	victim := before.Master
	survivor := "broker-a-s"
	if victim == survivor {
		survivor = "broker-a"
	}
	t.Logf("before: %s", before)
	t.Cleanup(func() { // before begin's invariant check: leave both replicas running
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if !s.running(cctx, victim) {
			if err := s.start(cctx, victim); err != nil {
				t.Errorf("restart %s: %v", victim, err)
			}
		}
	})

	flow := startOrderFlow(ctx, s, 3)
	defer flow.halt()
	waitFor(t, ctx, "3 orders paid before the kill", func() bool {
		n := 0
		for _, o := range flow.snapshot() {
			if !o.paid.IsZero() {
				n++
			}
		}
		return n >= 3
	})

	// A group up for a while: the slave has copied the master's topics
	// and groups (the stack creates most of them moments ago).
	diff := "?" // logs the first comparison too
	waitFor(t, ctx, survivor+" holding the master's topics and groups", func() bool {
		d, err := s.metadataDiff(ctx, victim, survivor)
		if err != nil {
			d = err.Error()
		}
		if d != diff {
			t.Logf("%s vs %s: %s", survivor, victim, cmp.Or(d, "same topics and groups"))
			diff = d
		}
		return err == nil && d == ""
	})

	killed := time.Now()
	s.invalidate(victim)
	if out, err := exec.CommandContext(ctx, "docker", "kill", "--signal", "KILL", s.node(victim).c.GetContainerID()).CombinedOutput(); err != nil {
		t.Fatalf("docker kill %s: %v: %s", victim, err, out)
	}
	t.Logf("%s (master) SIGKILLed with %d orders placed", victim, len(flow.snapshot()))

	// the controllers' view: the survivor is master with a new epoch
	var after groupView
	waitFor(t, ctx, "a new master of broker-a", func() bool {
		g, err := s.brokerGroup(ctx)
		after = g
		return err == nil && g.Master == survivor && g.MasterEpoch > before.MasterEpoch
	})
	elected := time.Since(killed)
	t.Logf("elected %.1fs after the kill: %s", elected.Seconds(), after)
	if slices.Contains(after.InSync, victim) {
		t.Errorf("the dead %s is still in the SyncStateSet %v", victim, after.InSync)
	}

	// the order flow: an order placed after the kill, acknowledged, paid
	var first flowOrder
	waitFor(t, ctx, "an order placed after the kill paid", func() bool {
		var ok bool
		first, ok = flow.firstPaidSentAfter(killed)
		return ok
	})
	acked, paid := first.acked.Sub(killed), first.paid.Sub(killed)
	t.Logf("first order placed after the kill: %s acknowledged %.1fs and paid %.1fs after the kill", first.id, acked.Seconds(), paid.Seconds())
	if paid > flowBudget {
		t.Errorf("the order flow took %.1fs after the kill to place and pay an order, want at most %s", paid.Seconds(), flowBudget)
	}

	// the killed replica comes back and rejoins as a slave
	restarted := time.Now()
	if err := s.start(ctx, victim); err != nil {
		t.Fatalf("restart %s: %v", victim, err)
	}
	var rejoined groupView
	rctx, cancel := context.WithTimeout(ctx, rejoinBudget)
	defer cancel()
	waitFor(t, rctx, victim+" back in the SyncStateSet as a slave", func() bool {
		g, err := s.brokerGroup(rctx)
		rejoined = g
		return err == nil && g.Master == survivor && slices.Contains(g.InSync, victim)
	})
	t.Logf("%s rejoined %.1fs after its restart: %s", victim, time.Since(restarted).Seconds(), rejoined)
	if rejoined.MasterEpoch != after.MasterEpoch {
		t.Errorf("master epoch moved from %d to %d when %s rejoined: it should follow, not be elected", after.MasterEpoch, rejoined.MasterEpoch, victim)
	}

	// a little more flow against the new layout, then stop and account
	n := len(flow.snapshot())
	waitFor(t, ctx, "2 more orders paid after the rejoin", func() bool {
		k := 0
		for _, o := range flow.snapshot()[n:] {
			if !o.paid.IsZero() {
				k++
			}
		}
		return k >= 2
	})
	flow.halt()
	var sent, ackedN, paidN, afterKill int
	for _, o := range flow.snapshot() {
		sent++
		if o.createErr != nil {
			t.Errorf("order sent at +%.1fs: %v", o.sent.Sub(killed).Seconds(), o.createErr)
		}
		if o.payErr != nil && reasonOf(o.payErr) != "ORDER_CANCELLED" {
			t.Errorf("pay %s: %v", o.id, o.payErr)
		}
		if !o.acked.IsZero() {
			ackedN++
		}
		if !o.paid.IsZero() {
			paidN++
			if o.sent.After(killed) {
				afterKill++
			}
		}
	}
	t.Logf("flow: %d orders sent, %d acknowledged, %d paid (%d of them placed after the kill)", sent, ackedN, paidN, afterKill)
	fmt.Printf("e2e: failover: new master %.1fs, order acknowledged %.1fs and paid %.1fs after the kill; rejoined %.1fs after restart\n",
		elected.Seconds(), acked.Seconds(), paid.Seconds(), time.Since(restarted).Seconds())
}
