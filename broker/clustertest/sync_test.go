//go:build cluster

package clustertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestSyncMasterKilled: a SYNC_MASTER and its slave (deploy/brokers/
// 2m-2s-sync) under load from four concurrent producers; the master gets
// SIGKILL mid-stream. Every message acknowledged SEND_OK is then read from
// the slave by a fresh reader (raw pulls from offset 0), and a push
// consumer that was running before the kill goes on consuming from the
// slave. The master is restarted on its old store: replication resumes
// (the slave reconnects), sends are SEND_OK again, and a new consumer
// reads every acknowledged message, old and new.
func TestSyncMasterKilled(t *testing.T) {
	c := newCluster(t, 1)
	m := c.startBroker("2m-2s-sync/broker-a.conf", nil)
	s := c.startBroker("2m-2s-sync/broker-a-s.conf", nil)
	const topic, queues = "SyncKill", 4
	c.createTopic(m, topic, queues)
	c.waitSlave(m, s, topic)

	live := startConsumer(t, c.nsList(), "cg-sync-live", topic)
	p := newProducer(t, c.nsList(), "pg-sync-kill")
	l := newLedger()
	stop := l.load(p, topic, "a", 4, 400, 0)
	c.waitAcked(l, 150, 60*time.Second)
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	stop()
	acked := l.snapshot()
	t.Logf("at the kill: %s", l)
	if n := l.count(primitive.SendFlushSlaveTimeout) + l.count(primitive.SendSlaveNotAvailable); n > 0 {
		t.Errorf("%d sends were not replicated in time before the kill", n)
	}

	// A fresh reader gets every acknowledged message from the slave.
	msgs := c.requireAll(s.addr, "slave after the master's SIGKILL", topic, queues, acked, 10*time.Second)
	seen := map[string]bool{}
	for _, msg := range msgs {
		if seen[msg.OffsetMsgID()] {
			t.Errorf("slave returns %s twice", msg.OffsetMsgID())
		}
		seen[msg.OffsetMsgID()] = true
	}

	// The push consumer that was running fails over to the slave: v2.1.2
	// pulls from "any address" once its route (refreshed every 30 s) has
	// no master.
	c.eventually(60*time.Second, "the running push consumer to read every acknowledged message", func() bool {
		_, all := live.has(acked)
		return all
	})

	// A fresh official push consumer cannot start on a broker group
	// without master: v2.1.2 asks QUERY_CONSUMER_OFFSET of brokerAddrs[0]
	// only (remoteBrokerOffsetStore.fetchConsumeOffsetFromBroker ->
	// FindBrokerAddrByName), gets "address not found", and skips the
	// queue at every rebalance. This is a client limitation (the Java
	// client has the same rule); readers that must fail over either keep
	// running (above) or read the slave with pulls of their own. The
	// observation is logged, not asserted.
	fresh := startConsumer(t, c.nsList(), "cg-sync-fresh", topic)
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) && fresh.len() == 0 {
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("fresh v2.1.2 push consumer with the master down received %d of %d acknowledged messages in 8 s (client limitation when 0)",
		fresh.len(), len(acked))

	// The master comes back on its store: the slave reconnects, sends are
	// replicated again.
	m.start()
	c.waitSlave(m, s, "")
	p2 := newProducer(t, c.nsList(), "pg-sync-kill-2")
	l2 := newLedger()
	for i := 0; i < 50; i++ {
		res, err := l2.send(p2, topic, fmt.Sprintf("b-%d-xx", i))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d after the restart: %v %v", i, err, res)
		}
	}
	all := l.snapshot()
	for id, body := range l2.snapshot() {
		all[id] = body
	}
	c.requireAll(m.addr, "restarted master", topic, queues, all, 10*time.Second)
	c.requireAll(s.addr, "slave after the restart", topic, queues, all, 10*time.Second)
	after := startConsumer(t, c.nsList(), "cg-sync-after", topic)
	c.eventually(60*time.Second, "a new push consumer to read every acknowledged message after the restart", func() bool {
		_, ok := after.has(all)
		return ok
	})
}
