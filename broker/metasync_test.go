package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// topicQueues returns the broker's queue count of topic (0: unknown).
func topicQueues(t *testing.T, cl *remoting.Client, addr, topic string) int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, protocol.NewRequest(protocol.GetAllTopicConfig, nil, nil))
	if err != nil || resp.Code != protocol.Success {
		t.Fatalf("topic configs of %s: %v %+v", addr, err, resp)
	}
	w, err := protocol.DecodeTopicConfigWrapper(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return w.TopicConfigTable[topic].WriteQueueNums
}

// TestSyncMasterCreationReachesSlave: a SYNC_MASTER answers a topic
// creation, and the send that auto-creates a topic, only once its slave
// has the topic: the slave lists it the moment the answer arrives (before,
// it copied the metadata every 10 s).
func TestSyncMasterCreationReachesSlave(t *testing.T) {
	ns := nameservertest.Start(t)
	m := brokertest.Start(t, ns, syncMaster)
	s := brokertest.Start(t, ns, slave)
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	// the slave follows the master and polls its metadata
	if err := createTopic(m.Addr(), "Warm", 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the slave polling the master", 30*time.Second, func() bool { return topicQueues(t, cl, s.Addr(), "Warm") == 1 })

	for _, tc := range []struct {
		name   string
		queues int32
		create func(topic string) error
	}{
		{"UPDATE_AND_CREATE_TOPIC", 8, func(topic string) error { return createTopic(m.Addr(), topic, 8) }},
		{"auto-created by a send", 4, func(topic string) error { _, err := sendRaw(cl, m.Addr(), topic); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "Fresh" + string(rune('A'+tc.queues))
			if err := tc.create(topic); err != nil {
				t.Fatal(err)
			}
			if got := topicQueues(t, cl, s.Addr(), topic); got != tc.queues {
				t.Fatalf("the slave has %s with %d queues right after SUCCESS, want %d", topic, got, tc.queues)
			}
		})
	}
}
