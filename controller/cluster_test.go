package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/controllerclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/testenv/freeport"
)

// Timings of the in-process clusters: real hashicorp/raft over real TCP
// loopback. The Raft timeouts are the production defaults (1 s, a leader
// lease of 0.5 s): with 150 ms (a 75 ms lease) a loaded test machine
// delayed heartbeats past the lease, leadership moved in the middle of
// the tests, and an apply the old leader answered "leadership lost while
// committing log" was retried after it had committed (TestClusterQuorumLoss
// fenced by its own change; such a retry is now answered with the set it
// made, alterApplied), or a new leader's liveness grace elected the
// dead master again (TestClusterNoUncleanElection): 2 failed runs in 6.
const (
	testRaftTimeout   = DefaultRaftHeartbeat
	testBrokerTimeout = 1500 * time.Millisecond
	testScan          = 50 * time.Millisecond
	testHeartbeat     = 100 * time.Millisecond
)

// testCluster is n controller nodes in this process.
type testCluster struct {
	t     *testing.T
	peers []Peer
	dirs  []string
	nodes []*Controller
	mod   func(*Options)
}

func newTestCluster(t *testing.T, n int, mod func(*Options)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, mod: mod, nodes: make([]*Controller, n)}
	lns, rlns := make([]net.Listener, n), make([]net.Listener, n)
	for i := range n {
		lns[i], rlns[i] = listenFree(t), listenFree(t)
		tc.peers = append(tc.peers, Peer{ID: fmt.Sprintf("n%d", i), RaftAddr: rlns[i].Addr().String(), Addr: lns[i].Addr().String()})
		tc.dirs = append(tc.dirs, filepath.Join(t.TempDir(), fmt.Sprintf("n%d", i)))
	}
	for i := range n {
		tc.startWith(i, lns[i], rlns[i])
	}
	t.Cleanup(func() {
		for i := range tc.nodes {
			tc.stop(i)
		}
	})
	return tc
}

// listenFree listens on a loopback port outside the kernel's ephemeral
// range (freeport): restart binds it again, and meanwhile no listen on
// port 0 or outgoing connection (the other nodes' dials among them) can
// take it.
func listenFree(t *testing.T) net.Listener {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return listen(t, addr)
}

func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func (tc *testCluster) startWith(i int, ln, rln net.Listener) {
	tc.t.Helper()
	o := DefaultOptions()
	o.NodeID, o.Peers, o.DataDir = tc.peers[i].ID, tc.peers, tc.dirs[i]
	o.Listener, o.RaftListener = ln, rln
	o.RaftHeartbeatTimeout, o.RaftElectionTimeout = testRaftTimeout, testRaftTimeout
	o.HeartbeatTimeout, o.ScanInterval = testBrokerTimeout, testScan
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if tc.mod != nil {
		tc.mod(&o)
	}
	c, err := New(o)
	if err != nil {
		tc.t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		tc.t.Fatal(err)
	}
	tc.nodes[i] = c
}

// restart starts a stopped node again on its old addresses and data.
func (tc *testCluster) restart(i int) {
	tc.t.Helper()
	tc.startWith(i, listen(tc.t, tc.peers[i].Addr), listen(tc.t, tc.peers[i].RaftAddr))
}

func (tc *testCluster) stop(i int) {
	if c := tc.nodes[i]; c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Shutdown(ctx); err != nil {
			tc.t.Logf("shutdown n%d: %v", i, err)
		}
		tc.nodes[i] = nil
	}
}

func (tc *testCluster) addrs() []string {
	var out []string
	for _, p := range tc.peers {
		out = append(out, p.Addr)
	}
	return out
}

// waitLeader waits until exactly one running node is a ready leader.
func (tc *testCluster) waitLeader() int {
	tc.t.Helper()
	leader := -1
	waitFor(tc.t, 10*time.Second, "one controller leader", func() bool {
		leader = -1
		for i, c := range tc.nodes {
			if c != nil && c.IsLeader() {
				if leader >= 0 {
					return false
				}
				leader = i
			}
		}
		return leader >= 0
	})
	return leader
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeBroker is a broker in controller mode as far as the controller can
// tell: it has an id, heartbeats every controller node while it is up, and
// records the NOTIFY_BROKER_ROLE_CHANGED it receives.
type fakeBroker struct {
	t    *testing.T
	id   int64
	addr string
	cli  *controllerclient.Client
	srv  *remoting.Server

	mu       sync.Mutex
	notified []protocol.NotifyBrokerRoleChangedRequestHeader
	maxOff   int64
	stopHB   chan struct{}
	hbDone   chan struct{}
}

func newFakeBroker(t *testing.T, tc *testCluster, id int64) *fakeBroker {
	t.Helper()
	ln := listen(t, "127.0.0.1:0")
	b := &fakeBroker{t: t, id: id, addr: ln.Addr().String(), srv: remoting.NewServer(remoting.ServerOptions{})}
	b.srv.HandleFunc(protocol.NotifyBrokerRoleChanged, func(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
		var h protocol.NotifyBrokerRoleChangedRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			return protocol.NewResponse(req, protocol.SystemError, err.Error())
		}
		b.mu.Lock()
		b.notified = append(b.notified, h)
		b.mu.Unlock()
		return protocol.NewResponse(req, protocol.Success, "")
	})
	go b.srv.Serve(ln)
	rc := remoting.NewClient(remoting.ClientOptions{})
	b.cli = newFakeBrokerClient(rc, tc)
	t.Cleanup(func() {
		b.stopHeartbeats()
		rc.Close()
		b.srv.Shutdown(context.Background())
	})
	ctx := testCtx(t)
	if err := b.cli.ApplyBrokerID(ctx, "c", "b", id, b.addr+";1"); err != nil {
		t.Fatalf("apply id %d: %v", id, err)
	}
	if _, _, err := b.cli.RegisterBroker(ctx, &protocol.RegisterBrokerToControllerRequestHeader{ClusterName: "c",
		BrokerName: "b", BrokerID: id, BrokerAddress: b.addr}); err != nil {
		t.Fatalf("register %d: %v", id, err)
	}
	b.startHeartbeats()
	return b
}

func newFakeBrokerClient(rc *remoting.Client, tc *testCluster) *controllerclient.Client {
	return controllerclient.New(rc, tc.addrs())
}

func (b *fakeBroker) startHeartbeats() {
	b.stopHB, b.hbDone = make(chan struct{}), make(chan struct{})
	stop, done := b.stopHB, b.hbDone
	go func() {
		defer close(done)
		for {
			b.mu.Lock()
			off := b.maxOff
			b.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			b.cli.Heartbeat(ctx, &protocol.BrokerHeartbeatRequestHeader{ClusterName: "c", BrokerAddr: b.addr,
				BrokerName: "b", BrokerID: b.id, MaxOffset: off})
			cancel()
			select {
			case <-stop:
				return
			case <-time.After(testHeartbeat):
			}
		}
	}()
}

// stopHeartbeats makes the broker look dead to the controllers.
func (b *fakeBroker) stopHeartbeats() {
	if b.stopHB != nil {
		close(b.stopHB)
		<-b.hbDone
		b.stopHB = nil
	}
}

func (b *fakeBroker) lastNotified() (protocol.NotifyBrokerRoleChangedRequestHeader, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.notified) == 0 {
		return protocol.NotifyBrokerRoleChangedRequestHeader{}, false
	}
	return b.notified[len(b.notified)-1], true
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitMaster waits until the leader reports a master satisfying ok.
func waitMaster(t *testing.T, cli *controllerclient.Client, what string, ok func(*protocol.GetReplicaInfoResponseHeader, *protocol.SyncStateSet) bool) (*protocol.GetReplicaInfoResponseHeader, *protocol.SyncStateSet) {
	t.Helper()
	var h *protocol.GetReplicaInfoResponseHeader
	var s *protocol.SyncStateSet
	waitFor(t, 15*time.Second, what, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		h, s, err = cli.ReplicaInfo(ctx, "b")
		return err == nil && ok(h, s)
	})
	return h, s
}

func TestClusterFailover(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	leader := tc.waitLeader()
	ctx := testCtx(t)

	// a follower names the leader
	follower := (leader + 1) % 3
	rc := remoting.NewClient(remoting.ClientOptions{})
	defer rc.Close()
	resp, err := rc.Invoke(ctx, tc.peers[follower].Addr, protocol.NewRequest(protocol.ControllerGetReplicaInfo,
		(&protocol.GetReplicaInfoRequestHeader{BrokerName: "b"}).Encode(), nil))
	if err != nil || resp.Code != protocol.ControllerNotLeader || resp.ExtFields["controllerLeaderAddress"] != tc.peers[leader].Addr {
		t.Fatalf("follower answer: %v %+v", err, resp)
	}
	md, err := controllerclient.New(rc, nil).Metadata(ctx, tc.peers[follower].Addr)
	if err != nil || md.IsLeader || md.ControllerLeaderID != tc.peers[leader].ID || md.Group != DefaultGroup {
		t.Fatalf("follower metadata: %+v %v", md, err)
	}

	b1, b2, b3 := newFakeBroker(t, tc, 1), newFakeBroker(t, tc, 2), newFakeBroker(t, tc, 3)
	if next, err := b1.cli.NextBrokerID(ctx, "c", "b"); err != nil || next != 4 {
		t.Fatalf("next id = %d, %v", next, err)
	}
	// a second broker cannot take an id that is held
	err = b2.cli.ApplyBrokerID(ctx, "c", "b", 1, "intruder;9")
	if !errors.Is(err, &protocol.Error{Code: protocol.ControllerBrokerIDInvalid}) {
		t.Fatalf("apply held id: %v", err)
	}

	// first election: the asking broker wins
	eh, body, err := b1.cli.ElectMaster(ctx, &protocol.ElectMasterRequestHeader{ClusterName: "c", BrokerName: "b", BrokerID: 1})
	if err != nil || eh.MasterBrokerID != 1 || eh.MasterEpoch != 1 || eh.MasterAddress != b1.addr ||
		!reflect.DeepEqual(body.SyncStateSet, []int64{1}) || len(body.BrokerMemberGroup.BrokerAddrs) != 3 {
		t.Fatalf("first election: %+v %+v %v", eh, body, err)
	}
	// electing again while the master lives changes nothing
	eh, _, err = b2.cli.ElectMaster(ctx, &protocol.ElectMasterRequestHeader{ClusterName: "c", BrokerName: "b", BrokerID: 2})
	if !errors.Is(err, &protocol.Error{Code: protocol.ControllerMasterStillExist}) || eh.MasterBrokerID != 1 {
		t.Fatalf("second election: %+v %v", eh, err)
	}
	// the master grows its SyncStateSet; stale epochs are fenced
	_, err = b1.cli.AlterSyncStateSet(ctx, "b", 1, 0, &protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1})
	if !errors.Is(err, &protocol.Error{Code: protocol.ControllerFencedMasterEpoch}) {
		t.Fatalf("stale master epoch: %v", err)
	}
	_, err = b1.cli.AlterSyncStateSet(ctx, "b", 1, 1, &protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 0})
	if !errors.Is(err, &protocol.Error{Code: protocol.ControllerFencedSyncStateSetEpoch}) {
		t.Fatalf("stale sync state set epoch: %v", err)
	}
	set, err := b1.cli.AlterSyncStateSet(ctx, "b", 1, 1, &protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1})
	if err != nil || !reflect.DeepEqual(set, &protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 2}) {
		t.Fatalf("alter: %+v %v", set, err)
	}
	// the same request again (the client's retry after "leadership lost"
	// for a change that committed) is answered with the set it made
	set, err = b1.cli.AlterSyncStateSet(ctx, "b", 1, 1, &protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1})
	if err != nil || !reflect.DeepEqual(set, &protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 2}) {
		t.Fatalf("alter retried: %+v %v", set, err)
	}
	b3.mu.Lock()
	b3.maxOff = 1 << 40 // the out-of-sync replica claims more data: it must still not win
	b3.mu.Unlock()

	// the master stops heartbeating: 2, the only other in-sync replica, takes over
	b1.stopHeartbeats()
	stopped := time.Now()
	h, s := waitMaster(t, b2.cli, "broker 2 elected", func(h *protocol.GetReplicaInfoResponseHeader, _ *protocol.SyncStateSet) bool {
		return h.MasterBrokerID != 1
	})
	t.Logf("master failover: new master seen %v after the last heartbeat (broker timeout %v)", time.Since(stopped), testBrokerTimeout)
	if h.MasterBrokerID != 2 || h.MasterEpoch != 2 || h.MasterAddress != b2.addr ||
		!reflect.DeepEqual(s, &protocol.SyncStateSet{SyncStateSet: []int64{2}, SyncStateSetEpoch: 3}) {
		t.Fatalf("after failover: %+v %+v", h, s)
	}
	waitFor(t, 5*time.Second, "broker 2 notified", func() bool {
		n, ok := b2.lastNotified()
		return ok && n.MasterBrokerID == 2 && n.MasterEpoch == 2
	})
	// the old master, back with its stale view, is fenced
	_, err = b1.cli.AlterSyncStateSet(ctx, "b", 1, 1, &protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 2})
	if !errors.Is(err, &protocol.Error{Code: protocol.ControllerInvalidMaster}) {
		t.Fatalf("old master alter: %v", err)
	}
	if _, err := b2.cli.AlterSyncStateSet(ctx, "b", 2, 2, &protocol.SyncStateSet{SyncStateSet: []int64{2, 3}, SyncStateSetEpoch: 3}); err != nil {
		t.Fatalf("new master alter: %v", err)
	}
	// a dead replica cannot join the SyncStateSet
	_, err = b2.cli.AlterSyncStateSet(ctx, "b", 2, 2, &protocol.SyncStateSet{SyncStateSet: []int64{1, 2, 3}, SyncStateSetEpoch: 4})
	if !errors.Is(err, &protocol.Error{Code: protocol.ControllerBrokerNotAlive}) {
		t.Fatalf("dead replica joins: %v", err)
	}

	// the controller leader dies: another takes over with the same state
	tc.stop(leader)
	killed := time.Now()
	newLeader := tc.waitLeader()
	t.Logf("controller leader failover: new leader ready %v after the old one stopped (raft timeouts %v)", time.Since(killed), testRaftTimeout)
	if newLeader == leader {
		t.Fatal("stopped node still leader")
	}
	h, s = waitMaster(t, b2.cli, "state on the new leader", func(*protocol.GetReplicaInfoResponseHeader, *protocol.SyncStateSet) bool { return true })
	if h.MasterBrokerID != 2 || h.MasterEpoch != 2 || !reflect.DeepEqual(s, &protocol.SyncStateSet{SyncStateSet: []int64{2, 3}, SyncStateSetEpoch: 4}) {
		t.Fatalf("after leader change: %+v %+v", h, s)
	}
	// and it still fails over: 3 is in sync now
	b2.stopHeartbeats()
	h, _ = waitMaster(t, b3.cli, "broker 3 elected", func(h *protocol.GetReplicaInfoResponseHeader, _ *protocol.SyncStateSet) bool {
		return h.MasterBrokerID != 2
	})
	if h.MasterBrokerID != 3 || h.MasterEpoch != 3 {
		t.Fatalf("second failover: %+v", h)
	}
	// Liveness is each node's own view: a node that became leader again
	// in the meantime (Raft leadership can move on a loaded machine) counts
	// every broker as heard at that moment for one broker timeout (grace),
	// so broker 1 may show alive until that has passed.
	var data *protocol.BrokerReplicasInfo
	waitFor(t, 10*time.Second, "sync state data: 3 master and in sync, 1 and 2 out of sync, 1 dead", func() bool {
		if data, err = b3.cli.SyncStateData(ctx, []string{"b", "unknown"}); err != nil {
			t.Fatal(err)
		}
		ri := data.ReplicasInfoTable["b"]
		return len(data.ReplicasInfoTable) == 1 && ri.MasterBrokerID == 3 && len(ri.InSyncReplicas) == 1 && ri.InSyncReplicas[0].Alive &&
			len(ri.NotInSyncReplicas) == 2 && !ri.NotInSyncReplicas[0].Alive
	})
	// the election history is replicated: the new leader has the three
	// elections, two of them decided by the old leader
	hist, err := b3.cli.ElectionHistory(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range hist {
		if e.Time.IsZero() || e.Group != "b" {
			t.Fatalf("election without time or group: %+v", e)
		}
		got = append(got, fmt.Sprintf("%d->%d@%d/%s/%v", e.OldMaster, e.NewMaster, e.Epoch, e.Reason, e.SyncStateSet))
	}
	want := []string{"-1->1@1/broker/[1]", "1->2@2/controller/[2]", "2->3@3/controller/[3]"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("election history %v, want %v", got, want)
	}
	if all, err := b3.cli.ElectionHistory(ctx, ""); err != nil || len(all) != 3 {
		t.Fatalf("history of every group: %d, %v", len(all), err)
	}
}

func TestClusterNoUncleanElection(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	tc.waitLeader()
	ctx := testCtx(t)
	b1, b2 := newFakeBroker(t, tc, 1), newFakeBroker(t, tc, 2)
	if _, _, err := b1.cli.ElectMaster(ctx, &protocol.ElectMasterRequestHeader{BrokerName: "b", BrokerID: 1}); err != nil {
		t.Fatal(err)
	}
	// 2 is alive but never joined the SyncStateSet {1}
	b1.stopHeartbeats()
	h, s := waitMaster(t, b2.cli, "the group to lose its master", func(h *protocol.GetReplicaInfoResponseHeader, _ *protocol.SyncStateSet) bool {
		return h.MasterBrokerID == protocol.NoBrokerID
	})
	if h.MasterEpoch != 2 || !reflect.DeepEqual(s.SyncStateSet, []int64{1}) {
		t.Fatalf("without master: %+v %+v", h, s)
	}
	_, _, err := b2.cli.ElectMaster(ctx, &protocol.ElectMasterRequestHeader{BrokerName: "b", BrokerID: 2})
	if !errors.Is(err, &protocol.Error{Code: protocol.ControllerElectMasterFailed}) {
		t.Fatalf("out-of-sync replica asks to be master: %v", err)
	}
	rh, _, err := b2.cli.RegisterBroker(ctx, &protocol.RegisterBrokerToControllerRequestHeader{ClusterName: "c", BrokerName: "b",
		BrokerID: 2, BrokerAddress: b2.addr})
	if err != nil || rh.MasterBrokerID != protocol.NoBrokerID {
		t.Fatalf("register without master: %+v %v", rh, err)
	}
	// the in-sync replica returns: the leader's scan makes it master again
	b1.startHeartbeats()
	h, _ = waitMaster(t, b2.cli, "broker 1 back as master", func(h *protocol.GetReplicaInfoResponseHeader, _ *protocol.SyncStateSet) bool {
		return h.MasterBrokerID != protocol.NoBrokerID
	})
	if h.MasterBrokerID != 1 || h.MasterEpoch != 3 {
		t.Fatalf("after return: %+v", h)
	}
}

func TestClusterUncleanElectionEnabled(t *testing.T) {
	tc := newTestCluster(t, 3, func(o *Options) { o.EnableElectUncleanMaster = true })
	tc.waitLeader()
	ctx := testCtx(t)
	b1, b2 := newFakeBroker(t, tc, 1), newFakeBroker(t, tc, 2)
	if _, _, err := b1.cli.ElectMaster(ctx, &protocol.ElectMasterRequestHeader{BrokerName: "b", BrokerID: 1}); err != nil {
		t.Fatal(err)
	}
	b1.stopHeartbeats()
	h, _ := waitMaster(t, b2.cli, "unclean election of 2", func(h *protocol.GetReplicaInfoResponseHeader, _ *protocol.SyncStateSet) bool {
		return h.MasterBrokerID != 1
	})
	if h.MasterBrokerID != 2 || h.MasterEpoch != 2 {
		t.Fatalf("unclean: %+v", h)
	}
}

func TestClusterQuorumLoss(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	leader := tc.waitLeader()
	ctx := testCtx(t)
	b1, b2 := newFakeBroker(t, tc, 1), newFakeBroker(t, tc, 2)
	if _, _, err := b1.cli.ElectMaster(ctx, &protocol.ElectMasterRequestHeader{BrokerName: "b", BrokerID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b1.cli.AlterSyncStateSet(ctx, "b", 1, 1, &protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	// Every node applies the change before two of them go: a follower
	// that learns of its commit only later would show it as a change
	// made without quorum.
	waitFor(t, 10*time.Second, "every node to apply the SyncStateSet change", func() bool {
		for _, c := range tc.nodes {
			if g := c.fsm.group("b"); g == nil || g.SyncStateSetEpoch != 2 {
				return false
			}
		}
		return true
	})
	for _, c := range tc.nodes { // restarts below go through snapshots too
		if err := c.snapshot(); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
	}
	// two of three controllers go away, the leader among them
	survivor := (leader + 1) % 3
	for i := range tc.nodes {
		if i != survivor {
			tc.stop(i)
		}
	}
	waitFor(t, 5*time.Second, "the survivor to step down", func() bool { return !tc.nodes[survivor].IsLeader() })
	// the master dies too; with no quorum nothing may be decided
	b1.stopHeartbeats()
	before := tc.nodes[survivor].fsm.group("b")
	cctx, cancel := context.WithTimeout(ctx, 3*testBrokerTimeout)
	_, _, err := b2.cli.ElectMaster(cctx, &protocol.ElectMasterRequestHeader{BrokerName: "b", BrokerID: 2})
	cancel()
	if !errors.Is(err, controllerclient.ErrNoController) {
		t.Fatalf("election without quorum: %v", err)
	}
	if after := tc.nodes[survivor].fsm.group("b"); !reflect.DeepEqual(after, before) || after.MasterID != 1 {
		t.Fatalf("state changed without quorum: %s -> %s", before, after)
	}
	// one controller comes back from its data: quorum, and the failover happens
	back := (survivor + 1) % 3
	tc.restart(back)
	tc.waitLeader()
	h, s := waitMaster(t, b2.cli, "broker 2 elected after quorum returns", func(h *protocol.GetReplicaInfoResponseHeader, _ *protocol.SyncStateSet) bool {
		return h.MasterBrokerID != 1
	})
	if h.MasterBrokerID != 2 || h.MasterEpoch != 2 || !reflect.DeepEqual(s.SyncStateSet, []int64{2}) {
		t.Fatalf("after quorum returns: %+v %+v", h, s)
	}
	if g := tc.nodes[back].fsm.group("b"); g == nil || len(g.Replicas) != 2 {
		t.Fatalf("restarted node state: %v", g)
	}
}
