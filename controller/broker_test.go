package controller_test

// Brokers in controller mode against a real controller: this test lives
// here, not in the broker module, so that the broker (and every module
// that requires it) does not depend on the controller module.

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/controller"
	"github.com/tidemq/tide/controller/controllertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/controllerclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// sendRaw sends one message and returns an error for a non-success code.
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

// syncMaster returns the options of a SYNC_MASTER replica of broker group
// name in controller mode (controller ctl, store under root; every
// in-sync replica acknowledges): 2.5 s heartbeat timeout, 200 ms
// heartbeats, and the given haMaxTimeSlaveNotCatchup and slave timeout
// (ms), which decide how soon the master shrinks the SyncStateSet.
func syncMaster(ctl, name, root string, notCatchup, slaveTimeout int) func(*broker.Options) {
	return func(o *broker.Options) {
		o.EnableControllerMode, o.ControllerAddr = true, ctl
		o.BrokerName, o.BrokerRole = name, "SYNC_MASTER"
		o.ControllerHeartBeatTimeoutMills, o.BrokerHeartbeatInterval = 2500, 200
		o.AllAckInSyncStateSet, o.HaMaxTimeSlaveNotCatchup, o.SlaveTimeout = true, notCatchup, slaveTimeout
		o.Store.StorePathRootDir = root
	}
}

// startController runs a one-node controller group on loopback
// (controllertest.Start: 2.5 s broker heartbeat timeout, 50 ms scan).
func startController(t *testing.T, opts ...func(*controller.Options)) string {
	t.Helper()
	return controllertest.Start(t, opts...)
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func epochCache(t *testing.T, cl *remoting.Client, addr string) *protocol.EpochEntryCache {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, protocol.NewRequest(protocol.GetBrokerEpochCache, nil, nil))
	if err != nil || resp.Err() != nil {
		t.Fatalf("GET_BROKER_EPOCH_CACHE: %v %v", err, resp)
	}
	c, err := protocol.DecodeEpochEntryCache(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestControllerModeStart: brokers in controller mode take their id and
// role from the controller at start, heartbeat it, write the epoch file as
// master and serve it; a master that died and restarts is re-elected
// (it is the only in-sync replica) under a new epoch, recorded in its
// epoch file.
func TestControllerModeStart(t *testing.T) {
	ctl := startController(t)
	ns := nameservertest.Start(t)
	rootA := t.TempDir()
	ctlMode := func(root string) func(*broker.Options) {
		return func(o *broker.Options) {
			o.EnableControllerMode, o.ControllerAddr = true, ctl
			o.BrokerName = "cm"
			o.ControllerHeartBeatTimeoutMills, o.BrokerHeartbeatInterval = 2500, 200
			if root != "" {
				o.Store.StorePathRootDir = root
			}
		}
	}
	a := brokertest.Start(t, ns, ctlMode(rootA))
	running, id, master, ok := a.ControllerRole()
	if !ok || running != "master" || id != 1 || master.MasterBrokerID != 1 || master.MasterEpoch != 1 {
		t.Fatalf("A: %s id %d master %+v", running, id, master)
	}
	raw := remoting.NewClient(remoting.ClientOptions{})
	defer raw.Close()
	if _, err := sendRaw(raw, a.Addr(), "cm-topic"); err != nil {
		t.Fatalf("send to the master: %v", err)
	}
	if c := epochCache(t, raw, a.Addr()); len(c.EpochList) != 1 || c.EpochList[0].Epoch != 1 || c.EpochList[0].StartOffset != 0 ||
		c.BrokerID != 1 || c.MaxOffset == 0 || c.EpochList[0].EndOffset != c.MaxOffset {
		t.Fatalf("A's epoch cache: %+v", c)
	}

	b := brokertest.Start(t, ns, ctlMode(""))
	if running, id, master, _ := b.ControllerRole(); running != "slave" || id != 2 || master.MasterBrokerID != 1 {
		t.Fatalf("B: %s id %d master %+v", running, id, master)
	}
	if _, err := sendRaw(raw, b.Addr(), "cm-topic"); err == nil {
		t.Fatal("the slave took a write")
	}

	// A dies: B never joined the SyncStateSet, so the group loses its master
	rc := remoting.NewClient(remoting.ClientOptions{})
	defer rc.Close()
	cli := controllerclient.New(rc, []string{ctl})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the group to lose its master", func() bool {
		h, _, err := cli.ReplicaInfo(ctx, "cm")
		return err == nil && h.MasterBrokerID == protocol.NoBrokerID
	})
	waitUntil(t, 5*time.Second, "B told there is no master", func() bool {
		_, _, m, _ := b.ControllerRole()
		return m.MasterBrokerID == protocol.NoBrokerID && m.MasterEpoch == 2
	})

	// A restarts from its store: same id, master again under epoch 3
	a2 := brokertest.Start(t, ns, ctlMode(rootA))
	running, id, master, _ = a2.ControllerRole()
	if running != "master" || id != 1 || master.MasterEpoch != 3 {
		t.Fatalf("A restarted: %s id %d master %+v", running, id, master)
	}
	c := epochCache(t, raw, a2.Addr())
	if len(c.EpochList) != 2 || c.EpochList[1].Epoch != 3 || c.EpochList[1].StartOffset != c.EpochList[0].EndOffset ||
		c.EpochList[1].StartOffset == 0 {
		t.Fatalf("A's epoch cache after restart: %+v", c)
	}
	if _, err := sendRaw(raw, a2.Addr(), "cm-topic"); err != nil {
		t.Fatalf("send to the re-elected master: %v", err)
	}
	if _, err := filepath.Glob(filepath.Join(rootA, "config", "controllerIdentity.json")); err != nil {
		t.Fatal(err)
	}
}
