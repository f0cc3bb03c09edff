package controllerclient

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// node is a stand-in controller node: it answers GET_REPLICA_INFO as
// leader or as a follower naming leaderAddr, and counts heartbeats.
type node struct {
	addr       string
	leader     atomic.Bool
	leaderAddr atomic.Value
	beats      atomic.Int32
}

func startNode(t *testing.T) *node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &node{addr: ln.Addr().String()}
	n.leaderAddr.Store("")
	srv := remoting.NewServer(remoting.ServerOptions{})
	srv.HandleFunc(protocol.ControllerGetReplicaInfo, func(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
		if !n.leader.Load() {
			resp := protocol.NewResponse(req, protocol.ControllerNotLeader, "not leader")
			resp.ExtFields = (&protocol.GetMetaDataResponseHeader{ControllerLeaderAddress: n.leaderAddr.Load().(string)}).Encode()
			return resp
		}
		resp := protocol.NewResponse(req, protocol.Success, "")
		resp.ExtFields = (&protocol.GetReplicaInfoResponseHeader{MasterInfo: protocol.MasterInfo{MasterBrokerID: 1,
			MasterAddress: "m:1", MasterEpoch: 4}}).Encode()
		resp.Body = (&protocol.SyncStateSet{SyncStateSet: []int64{1}, SyncStateSetEpoch: 2}).Encode()
		return resp
	})
	srv.HandleFunc(protocol.BrokerHeartbeat, func(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
		n.beats.Add(1)
		return protocol.NewResponse(req, protocol.Success, "")
	})
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return n
}

func newClient(t *testing.T, addrs ...string) *Client {
	rc := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { rc.Close() })
	return New(rc, addrs)
}

func TestFollowsNotLeader(t *testing.T) {
	a, b := startNode(t), startNode(t)
	a.leaderAddr.Store(b.addr) // b is not in the client's list: reached through the redirect
	b.leader.Store(true)
	cli := newClient(t, a.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h, set, err := cli.ReplicaInfo(ctx, "b")
	if err != nil || h.MasterBrokerID != 1 || h.MasterEpoch != 4 || set.SyncStateSetEpoch != 2 {
		t.Fatalf("ReplicaInfo = %+v %+v %v", h, set, err)
	}
	if cli.Leader() != b.addr {
		t.Fatalf("leader = %q, want %q", cli.Leader(), b.addr)
	}
}

func TestNoLeaderUntilContextEnds(t *testing.T) {
	a := startNode(t) // a follower that knows no leader
	dead := "127.0.0.1:1"
	cli := newClient(t, dead, a.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err := cli.ReplicaInfo(ctx, "b")
	if !errors.Is(err, ErrNoController) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrNoController and DeadlineExceeded", err)
	}
	// a leader appears while the client retries
	go func() { time.Sleep(100 * time.Millisecond); a.leader.Store(true) }()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if _, _, err := cli.ReplicaInfo(ctx2, "b"); err != nil {
		t.Fatalf("after a leader appeared: %v", err)
	}
}

func TestHeartbeatEveryNode(t *testing.T) {
	a, b := startNode(t), startNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hb := &protocol.BrokerHeartbeatRequestHeader{ClusterName: "c", BrokerAddr: "x:1", BrokerName: "b", BrokerID: 1}
	if err := newClient(t, a.addr, b.addr, "127.0.0.1:1").Heartbeat(ctx, hb); err != nil {
		t.Fatalf("heartbeat with one node down: %v", err)
	}
	if a.beats.Load() != 1 || b.beats.Load() != 1 {
		t.Fatalf("beats = %d, %d", a.beats.Load(), b.beats.Load())
	}
	if err := newClient(t, "127.0.0.1:1").Heartbeat(ctx, hb); err == nil {
		t.Fatal("heartbeat with every node down succeeded")
	}
}
