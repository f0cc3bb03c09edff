package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/controllerclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func haStatus(t *testing.T, cl *remoting.Client, addr string) *protocol.HAStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, protocol.NewRequest(protocol.TideHAStatus, nil, nil))
	if err != nil || resp.Err() != nil {
		t.Fatalf("HA status of %s: %v %v", addr, err, resp)
	}
	st, err := protocol.DecodeHAStatus(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func syncStateSet(ctx context.Context, cli *controllerclient.Client, group string) (protocol.MasterInfo, []int64) {
	h, set, err := cli.ReplicaInfo(ctx, group)
	if err != nil || set == nil {
		return protocol.MasterInfo{MasterBrokerID: protocol.NoBrokerID}, nil
	}
	return h.MasterInfo, slices.Sorted(slices.Values(set.SyncStateSet))
}

// TestControllerModeFailover: a SYNC_MASTER with allAckInSyncStateSet and
// its slave in controller mode. The master keeps the SyncStateSet over HA
// (the slave joins once caught up); when the master stops, the controller
// elects the slave, which switches to master while running (epoch file,
// NameServer id 0, writes) and has every acknowledged message; the old
// master returns as its slave and catches up. Then a divergent tail: the
// slave stops, the master stores writes it cannot acknowledge
// (FLUSH_SLAVE_TIMEOUT) and stops before the SyncStateSet shrinks; the
// slave comes back and is elected; the old master returns, truncates the
// unacknowledged tail to the new master's epoch start and replicates.
func TestControllerModeFailover(t *testing.T) {
	ctl := startController(t)
	ns := nameservertest.Start(t)
	rootA, rootB := t.TempDir(), t.TempDir()
	opts := func(root string) func(*broker.Options) {
		return syncMaster(ctl, "fo", root, 30000, 3000) // no shrink wanted here
	}
	rc := remoting.NewClient(remoting.ClientOptions{})
	defer rc.Close()
	cli := controllerclient.New(rc, []string{ctl})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stop := func(b *broker.Broker) {
		t.Helper()
		if err := b.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sendAll := func(addr string, n int) {
		t.Helper()
		for i := range n {
			resp, err := sendRaw(rc, addr, "fo-topic")
			if err != nil || resp.Code != protocol.Success {
				t.Fatalf("send %d to %s: %v %v", i, addr, err, resp)
			}
		}
	}

	a := brokertest.Start(t, ns, opts(rootA))
	b := brokertest.Start(t, ns, opts(rootB))
	waitUntil(t, 20*time.Second, "B in the SyncStateSet", func() bool {
		_, set := syncStateSet(ctx, cli, "fo")
		return slices.Equal(set, []int64{1, 2})
	})
	sendAll(a.Addr(), 50)
	// state that must follow the master: a committed consumer offset, a
	// subscription group, a transaction in flight (a half message)
	uh := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "fo-cg", Topic: "fo-topic", QueueID: 0, CommitOffset: 7}
	if _, err := invoke(rc, a.Addr(), protocol.NewRequest(protocol.UpdateConsumerOffset, uh.Encode(), nil)); err != nil {
		t.Fatal(err)
	}
	sg, _ := json.Marshal(protocol.DefaultSubscriptionGroupConfig("fo-sg"))
	if _, err := invoke(rc, a.Addr(), protocol.NewRequest(protocol.UpdateAndCreateSubscription, nil, sg)); err != nil {
		t.Fatal(err)
	}
	hh := protocol.SendMessageRequestHeader{ProducerGroup: "fo-pg", Topic: "fo-topic", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		BornTimestamp: time.Now().UnixMilli(), SysFlag: protocol.SysFlagTxPrepared, MaxReconsumeTimes: -1,
		Properties: protocol.EncodeProperties(map[string]string{protocol.PropTransactionPrepared: "true", protocol.PropProducerGroup: "fo-pg"})}
	if resp, err := invoke(rc, a.Addr(), protocol.NewRequest(protocol.SendMessage, hh.Encode(), []byte("half"))); err != nil || resp.Code != protocol.Success {
		t.Fatalf("half message: %v %v", err, resp)
	}
	waitUntil(t, 10*time.Second, "B copied the offset and the group (metadata sync)", func() bool {
		return queryOffset(rc, b.Addr(), "fo-cg", "fo-topic", 0) == 7 && hasGroup(rc, b.Addr(), "fo-sg")
	})
	acked := haStatus(t, rc, a.Addr()).MaxPhyOffset

	// 1. the master stops: B is promoted while running
	killed := time.Now()
	stop(a)
	waitUntil(t, 20*time.Second, "B promoted", func() bool {
		running, _, _, _ := b.ControllerRole()
		return running == "master"
	})
	t.Logf("new master %v after the old one stopped", time.Since(killed).Round(time.Millisecond))
	if st := haStatus(t, rc, b.Addr()); st.MaxPhyOffset < acked || st.BrokerID != 0 || st.Role != "SYNC_MASTER" {
		t.Fatalf("B after promotion: %+v, acknowledged up to %d", st, acked)
	}
	if c := epochCache(t, rc, b.Addr()); len(c.EpochList) != 2 || c.EpochList[1].Epoch != 2 || c.EpochList[1].StartOffset != acked {
		t.Fatalf("B's epochs: %+v (acknowledged up to %d)", c, acked)
	}
	if got := queryOffset(rc, b.Addr(), "fo-cg", "fo-topic", 0); got != 7 || !hasGroup(rc, b.Addr(), "fo-sg") {
		t.Fatalf("new master: consumer offset %d (want 7), group fo-sg present %v", got, hasGroup(rc, b.Addr(), "fo-sg"))
	}
	if half := b.HalfMessages(); len(half) != 1 || half[0].ProducerGroup != "fo-pg" {
		t.Fatalf("new master's half messages: %+v", half)
	}
	sendAll(b.Addr(), 20) // the SyncStateSet is B alone now
	waitUntil(t, 10*time.Second, "the NameServer routes to B as master", func() bool {
		route, err := routeOf(rc, ns, "fo-topic")
		return err == nil && len(route.BrokerDatas) == 1 && route.BrokerDatas[0].BrokerAddrs[protocol.MasterID] == b.Addr()
	})

	// 2. A returns as B's slave, catches up and rejoins the set
	a = brokertest.Start(t, ns, opts(rootA))
	if running, _, _, _ := a.ControllerRole(); running != "slave" {
		t.Fatalf("A restarted as %s", running)
	}
	waitUntil(t, 20*time.Second, "A back in the SyncStateSet", func() bool {
		_, set := syncStateSet(ctx, cli, "fo")
		return slices.Equal(set, []int64{1, 2})
	})
	sendAll(b.Addr(), 20)

	// 3. a divergent tail on B: its slave A stops, B stores what it cannot
	// acknowledge, and stops too before the set shrinks. What B stores
	// past the confirm offset is never visible to consumers (RocketMQ 5
	// dispatches up to the confirm offset): a failover truncates it.
	visible := func() (n int64) {
		for q := int32(0); q < 4; q++ {
			n += maxQueueOffset(t, rc, b.Addr(), "fo-topic", q)
		}
		return n
	}
	waitUntil(t, 10*time.Second, "B's 90 acknowledged messages visible", func() bool { return visible() == 90 })
	stop(a)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := sendRaw(rc, b.Addr(), "fo-topic")
			if err == nil && resp.Code == protocol.Success {
				t.Errorf("B acknowledged a write its in-sync slave A does not have")
			}
		}()
	}
	wg.Wait()
	if n := visible(); n != 90 {
		t.Fatalf("B made %d unacknowledged messages visible to consumers (readUnCommitted is off)", n-90)
	}
	if _, set := syncStateSet(ctx, cli, "fo"); !slices.Equal(set, []int64{1, 2}) {
		t.Fatalf("the SyncStateSet shrank too early for this test: %v", set)
	}
	bEnd := haStatus(t, rc, b.Addr()).MaxPhyOffset
	stop(b)
	a = brokertest.Start(t, ns, opts(rootA)) // elected: in the set, and alive
	waitUntil(t, 20*time.Second, "A master again", func() bool {
		running, _, _, _ := a.ControllerRole()
		return running == "master"
	})
	aStart := haStatus(t, rc, a.Addr()).MaxPhyOffset
	if aStart >= bEnd {
		t.Fatalf("A has %d, B had %d: no divergent tail to test", aStart, bEnd)
	}
	sendAll(a.Addr(), 10)
	b = brokertest.Start(t, ns, opts(rootB))
	waitUntil(t, 20*time.Second, "B truncated and caught up", func() bool {
		return haStatus(t, rc, b.Addr()).MaxPhyOffset == haStatus(t, rc, a.Addr()).MaxPhyOffset
	})
	ca, cb := epochCache(t, rc, a.Addr()), epochCache(t, rc, b.Addr())
	if fmt.Sprint(ca.EpochList) != fmt.Sprint(cb.EpochList) {
		t.Fatalf("epochs differ: A %+v, B %+v", ca.EpochList, cb.EpochList)
	}
	for q := int32(0); q < 4; q++ {
		if ma, mb := maxQueueOffset(t, rc, a.Addr(), "fo-topic", q), maxQueueOffset(t, rc, b.Addr(), "fo-topic", q); ma != mb {
			t.Fatalf("queue %d: A has %d messages, B %d", q, ma, mb)
		}
	}
	t.Logf("B truncated %d unacknowledged bytes", bEnd-aStart)
}

func routeOf(cl *remoting.Client, ns, topic string) (*protocol.TopicRouteData, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	h := protocol.GetRouteInfoRequestHeader{Topic: topic}
	resp, err := cl.Invoke(ctx, ns, protocol.NewRequest(protocol.GetRouteInfoByTopic, h.Encode(), nil))
	if err != nil {
		return nil, err
	}
	if err := resp.Err(); err != nil {
		return nil, err
	}
	return protocol.DecodeTopicRouteData(resp.Body)
}

func maxQueueOffset(t *testing.T, cl *remoting.Client, addr, topic string, q int32) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	h := protocol.GetMaxOffsetRequestHeader{Topic: topic, QueueID: q}
	resp, err := cl.Invoke(ctx, addr, protocol.NewRequest(protocol.GetMaxOffset, h.Encode(), nil))
	if err != nil || resp.Err() != nil {
		t.Fatalf("max offset: %v %v", err, resp)
	}
	var rh protocol.GetMaxOffsetResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		t.Fatal(err)
	}
	return rh.Offset
}

func invoke(cl *remoting.Client, addr string, req *protocol.Command) (*protocol.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	return resp, resp.Err()
}

// queryOffset returns a group's committed offset on addr, -1 if none.
func queryOffset(cl *remoting.Client, addr, group, topic string, q int32) int64 {
	h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: q}
	resp, err := invoke(cl, addr, protocol.NewRequest(protocol.QueryConsumerOffset, h.Encode(), nil))
	if err != nil {
		return -1
	}
	var rh protocol.QueryConsumerOffsetResponseHeader
	if rh.Decode(resp.ExtFields) != nil {
		return -1
	}
	return rh.Offset
}

func hasGroup(cl *remoting.Client, addr, group string) bool {
	resp, err := invoke(cl, addr, protocol.NewRequest(protocol.GetAllSubscriptionGroupConfig, nil, nil))
	return err == nil && strings.Contains(string(resp.Body), `"`+group+`"`)
}

// TestControllerModeSyncStateSet: the master shrinks its SyncStateSet
// when its slave stops (after haMaxTimeSlaveNotCatchup) and acknowledges
// SYNC writes alone only once the controller accepted that; the slave
// back and caught up joins the set again.
func TestControllerModeSyncStateSet(t *testing.T) {
	ctl := startController(t)
	ns := nameservertest.Start(t)
	rootB := t.TempDir()
	opts := func(root string) func(*broker.Options) {
		return func(o *broker.Options) {
			o.EnableControllerMode, o.ControllerAddr = true, ctl
			o.BrokerName, o.BrokerRole = "sss", "SYNC_MASTER"
			o.ControllerHeartBeatTimeoutMills, o.BrokerHeartbeatInterval = 5000, 100
			o.AllAckInSyncStateSet, o.HaMaxTimeSlaveNotCatchup, o.SlaveTimeout = true, 1500, 3000
			if root != "" {
				o.Store.StorePathRootDir = root
			}
		}
	}
	rc := remoting.NewClient(remoting.ClientOptions{})
	defer rc.Close()
	cli := controllerclient.New(rc, []string{ctl})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	setIs := func(want ...int64) func() bool {
		return func() bool {
			_, set := syncStateSet(ctx, cli, "sss")
			return slices.Equal(set, want)
		}
	}
	a := brokertest.Start(t, ns, opts(""))
	b := brokertest.Start(t, ns, opts(rootB))
	waitUntil(t, 20*time.Second, "B in the SyncStateSet", setIs(1, 2))
	if resp, err := sendRaw(rc, a.Addr(), "sss-topic"); err != nil || resp.Code != protocol.Success {
		t.Fatalf("send with B in sync: %v %v", err, resp)
	}
	if err := b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if resp, err := sendRaw(rc, a.Addr(), "sss-topic"); err == nil && resp.Code == protocol.Success && !setIs(1)() {
		t.Fatal("SEND_OK without B before the SyncStateSet shrank")
	}
	waitUntil(t, 20*time.Second, "the SyncStateSet to shrink to A", setIs(1))
	if resp, err := sendRaw(rc, a.Addr(), "sss-topic"); err != nil || resp.Code != protocol.Success {
		t.Fatalf("send after the shrink: %v %v", err, resp)
	}
	brokertest.Start(t, ns, opts(rootB))
	waitUntil(t, 20*time.Second, "B back in the SyncStateSet", setIs(1, 2))
	if resp, err := sendRaw(rc, a.Addr(), "sss-topic"); err != nil || resp.Code != protocol.Success {
		t.Fatalf("send with B back: %v %v", err, resp)
	}
}

// TestControllerModeRepromotion: a master demoted while running (an
// operator's designated election) and promoted again in the same process
// runs its delay-level service again: a delayed message sent to it after
// the second promotion is delivered (finding 3 of docs/reliability.md: it
// was not, until the process restarted).
func TestControllerModeRepromotion(t *testing.T) {
	ctl := startController(t)
	ns := nameservertest.Start(t)
	opts := func(root string) func(*broker.Options) { return syncMaster(ctl, "rp", root, 6000, 500) }
	rc := remoting.NewClient(remoting.ClientOptions{})
	defer rc.Close()
	cli := controllerclient.New(rc, []string{ctl})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := brokertest.Start(t, ns, opts(t.TempDir()))
	b := brokertest.Start(t, ns, opts(t.TempDir()))
	role := func(br *broker.Broker) string { r, _, _, _ := br.ControllerRole(); return r }
	designate := func(br *broker.Broker, id int64) {
		t.Helper()
		waitUntil(t, 20*time.Second, "both in the SyncStateSet", func() bool {
			_, set := syncStateSet(ctx, cli, "rp")
			return slices.Equal(set, []int64{1, 2})
		})
		if _, _, err := cli.ElectMaster(ctx, &protocol.ElectMasterRequestHeader{BrokerName: "rp", BrokerID: id,
			DesignateElect: true, InvokeTime: time.Now().UnixMilli()}); err != nil {
			t.Fatalf("elect %d: %v", id, err)
		}
		waitUntil(t, 20*time.Second, fmt.Sprintf("broker %d master", id), func() bool { return role(br) == "master" })
	}
	_, aID, _, _ := a.ControllerRole()
	_, bID, _, _ := b.ControllerRole()
	designate(b, bID) // A is demoted while running
	// B may report its promotion before A has applied its demotion (the
	// controller tells each broker on its own connection).
	waitUntil(t, 20*time.Second, "A demoted to slave after B's election", func() bool { return role(a) == "slave" })
	designate(a, aID) // and promoted again in the same process

	h := protocol.SendMessageRequestHeader{ProducerGroup: "rp", Topic: "rp-delayed", DefaultTopic: "TBW102", DefaultTopicQueueNums: 1,
		BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1,
		Properties: protocol.EncodeProperties(map[string]string{protocol.PropDelayLevel: "1"})}
	waitUntil(t, 20*time.Second, "A takes a delayed message (SEND_OK)", func() bool {
		resp, err := invoke(rc, a.Addr(), protocol.NewRequest(protocol.SendMessage, h.Encode(), []byte("later")))
		return err == nil && resp.Code == protocol.Success
	})
	waitUntil(t, 20*time.Second, "the delayed message delivered by the re-promoted A", func() bool {
		return maxQueueOffset(t, rc, a.Addr(), "rp-delayed", 0) == 1
	})
}
