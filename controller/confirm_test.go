package controller_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/broker/clustertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/controllerclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestControllerModeSlaveServesConfirmedOnly: a slave holds records past
// its master's confirm offset and serves none of them until the confirm
// offset covers them. A SYNC_MASTER with inSyncReplicas 2 and two slaves
// B and C, all three in the SyncStateSet; C stops, so the master's
// confirm offset (what every member has) stays at C's last ack while B
// acknowledges five more sends (SEND_OK) and holds their bytes: a pull
// from B, and from the master, returns none of them. C comes back and
// catches up: the confirm offset rises, the master sends it to B, and B
// serves all ten.
func TestControllerModeSlaveServesConfirmedOnly(t *testing.T) {
	ctl := startController(t)
	ns := nameservertest.Start(t)
	const topic = "cf-topic"
	opts := func(root string) func(*broker.Options) {
		return func(o *broker.Options) {
			syncMaster(ctl, "cf", root, 60000, 1000)(o) // no shrink: C stays in the set while down
			o.AllAckInSyncStateSet, o.InSyncReplicas = false, 2
		}
	}
	rc := remoting.NewClient(remoting.ClientOptions{})
	defer rc.Close()
	cli := controllerclient.New(rc, []string{ctl})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	setIs := func(want ...int64) func() bool {
		return func() bool {
			_, set := syncStateSet(ctx, cli, "cf")
			return slices.Equal(set, want)
		}
	}
	// pulled is how many messages addr serves, -1 when it cannot serve
	// the topic yet (a slave learns it from the metadata sync).
	pulled := func(addr string) int {
		msgs, err := clustertest.PullAll(rc, addr, "cf-check", topic, 1)
		if err != nil {
			return -1
		}
		return len(msgs)
	}
	rootC := t.TempDir()
	master := brokertest.Start(t, ns, opts(t.TempDir()))
	sendAll := func(n int) {
		t.Helper()
		for i := range n {
			if resp, err := sendRaw(rc, master.Addr(), topic); err != nil || resp.Code != protocol.Success {
				t.Fatalf("send %d: %v %v", i, err, resp)
			}
		}
	}
	b := brokertest.Start(t, ns, opts(t.TempDir()))
	c := brokertest.Start(t, ns, opts(rootC))
	waitUntil(t, 30*time.Second, "B and C in the SyncStateSet", setIs(1, 2, 3))
	sendAll(5)
	waitUntil(t, 20*time.Second, "B serves the first five", func() bool { return pulled(b.Addr()) == 5 })

	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	sendAll(5) // SEND_OK: B acknowledges, C lacks them
	end := haStatus(t, rc, master.Addr()).MaxPhyOffset
	waitUntil(t, 10*time.Second, "B holds every byte", func() bool { return haStatus(t, rc, b.Addr()).MaxPhyOffset == end })
	st := haStatus(t, rc, b.Addr())
	if st.Client == nil || st.Client.ConfirmOffset >= end || st.Client.ConfirmOffset == 0 {
		t.Fatalf("B's confirm offset from the master: %+v, want in (0, %d)", st.Client, end)
	}
	if n := pulled(b.Addr()); n != 5 {
		t.Fatalf("B serves %d messages with C down, want the 5 every member has", n)
	}
	if n := pulled(master.Addr()); n != 5 {
		t.Fatalf("the master serves %d messages with C down, want 5", n)
	}
	if !setIs(1, 2, 3)() {
		t.Fatal("the SyncStateSet changed while checking: the pulls above prove nothing")
	}

	brokertest.Start(t, ns, opts(rootC))
	waitUntil(t, 30*time.Second, "B serves all ten once C caught up", func() bool { return pulled(b.Addr()) == 10 })
	if n := pulled(master.Addr()); n != 10 {
		t.Fatalf("the master serves %d, want 10", n)
	}
}
