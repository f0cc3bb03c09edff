// Package controllertest starts a real controller for tests of other
// packages (the broker in controller mode, mqadmin, the console): one
// node on loopback with real hashicorp/raft and bolt stores, no mocks.
package controllertest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/tidemq/tide/controller"
)

// Start runs a one-node controller group on loopback until the test ends
// and returns its remoting address once it leads. The defaults suit
// failover tests: 100 ms Raft timeouts, a broker is dead 2.5 s after its
// last heartbeat, the leader scans every 50 ms; opts change them (and
// anything else) before the node starts.
func Start(t testing.TB, opts ...func(*controller.Options)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := controller.DefaultOptions()
	o.NodeID, o.DataDir = "n0", t.TempDir()
	o.Peers = []controller.Peer{{ID: "n0", RaftAddr: rln.Addr().String(), Addr: ln.Addr().String()}}
	o.Listener, o.RaftListener = ln, rln
	o.RaftHeartbeatTimeout, o.RaftElectionTimeout = 100*time.Millisecond, 100*time.Millisecond
	o.HeartbeatTimeout, o.ScanInterval = 2500*time.Millisecond, 50*time.Millisecond
	for _, f := range opts {
		f(&o)
	}
	c, err := controller.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown(context.Background()) })
	for deadline := time.Now().Add(10 * time.Second); !c.IsLeader(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("controllertest: the node did not become leader in 10 s")
		}
	}
	return c.Addr()
}
