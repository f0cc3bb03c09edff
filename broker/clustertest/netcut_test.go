//go:build cluster

package clustertest

import (
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestSyncMasterNetworkCut: the slave of a SYNC_MASTER replicates through
// a TCP proxy (haMasterAddress) while four producers send. First the link
// goes silent (the proxy holds the bytes, connections stay open): sends
// report FLUSH_SLAVE_TIMEOUT after slaveTimeout (1 s here). Then the link
// is cut (both sides closed, new connections refused): sends report
// SLAVE_NOT_AVAILABLE at once. Both are statuses, not errors, and the
// cut-off slave already holds every message acknowledged SEND_OK.
// After the proxy is restored the slave reconnects and catches up: every
// stored message, whatever its status, is on both brokers.
func TestSyncMasterNetworkCut(t *testing.T) {
	c := newCluster(t, 1)
	m := c.startBroker("2m-2s-sync/broker-a.conf", map[string]string{"slaveTimeout": "1000"})
	proxy, err := NewProxy(m.haAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	s := c.startBroker("2m-2s-sync/broker-a-s.conf", map[string]string{"haMasterAddress": proxy.Addr})
	const topic, queues = "NetCut", 4
	c.createTopic(m, topic, queues)
	c.waitSlave(m, s, topic)

	p := newProducer(t, c.nsList(), "pg-cut")
	l := newLedger()
	stop := l.load(p, topic, "a", 4, 1_000_000, 0)
	defer stop()
	c.waitAcked(l, 100, 60*time.Second)
	proxy.Stall()
	c.eventually(30*time.Second, "sends reporting FLUSH_SLAVE_TIMEOUT", func() bool {
		return l.count(primitive.SendFlushSlaveTimeout) >= 4
	})
	t.Logf("during the stall: %s", l)
	proxy.Cut()
	c.eventually(30*time.Second, "sends reporting SLAVE_NOT_AVAILABLE", func() bool {
		return l.count(primitive.SendSlaveNotAvailable) >= 8
	})
	okDuringCut := l.snapshot()
	t.Logf("during the cut: %s", l)
	c.requireAll(s.addr, "cut-off slave", topic, queues, okDuringCut, 10*time.Second)

	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	c.waitSlave(m, s, "")
	c.waitAcked(l, len(okDuringCut)+50, 60*time.Second)
	stop()
	t.Logf("after the restore: %s", l)
	if l.errs > 0 {
		t.Errorf("sends failed (not a status): %s", l)
	}
	stored := l.storedSnapshot()
	c.requireAll(m.addr, "master", topic, queues, stored, 10*time.Second)
	c.requireAll(s.addr, "slave after the restore", topic, queues, stored, 20*time.Second)
}
