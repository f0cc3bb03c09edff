//go:build cluster

package failovertest

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/clustertest"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Group ids the partitioned processes run with: iptables' owner match
// tells their packets apart on loopback.
const (
	gidMaster      = 21501
	gidSlave       = 21502
	gidControllers = 21503
)

// TestNetworkCutMaster (issue 19): the master of a group in sync
// (SYNC_MASTER, allAckInSyncStateSet) is cut off from the three
// controllers and from its slave, in both directions, by iptables rules on
// the owner group of each process's sockets; the test process (a client)
// still reaches it, and so does the NameServer. Raw sends go to the master
// throughout, each to a chosen queue, recording the queue offset of every
// SEND_OK.
//
//   - No send to the old master that started after the cut is
//     acknowledged SEND_OK (it cannot reach its in-sync replica and cannot
//     shrink the SyncStateSet without the controller).
//   - The controller elects the slave, which takes writes.
//   - After healing, the old master rejoins as a slave, truncates what it
//     wrote after the cut (nothing of it stays in its log) and catches
//     up; every acknowledged message is on both brokers at the queue and
//     offset its SEND_OK named.
//
// It needs root and iptables with the owner match (it is skipped
// otherwise, with the reason).
func TestNetworkCutMaster(t *testing.T) {
	cut := newCutter(t)
	g := newGroupGid(t, 3, gidControllers)
	first := g.startBrokerGid("b1", gidMaster)
	g.eventually(30*time.Second, "b1 master", func() bool {
		m, _, err := g.replicaInfo()
		return err == nil && m.MasterAddress == first.addr
	})
	second := g.startBrokerGid("b2", gidSlave)
	g.createTopic(first.addr, topic, queues)
	inSync := func() bool {
		_, set, err := g.replicaInfo()
		return err == nil && len(set) == 2
	}
	g.eventually(60*time.Second, "b2 in the SyncStateSet", inSync)
	m0, _, err := g.replicaInfo()
	if err != nil {
		t.Fatal(err)
	}

	acks := &ackBook{at: map[string]position{}}
	var cutAt atomic.Int64 // unix nanos of the cut, 0 before
	var afterCut sync.Map  // bodies sent to b1 after the cut (acknowledged or not)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	sender := func(id int, addr func() string) {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			to := addr()
			body := fmt.Sprintf("s%d-%d", id, i)
			started := time.Now().UnixNano()
			postCut := cutAt.Load() != 0 && to == first.addr
			if postCut {
				afterCut.Store(body, true)
			}
			q := int32((id + i) % queues)
			if off, ok := g.sendTo(to, body, q); ok {
				acks.add(body, position{to, q, off})
				if c := cutAt.Load(); c != 0 && started > c && to == first.addr {
					t.Errorf("the cut-off master acknowledged %s (queue %d offset %d) sent %v after the cut", body, q, off,
						time.Duration(started-c).Round(time.Millisecond))
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	var target atomic.Value
	target.Store(first.addr)
	for id := range 4 {
		wg.Add(1)
		go sender(id, func() string { return target.Load().(string) })
	}
	// one sender keeps writing to the old master whatever happens
	wg.Add(1)
	go sender(9, func() string { return first.addr })
	g.eventually(30*time.Second, "writes acknowledged before the cut", func() bool { return acks.len() >= 50 })

	cut.isolate(first, []*brokerProc{second}, g.ctls)
	cutAt.Store(time.Now().UnixNano())
	cutTime := time.Now()
	g.eventually(60*time.Second, "b2 elected and writable", func() bool {
		m, _, err := g.replicaInfo()
		return err == nil && m.MasterAddress == second.addr && g.probeSend(second.addr, topic)
	})
	t.Logf("b2 master and writable %v after the cut", time.Since(cutTime).Round(time.Millisecond))
	target.Store(second.addr)
	n := acks.len()
	g.eventually(30*time.Second, "writes acknowledged by b2", func() bool { return acks.len() >= n+50 })

	cut.heal()
	healed := time.Now()
	g.eventually(60*time.Second, "b1 demoted to slave", func() bool { return g.role(first.addr) == "SLAVE" })
	close(stop)
	wg.Wait()
	g.eventually(90*time.Second, "b1 back in the SyncStateSet", inSync)
	g.eventually(60*time.Second, "b1 caught up with b2", func() bool {
		a, err1 := g.maxPhyOffset(second.addr)
		b, err2 := g.maxPhyOffset(first.addr)
		return err1 == nil && err2 == nil && a == b
	})
	m1, _, _ := g.replicaInfo()
	t.Logf("b1 slave and in sync %v after healing; epoch %d -> %d; b1 truncations: %q", time.Since(healed).Round(time.Millisecond),
		m0.MasterEpoch, m1.MasterEpoch, first.LogLines("store truncated"))

	var unacked int
	afterCut.Range(func(k, _ any) bool {
		if !acks.has(k.(string)) {
			unacked++
		}
		return true
	})
	for _, b := range []*brokerProc{second, first} {
		msgs, err := clustertest.PullAll(g.rc, b.addr, "check", topic, queues)
		if err != nil {
			t.Fatalf("read %s: %v", b.Name, err)
		}
		have := map[position]string{}
		for _, m := range msgs {
			have[position{"", m.QueueID, m.QueueOffset}] = string(m.Body)
			if _, sent := afterCut.Load(string(m.Body)); sent && !acks.has(string(m.Body)) {
				t.Errorf("%s holds %s, written to the cut-off master and never acknowledged (queue %d offset %d)", b.Name, m.Body, m.QueueID, m.QueueOffset)
			}
		}
		moved := 0
		for body, p := range acks.snapshot() {
			if got := have[position{"", p.queue, p.offset}]; got != body {
				moved++
				if moved <= 5 {
					t.Errorf("%s: acknowledged %s (by %s, queue %d offset %d) reads as %q", b.Name, body, p.by, p.queue, p.offset, got)
				}
			}
		}
		if moved > 0 {
			t.Errorf("%s: %d of %d acknowledged messages not where their SEND_OK put them", b.Name, moved, acks.len())
		}
	}
	t.Logf("%d messages acknowledged; %d sent to the cut-off master were not (and are gone)", acks.len(), unacked)
}

// position is where a SEND_OK put a message.
type position struct {
	by     string
	queue  int32
	offset int64
}

type ackBook struct {
	mu sync.Mutex
	at map[string]position
}

func (a *ackBook) add(body string, p position) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.at[body] = p
}

func (a *ackBook) has(body string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.at[body]
	return ok
}

func (a *ackBook) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.at)
}

func (a *ackBook) snapshot() map[string]position {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]position, len(a.at))
	for k, v := range a.at {
		out[k] = v
	}
	return out
}

// sendTo sends body to queue q of topic on addr with a raw request; ok
// means SEND_OK, off is the queue offset it names.
func (g *group) sendTo(addr, body string, q int32) (off int64, ok bool) {
	h := protocol.SendMessageRequestHeader{ProducerGroup: "netcut", Topic: topic, DefaultTopic: "TBW102", DefaultTopicQueueNums: queues,
		QueueID: q, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1}
	resp, err := g.invoke(addr, protocol.NewRequest(protocol.SendMessage, h.Encode(), []byte(body)))
	if err != nil || resp.Code != protocol.Success {
		return 0, false
	}
	var rh protocol.SendMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return 0, false
	}
	return rh.QueueOffset, true
}

// cutter installs and removes the iptables rules of a partition, in a
// chain of its own jumped to from OUTPUT (loopback packets pass OUTPUT
// with the sending socket's owner).
type cutter struct {
	*ipChain
	on bool
}

func newCutter(t *testing.T) *cutter {
	t.Helper()
	c := &cutter{ipChain: newIPChain(t, "TIDE-CUT", "OUTPUT")}
	if out, err := c.run("-A", c.name, "-m", "owner", "--gid-owner", strconv.Itoa(gidMaster), "-j", "RETURN"); err != nil {
		t.Skipf("SKIPPED: iptables has no owner match: %v %s", err, out)
	}
	c.flush()
	return c
}

// isolate drops every packet between master and the slaves and
// controllers (their client and HA ports, the controllers' ports), both
// ways; clients and the NameServer still reach everything.
func (c *cutter) isolate(master *brokerProc, slaves []*brokerProc, ctls []string) {
	c.t.Helper()
	port := func(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }
	masterPorts := port(master.addr) + "," + master.haPort
	var peerPorts []string
	for _, s := range slaves {
		peerPorts = append(peerPorts, port(s.addr), s.haPort)
	}
	for _, a := range ctls {
		peerPorts = append(peerPorts, port(a))
	}
	gid := func(n int) []string { return []string{"-m", "owner", "--gid-owner", strconv.Itoa(n)} }
	rules := [][]string{
		// the master's packets to the peers, and its answers on its HA port
		append(gid(gidMaster), "-p", "tcp", "-m", "multiport", "--dports", strings.Join(peerPorts, ","), "-j", "DROP"),
		append(gid(gidMaster), "-p", "tcp", "--sport", master.haPort, "-j", "DROP"),
		// the peers' packets to the master
		append(gid(gidSlave), "-p", "tcp", "-m", "multiport", "--dports", masterPorts, "-j", "DROP"),
		append(gid(gidControllers), "-p", "tcp", "-m", "multiport", "--dports", masterPorts, "-j", "DROP"),
	}
	for _, r := range rules {
		c.add(r...)
	}
	c.on = true
}

func (c *cutter) heal() {
	c.t.Helper()
	c.flush()
	c.on = false
}
