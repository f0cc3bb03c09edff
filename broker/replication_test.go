package broker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func syncMaster(o *broker.Options) { o.BrokerRole = "SYNC_MASTER" }

func slave(o *broker.Options) {
	o.BrokerRole = "SLAVE"
	o.BrokerID = 1
}

func haStatus(t *testing.T, addr string) map[string]any {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, protocol.NewRequest(protocol.TideHAStatus, nil, nil))
	if err != nil || resp.Code != protocol.Success {
		t.Fatalf("ha status: %v %+v", err, resp)
	}
	var st map[string]any
	if err := json.Unmarshal(resp.Body, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSyncMasterSlave: a SYNC_MASTER acknowledges sends once its slave has
// them; the slave follows the master found through the NameServer, holds
// byte-identical data, serves pulls, and copies consumer offsets; with the
// slave gone, sends answer SLAVE_NOT_AVAILABLE (stored on the master).
func TestSyncMasterSlave(t *testing.T) {
	ns := nameservertest.Start(t)
	m := brokertest.Start(t, ns, syncMaster)
	s := brokertest.Start(t, ns, slave)
	const topic = "HATopic"
	if err := createTopic(m.Addr(), topic, 2); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ns, topic)
	waitFor(t, "slave connected", 20*time.Second, func() bool {
		srv, _ := haStatus(t, m.Addr())["server"].(map[string]any)
		slaves, _ := srv["slaves"].([]any)
		return len(slaves) == 1
	})
	p := newProducer(t, ns, "hapg")
	for i := 0; i < 20; i++ {
		res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("replicated")))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %+v", i, err, res)
		}
	}
	// acknowledged means on the slave: its queues hold all 20 at once
	// (after its dispatcher ran)
	waitFor(t, "slave queues", 5*time.Second, func() bool { return topicTotal(t, s.Addr(), topic, 2) == 20 })

	// consumer offsets reach the slave with the metadata sync
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	uh := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "hacg", Topic: topic, QueueID: 0, CommitOffset: 3}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if resp, err := cl.Invoke(ctx, m.Addr(), protocol.NewRequest(protocol.UpdateConsumerOffset, uh.Encode(), nil)); err != nil || resp.Code != 0 {
		t.Fatalf("commit offset: %v %+v", err, resp)
	}
	s.SyncMetadataNow()
	qh := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: "hacg", Topic: topic, QueueID: 0}
	waitFor(t, "offset on the slave", 10*time.Second, func() bool {
		resp, err := cl.Invoke(ctx, s.Addr(), protocol.NewRequest(protocol.QueryConsumerOffset, qh.Encode(), nil))
		return err == nil && resp.Code == 0 && resp.Ext("offset") == "3"
	})

	// the slave refuses writes
	if _, err := sendRaw(cl, s.Addr(), topic); err == nil {
		t.Fatal("slave accepted a send")
	}

	// without its slave a SYNC_MASTER still stores but says so
	s.Shutdown(context.Background())
	res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("alone")))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != primitive.SendSlaveNotAvailable {
		t.Fatalf("status without slave = %v, want SendSlaveNotAvailable", res.Status)
	}
}

// sendRaw sends one message with our client and returns an error for a
// non-success code.
func sendRaw(cl *remoting.Client, addr, topic string) (*protocol.Command, error) {
	h := protocol.SendMessageRequestHeader{ProducerGroup: "raw", Topic: topic, DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 0, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, protocol.NewRequest(protocol.SendMessage, h.Encode(), []byte("x")))
	if err != nil {
		return nil, err
	}
	return resp, resp.Err()
}

// TestHAAuthSecret: with haAuthSecret a slave holding the same secret
// replicates; one with another secret gets not a byte of commit log; the
// HA port binds the broker's own address, not every interface.
func TestHAAuthSecret(t *testing.T) {
	ns := nameservertest.Start(t)
	secret := func(s string) func(*broker.Options) { return func(o *broker.Options) { o.HAAuthSecret = s } }
	m := brokertest.Start(t, ns, secret("the-right-secret-0123"))
	if addr, _ := haStatus(t, m.Addr())["server"].(map[string]any)["addr"].(string); !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("HA port bound to %q, want the broker's address 127.0.0.1", addr)
	}
	const topic = "HAAuthTopic"
	if err := createTopic(m.Addr(), topic, 1); err != nil {
		t.Fatal(err)
	}
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	for i := 0; i < 5; i++ {
		if _, err := sendRaw(cl, m.Addr(), topic); err != nil {
			t.Fatal(err)
		}
	}
	bad := brokertest.Start(t, ns, slave, secret("a-wrong-secret-456789"))
	good := brokertest.Start(t, ns, func(o *broker.Options) { slave(o); o.BrokerID = 2 }, secret("the-right-secret-0123"))
	waitFor(t, "the slave with the secret replicated", 20*time.Second, func() bool { return topicTotal(t, good.Addr(), topic, 1) == 5 })
	// Both slaves follow the master found through the NameServer and
	// retry; the wrong one has been refused by now at least once.
	waitFor(t, "the wrong slave tried", 20*time.Second, func() bool {
		c, _ := haStatus(t, bad.Addr())["client"].(map[string]any)
		n, _ := c["sessions"].(float64)
		return n >= 1
	})
	if off := haStatus(t, bad.Addr())["maxPhyOffset"]; off != float64(0) {
		t.Errorf("slave with a wrong secret holds commit log up to %v", off)
	}
}
