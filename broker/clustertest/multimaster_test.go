//go:build cluster

package clustertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestTwoMastersTwoSlaves: two broker groups, each a SYNC_MASTER with a
// slave (deploy/brokers/2m-2s-sync), and two NameServers. Sends spread
// over both masters. Master a is killed (SIGKILL): sends go on through
// master b, and the messages acknowledged by a are read from its slave.
// Then one NameServer is killed: the existing producer and a new one
// (configured with both NameServers, the dead one first) keep sending, the
// brokers stay registered with the survivor, and a new consumer reads
// broker b's messages.
func TestTwoMastersTwoSlaves(t *testing.T) {
	c := newCluster(t, 2)
	ma := c.startBroker("2m-2s-sync/broker-a.conf", nil)
	sa := c.startBroker("2m-2s-sync/broker-a-s.conf", nil)
	mb := c.startBroker("2m-2s-sync/broker-b.conf", nil)
	sb := c.startBroker("2m-2s-sync/broker-b-s.conf", nil)
	const topic, queues = "TwoMasters", 4
	c.createTopic(ma, topic, queues)
	c.createTopic(mb, topic, queues)
	c.waitSlave(ma, sa, topic)
	c.waitSlave(mb, sb, topic)

	p := newProducer(t, c.nsList(), "pg-2m")
	l := newLedger()
	for i := 0; i < 200; i++ {
		if res, err := l.send(p, topic, fmt.Sprintf("a-%d-xx", i)); err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, err, res)
		}
	}
	ackedA, ackedB := l.ackedBy("broker-a"), l.ackedBy("broker-b")
	if len(ackedA) == 0 || len(ackedB) == 0 {
		t.Fatalf("sends not spread over both masters: %s", l)
	}
	t.Logf("before the kill: %s", l)

	if err := ma.Kill(); err != nil {
		t.Fatal(err)
	}
	// Sends continue on master b. The producer learns of the loss from a
	// failed send (its retries pick another broker) and from its route
	// refresh (every 30 s; the NameServers drop master a at once, its
	// connection closed); an application retry covers the sends whose
	// three attempts all hit broker-a queues.
	after := newLedger()
	for i := 0; i < 100; i++ {
		ok := false
		for attempt := 0; attempt < 10 && !ok; attempt++ {
			res, err := after.send(p, topic, fmt.Sprintf("b-%d-xx", i))
			ok = err == nil && res.Status == primitive.SendOK
		}
		if !ok {
			t.Fatalf("send %d after the kill never succeeded: %s", i, after)
		}
	}
	if n := len(after.ackedBy("broker-a")); n > 0 {
		t.Fatalf("%d sends acknowledged by the killed master", n)
	}
	t.Logf("after the kill: %s", after)

	// The dead master's messages are on its slave; b's on b and its slave.
	c.requireAll(sa.addr, "slave of the killed master", topic, queues, ackedA, 10*time.Second)
	allB := l.ackedBy("broker-b")
	for id, body := range after.snapshot() {
		allB[id] = body
	}
	c.requireAll(mb.addr, "master b", topic, queues, allB, 10*time.Second)
	c.requireAll(sb.addr, "slave b", topic, queues, allB, 10*time.Second)

	// One NameServer dies; clients and brokers use the other.
	ns1, ns2 := c.ns[0], c.ns[1]
	if err := ns1.Kill(); err != nil {
		t.Fatal(err)
	}
	p2 := newProducer(t, c.nsList(), "pg-2m-second")
	last := newLedger()
	for i := 0; i < 50; i++ {
		for _, pr := range []struct {
			name string
			l    *ledger
		}{{"existing", last}, {"new", last}} {
			prod := p
			if pr.name == "new" {
				prod = p2
			}
			ok := false
			for attempt := 0; attempt < 10 && !ok; attempt++ {
				res, err := last.send(prod, topic, fmt.Sprintf("c-%s-%d-xx", pr.name, i))
				ok = err == nil && res.Status == primitive.SendOK
			}
			if !ok {
				t.Fatalf("%s producer, send %d with one NameServer down never succeeded: %s", pr.name, i, last)
			}
		}
	}
	t.Logf("with %s down: %s", ns1.Name, last)
	for _, b := range []*brokerProc{sa, mb, sb} {
		c.waitRegistered(b) // registrations go on with the survivor
	}
	ci, err := c.clusterInfo(ns2.addr)
	if err != nil {
		t.Fatal(err)
	}
	if addr, ok := ci.BrokerAddrTable["broker-a"].BrokerAddrs[0]; ok {
		t.Errorf("%s still lists the killed master at %s", ns2.Name, addr)
	}
	for id, body := range last.snapshot() {
		allB[id] = body
	}
	cons := startConsumer(t, c.nsList(), "cg-2m", topic)
	c.eventually(60*time.Second, "a new push consumer to read every message of broker-b", func() bool {
		_, ok := cons.has(allB)
		return ok
	})
	n, _ := cons.has(ackedA)
	t.Logf("the new push consumer read %d of broker-a's %d messages (0 expected: v2.1.2 cannot start a queue without its master)", n, len(ackedA))
}
