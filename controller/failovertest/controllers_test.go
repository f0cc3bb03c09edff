//go:build cluster

package failovertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestControllerLossKeepsDataPlane (issue 19): a prober sends to the
// master of a group in sync (SYNC_MASTER, allAckInSyncStateSet) while the
// controllers go away.
//
//  1. The controller leader is killed: another controller becomes leader
//     (the time is logged), the group's master, epoch and SyncStateSet
//     stay, and every probe is acknowledged SEND_OK.
//  2. The new leader is killed too (one controller of three left, no
//     quorum): the master keeps acknowledging every probe over several
//     heartbeat timeouts.
//  3. The master is killed: nothing is elected without quorum; the slave
//     stays a slave and acknowledges no write.
//  4. A controller comes back (quorum): the slave is elected and takes
//     writes.
func TestControllerLossKeepsDataPlane(t *testing.T) {
	g := newGroup(t, 3)
	first := g.startBroker("b1")
	g.eventually(30*time.Second, "b1 master", func() bool {
		m, _, err := g.replicaInfo()
		return err == nil && m.MasterAddress == first.addr
	})
	second := g.startBroker("b2")
	g.createTopic(first.addr, topic, queues)
	g.eventually(60*time.Second, "b2 in the SyncStateSet", func() bool {
		_, set, err := g.replicaInfo()
		return err == nil && len(set) == 2
	})
	m0, set0, err := g.replicaInfo()
	if err != nil {
		t.Fatal(err)
	}

	p := g.startProber(first.addr)
	waitProbes := func(what string, window time.Duration) {
		from, n := time.Now(), p.count()
		g.eventually(window+30*time.Second, what, func() bool { return time.Since(from) >= window && p.count() > n })
	}
	waitProbes("probes acknowledged before the controllers go", time.Second)

	// 1. the leader goes
	leader := g.controllerLeader(nil)
	if leader < 0 {
		t.Fatal("no controller leader")
	}
	killed := time.Now()
	if err := g.procs[leader].Kill(); err != nil {
		t.Fatal(err)
	}
	down := map[int]bool{leader: true}
	var next int
	g.eventually(30*time.Second, "a new controller leader", func() bool {
		next = g.controllerLeader(down)
		return next >= 0
	})
	t.Logf("controller %d leader %v after controller %d (leader) was killed", next, time.Since(killed).Round(time.Millisecond), leader)
	g.eventually(10*time.Second, "the group's state from the new leader", func() bool {
		_, _, err := g.replicaInfo()
		return err == nil
	})
	m1, set1, err := g.replicaInfo()
	if err != nil {
		t.Fatal(err)
	}
	if m1.MasterAddress != m0.MasterAddress || m1.MasterEpoch != m0.MasterEpoch || len(set1) != len(set0) {
		t.Fatalf("the controller leader change changed the group: %+v %v -> %+v %v", m0, set0, m1, set1)
	}
	waitProbes("probes over two heartbeat timeouts after the leader change", 2*heartbeatTimeout*time.Millisecond)
	if f := p.failures(); len(f) > 0 {
		t.Fatalf("%d of %d probes to the master not acknowledged across the controller leader change: %v", len(f), p.count(), f)
	}

	// 2. no quorum
	if err := g.procs[next].Kill(); err != nil {
		t.Fatal(err)
	}
	down[next] = true
	survivor := 3 - leader - next
	waitProbes("probes over three heartbeat timeouts with one controller of three", 3*heartbeatTimeout*time.Millisecond)
	if f := p.failures(); len(f) > 0 {
		t.Fatalf("%d of %d probes to the master not acknowledged with one controller of three: %v", len(f), p.count(), f)
	}
	p.stop()
	t.Logf("%d probes acknowledged, none refused, through both controller losses", p.count())

	// 3. the master dies too: no election without quorum
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	died := time.Now()
	for time.Since(died) < 3*heartbeatTimeout*time.Millisecond {
		if g.probeSend(second.addr, topic) {
			t.Fatalf("the slave acknowledged a write %v after the master died with no controller quorum", time.Since(died))
		}
		if role := g.role(second.addr); role != "" && role != "SLAVE" {
			t.Fatalf("the slave became %s without controller quorum", role)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// 4. quorum returns: the failover happens
	back := leader
	if err := g.procs[back].Start(); err != nil {
		t.Fatal(err)
	}
	if err := g.procs[back].WaitTCP(g.ctls[back], 30*time.Second); err != nil {
		t.Fatal(err)
	}
	returned := time.Now()
	g.eventually(60*time.Second, "b2 elected and writable once quorum returns", func() bool {
		m, _, err := g.replicaInfo()
		return err == nil && m.MasterAddress == second.addr && g.probeSend(second.addr, topic)
	})
	m2, _, _ := g.replicaInfo()
	t.Logf("b2 master (epoch %d) %v after controller %d came back (controller %d stayed)", m2.MasterEpoch,
		time.Since(returned).Round(time.Millisecond), back, survivor)
	if m2.MasterEpoch <= m0.MasterEpoch {
		t.Fatalf("epoch after the election %d, want above %d", m2.MasterEpoch, m0.MasterEpoch)
	}
}

// controllerLeader returns the index of the controller that a live
// controller names leader, -1 if none does; skip lists controllers that
// are down (neither asked nor accepted as leader).
func (g *group) controllerLeader(skip map[int]bool) int {
	for i, addr := range g.ctls {
		if skip[i] {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		md, err := g.cli.Metadata(ctx, addr)
		cancel()
		if err != nil || md.ControllerLeaderAddress == "" {
			continue
		}
		for j, a := range g.ctls {
			if a == md.ControllerLeaderAddress && !skip[j] {
				return j
			}
		}
	}
	return -1
}

// role returns the role a broker reports (TideHAStatus), "" if it does
// not answer.
func (g *group) role(addr string) string {
	resp, err := g.invoke(addr, protocol.NewRequest(protocol.TideHAStatus, nil, nil))
	if err != nil {
		return ""
	}
	st, err := protocol.DecodeHAStatus(resp.Body)
	if err != nil {
		return ""
	}
	return st.Role
}

// prober sends raw probes to one broker in a loop and records refusals.
type prober struct {
	mu    sync.Mutex
	n     int
	fails []string
	done  chan struct{}
	wg    sync.WaitGroup
}

func (g *group) startProber(addr string) *prober {
	p := &prober{done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			select {
			case <-p.done:
				return
			default:
			}
			ok := g.probeSend(addr, topic)
			p.mu.Lock()
			p.n++
			if !ok {
				p.fails = append(p.fails, time.Now().Format("15:04:05.000"))
			}
			p.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	g.t.Cleanup(p.stop)
	return p
}

func (p *prober) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *prober) failures() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.fails...)
}

func (p *prober) stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	p.wg.Wait()
}
