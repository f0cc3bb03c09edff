package controller_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/controllerclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestControllerModeTimersFollowThePromotion: timers the master delivered
// are not delivered again by a promoted slave. The slave's metadata sync
// copies the master's timer checkpoint (which counts a delivery only once
// its copy is below the confirm offset) and the promoted slave's timer
// service resumes from it. Before, the slave had no checkpoint and
// rescanned the timer queue from its start: every timer still retained
// was delivered again.
func TestControllerModeTimersFollowThePromotion(t *testing.T) {
	ctl := startController(t)
	ns := nameservertest.Start(t)
	roots := map[string]string{}
	opts := func(root string) func(*broker.Options) { return syncMaster(ctl, "tm", root, 30000, 3000) }
	rc := remoting.NewClient(remoting.ClientOptions{})
	defer rc.Close()
	cli := controllerclient.New(rc, []string{ctl})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rootA, rootB := t.TempDir(), t.TempDir()
	a := brokertest.Start(t, ns, opts(rootA))
	b := brokertest.Start(t, ns, opts(rootB))
	roots[a.Addr()], roots[b.Addr()] = rootA, rootB
	waitUntil(t, 20*time.Second, "both in the SyncStateSet", func() bool {
		_, set := syncStateSet(ctx, cli, "tm")
		return slices.Equal(set, []int64{1, 2})
	})
	role := func(br *broker.Broker) string { r, _, _, _ := br.ControllerRole(); return r }
	master, slave := a, b
	if role(b) == "master" {
		master, slave = b, a
	}
	sendTimer := func(addr string, q int32, key string, at time.Time) {
		t.Helper()
		h := protocol.SendMessageRequestHeader{ProducerGroup: "tm", Topic: "tm-timers", DefaultTopic: "TBW102", DefaultTopicQueueNums: 2,
			QueueID: q, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1,
			Properties: protocol.EncodeProperties(map[string]string{protocol.PropTimerDeliverMS: strconv.FormatInt(at.UnixMilli(), 10),
				protocol.PropUniqKey: key})}
		resp, err := invoke(rc, addr, protocol.NewRequest(protocol.SendMessage, h.Encode(), []byte(key)))
		if err != nil || resp.Code != protocol.Success {
			t.Fatalf("send timer %s to %s: %v %v", key, addr, err, resp)
		}
	}
	due := time.Now().Add(500 * time.Millisecond)
	for i := range 10 {
		sendTimer(master.Addr(), 0, fmt.Sprintf("t%d", i), due)
	}
	waitUntil(t, 30*time.Second, "the master delivers the 10 timers", func() bool {
		return maxQueueOffset(t, rc, master.Addr(), "tm-timers", 0) == 10
	})
	// The slave's copy of the checkpoint: all 10 timers of the timer
	// queue finished (done offset 10), none pending (the layout is in
	// broker/internal/timer/checkpoint.go).
	cpFile := filepath.Join(roots[slave.Addr()], "config", "timerCheckpoint")
	waitUntil(t, 30*time.Second, "the master's timer checkpoint on the slave", func() bool {
		b, err := os.ReadFile(cpFile)
		return err == nil && len(b) >= 32 && binary.BigEndian.Uint64(b[16:]) == 10 && binary.BigEndian.Uint64(b[24:]) == 0
	})

	_, slaveID, _, _ := slave.ControllerRole()
	if _, _, err := cli.ElectMaster(ctx, &protocol.ElectMasterRequestHeader{BrokerName: "tm", BrokerID: slaveID,
		DesignateElect: true, InvokeTime: time.Now().UnixMilli()}); err != nil {
		t.Fatalf("elect %d: %v", slaveID, err)
	}
	waitUntil(t, 20*time.Second, "the slave promoted", func() bool { return role(slave) == "master" })
	// A sentinel timer on queue 1, due after every old one: once it is
	// delivered, any redelivery of the old timers (due long ago) would
	// have come before it.
	waitUntil(t, 20*time.Second, "the promoted slave takes writes", func() bool {
		h := protocol.SendMessageRequestHeader{ProducerGroup: "tm", Topic: "tm-probe", DefaultTopic: "TBW102", DefaultTopicQueueNums: 1,
			BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1}
		resp, err := invoke(rc, slave.Addr(), protocol.NewRequest(protocol.SendMessage, h.Encode(), []byte("p")))
		return err == nil && resp.Code == protocol.Success
	})
	sendTimer(slave.Addr(), 1, "sentinel", time.Now().Add(300*time.Millisecond))
	waitUntil(t, 30*time.Second, "the sentinel delivered by the promoted slave", func() bool {
		return maxQueueOffset(t, rc, slave.Addr(), "tm-timers", 1) == 1
	})
	if n := maxQueueOffset(t, rc, slave.Addr(), "tm-timers", 0); n != 10 {
		t.Fatalf("queue 0 of the promoted slave holds %d messages, want the 10 delivered once (%d delivered again)", n, n-10)
	}
}
