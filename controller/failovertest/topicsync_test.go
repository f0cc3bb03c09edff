//go:build cluster

package failovertest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestCreationSurvivesImmediateKill: a topic with 8 queues and a
// subscription group are created on the master of an in-sync pair, and the
// master is SIGKILLed the moment the creation answers SUCCESS. The new
// master (the slave, elected by the controller) must have both: the
// master answered only once its SyncStateSet confirmed the new metadata
// (broker/metasync.go). Before, the slave copied metadata every 2 s, the
// kill came first, and the new master auto-created the topic on the next
// send with the default 4 queues (issue 19's e2e stall: a producer pinned
// to queue 5 was refused "queueId illegal").
func TestCreationSurvivesImmediateKill(t *testing.T) {
	g := newGroup(t, 3)
	first, _ := g.startInSyncPair()
	const fresh, freshQueues, group = "FreshTopic", 8, "fresh-group"

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h := protocol.CreateTopicRequestHeader{Topic: fresh, DefaultTopic: "TBW102", ReadQueueNums: freshQueues, WriteQueueNums: freshQueues,
		Perm: protocol.PermRead | protocol.PermWrite, TopicFilterType: "SINGLE_TAG"}
	began := time.Now()
	if resp, err := g.rc.Invoke(ctx, first.addr, protocol.NewRequest(protocol.UpdateAndCreateTopic, h.Encode(), nil)); err != nil || resp.Err() != nil {
		t.Fatalf("create topic: %v %v", err, resp)
	}
	created := time.Since(began)
	sg := protocol.DefaultSubscriptionGroupConfig(group)
	body, _ := json.Marshal(sg)
	if resp, err := g.rc.Invoke(ctx, first.addr, protocol.NewRequest(protocol.UpdateAndCreateSubscription, nil, body)); err != nil || resp.Err() != nil {
		t.Fatalf("create group: %v %v", err, resp)
	}
	grouped := time.Since(began) - created
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("topic created in %v, group in %v (both include the wait for the slave's confirmation)",
		created.Round(time.Millisecond), grouped.Round(time.Millisecond))
	newMaster := g.newWritableMaster(first)

	resp, err := g.invoke(newMaster, protocol.NewRequest(protocol.GetAllTopicConfig, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	w, err := protocol.DecodeTopicConfigWrapper(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	tc, ok := w.TopicConfigTable[fresh]
	if !ok {
		t.Fatalf("the new master %s does not have %s", newMaster, fresh)
	}
	if tc.ReadQueueNums != freshQueues || tc.WriteQueueNums != freshQueues {
		t.Fatalf("the new master has %s with %d/%d queues, want %d", fresh, tc.ReadQueueNums, tc.WriteQueueNums, freshQueues)
	}
	resp, err = g.invoke(newMaster, protocol.NewRequest(protocol.GetAllSubscriptionGroupConfig, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := protocol.DecodeSubscriptionGroupWrapper(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := gw.SubscriptionGroupTable[group]; !ok {
		t.Fatalf("the new master %s does not have the subscription group %s", newMaster, group)
	}
}
