package broker

import (
	"context"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/internal/transaction"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestStartRegistersWhileRestoring restarts a master whose store holds a
// pending timer and a committed transaction, with the timer service's
// restore and the transaction service's recovery stalled (issue 18: the
// broker must take writes as soon as its commit log and consume queues are
// recovered). Start must return, the NameServer must route to the broker
// and a send must be stored while both are stalled; an END_TRANSACTION
// for the transaction committed before the restart waits for the recovery
// and is then answered as a duplicate (no second committed copy), and the
// timer is pending again once the restore runs.
func TestStartRegistersWhileRestoring(t *testing.T) {
	ns := nameservertest.Start(t)
	o := startupOptions(ns, t.TempDir())
	br := startBroker(t, o)
	if _, _, err := br.topics.CreateSystem("bench", 8, protocol.PermRead|protocol.PermWrite); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	timerMsg := &protocol.MessageExt{QueueID: 1, BornTimestamp: time.Now().UnixMilli(), BornHost: br.storeHost, StoreHost: br.storeHost}
	timerMsg.Topic, timerMsg.Body = "bench", []byte("timer")
	timerMsg.Properties = map[string]string{protocol.PropUniqKey: "timer-1", protocol.PropTimerDelaySec: "3600"}
	if err := br.divertDelayed(timerMsg); err != nil {
		t.Fatal(err)
	}
	if _, err := br.store.PutMessage(ctx, timerMsg); err != nil {
		t.Fatal(err)
	}
	half := &protocol.MessageExt{QueueID: 5, BornTimestamp: time.Now().UnixMilli(), BornHost: br.storeHost, StoreHost: br.storeHost}
	half.Topic, half.Body = "bench", []byte("tx")
	half.Properties = map[string]string{protocol.PropUniqKey: "tx-1", protocol.PropProducerGroup: "pg"}
	transaction.Prepare(half)
	if _, err := br.store.PutMessage(ctx, half); err != nil {
		t.Fatal(err)
	}
	if _, err := br.tx().End(ctx, transaction.EndRequest{ProducerGroup: "pg", TranStateTableOffset: half.QueueOffset,
		CommitLogOffset: half.CommitLogOffset, Decision: transaction.Commit}); err != nil {
		t.Fatal(err)
	}
	stopBroker(t, br)

	br, err := New(o, benchLogger())
	if err != nil {
		t.Fatal(err)
	}
	reached, release := make(chan string, 4), make(chan struct{})
	br.hooks.beforeRestore = func() {
		reached <- "restore"
		<-release
	}
	released := false
	defer func() {
		if !released {
			close(release)
		}
		stopBroker(t, br)
	}()
	started := make(chan error, 1)
	go func() { started <- br.Start(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute): // a deadlock guard, not a timing assertion
		t.Fatal("Start did not return while the timer restore and the transaction recovery were stalled")
	}
	// Both services are stalled now, before restoring anything.
	<-reached
	<-reached

	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rh := protocol.GetRouteInfoRequestHeader{Topic: "bench"}
	resp, err := cl.Invoke(rctx, ns, protocol.NewRequest(protocol.GetRouteInfoByTopic, rh.Encode(), nil))
	if err != nil || resp.Code != protocol.Success {
		t.Fatalf("route of bench while restoring: %v %+v", err, resp)
	}
	route, err := protocol.DecodeTopicRouteData(resp.Body)
	if err != nil || len(route.BrokerDatas) != 1 || route.BrokerDatas[0].BrokerAddrs[0] != br.Addr() {
		t.Fatalf("route of bench while restoring: %v %+v, want master %s", err, route, br.Addr())
	}
	if code := sendPlain(t, br); code != protocol.Success {
		t.Fatalf("send while restoring: code %d, want SUCCESS", code)
	}

	copies := br.store.MaxOffset("bench", 5)
	eh := protocol.EndTransactionRequestHeader{ProducerGroup: "pg", TranStateTableOffset: half.QueueOffset, CommitLogOffset: half.CommitLogOffset,
		CommitOrRollback: protocol.SysFlagTxCommit, MsgID: "tx-1"}
	ended := make(chan *protocol.Command, 1)
	go func() {
		resp, err := cl.Invoke(rctx, br.Addr(), protocol.NewRequest(protocol.EndTransaction, eh.Encode(), nil))
		if err != nil {
			resp = protocol.NewResponse(protocol.NewRequest(protocol.EndTransaction, nil, nil), protocol.SystemError, err.Error())
		}
		ended <- resp
	}()
	close(release)
	released = true
	if resp := <-ended; resp.Code != protocol.Success || resp.Remark != "duplicate decision ignored" {
		t.Fatalf("END_TRANSACTION of a transaction committed before the restart: code %d %q, want a duplicate", resp.Code, resp.Remark)
	}
	if err := br.store.WaitDispatched(ctx, br.store.MaxPhyOffset()); err != nil {
		t.Fatal(err)
	}
	if n := br.store.MaxOffset("bench", 5); n != copies {
		t.Fatalf("committed copies of the transaction: %d, want still %d", n, copies)
	}
	for !br.restoredAll(restoredCounts{timers: 1}) {
		time.Sleep(10 * time.Millisecond)
	}
}
