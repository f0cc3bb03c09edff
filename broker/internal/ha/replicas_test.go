package ha

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// TestReplicasAndWaitAcks: slaves that send the controller-mode hello are
// listed by id with their acks; WaitAcks waits for the named ids only.
func TestReplicasAndWaitAcks(t *testing.T) {
	mst, _ := newStore(t)
	srv := startServer(t, mst, ServerOptions{ExpectBrokerID: true, SlaveTimeout: 300 * time.Millisecond})
	s2, _ := newStore(t)
	s3, _ := newStore(t)
	startClient(t, s2, srv.Addr(), ClientOptions{BrokerID: 2})
	c3 := startClient(t, s3, srv.Addr(), ClientOptions{BrokerID: 3})
	p := newProducer(1)
	end := p.put(t, mst, 20)
	waitFor(t, "both slaves listed as caught up", func() bool {
		rs := srv.Replicas()
		if len(rs) != 2 {
			return false
		}
		for _, r := range rs {
			if r.Acked < end || r.CaughtUp.Before(time.Now().Add(-time.Minute)) {
				return false
			}
		}
		return true
	})
	ctx := context.Background()
	if err := srv.WaitAcks(ctx, end, []int64{2, 3}, 2); err != nil {
		t.Fatalf("both acked: %v", err)
	}
	for _, id := range []int64{2, 3} {
		if a, ok := srv.Acked(id); !ok || a < end {
			t.Fatalf("Acked(%d) = %d %v, want >= %d", id, a, ok, end)
		}
	}
	if a, ok := srv.Acked(4); ok || a != 0 {
		t.Fatalf("Acked of an id never connected = %d %v", a, ok)
	}
	// The confirm offset asks on every dispatcher wake: no garbage.
	if n := testing.AllocsPerRun(100, func() { srv.Acked(2) }); n != 0 {
		t.Fatalf("Acked allocates %v times per call", n)
	}
	c3.Close()
	end = p.put(t, mst, 5)
	if err := srv.WaitAcks(ctx, end, []int64{2, 3}, 1); err != nil {
		t.Fatalf("one of two: %v", err)
	}
	if err := srv.WaitAcks(ctx, end, []int64{2, 3}, 2); !errors.Is(err, ErrFlushSlaveTimeout) {
		t.Fatalf("3 is gone, want a timeout: %v", err)
	}
	if err := srv.WaitAcks(ctx, end, []int64{4}, 1); !errors.Is(err, ErrFlushSlaveTimeout) {
		t.Fatalf("an id never connected, want a timeout: %v", err)
	}
	if err := srv.WaitAcks(ctx, end+1<<30, nil, 0); err != nil {
		t.Fatalf("need 0: %v", err)
	}
}

// TestHelloRequired: a master expecting the hello closes a slave that
// does not send one (a 4.x slave, or one not in controller mode).
func TestHelloRequired(t *testing.T) {
	mst, _ := newStore(t)
	srv := startServer(t, mst, ServerOptions{ExpectBrokerID: true})
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write(appendReport(appendReport(nil, 0), 0)); err != nil { // 16 bytes of reports, no magic
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err == nil {
		t.Fatal("the master streamed to a slave without a hello")
	}
	if len(srv.Replicas()) != 0 {
		t.Fatalf("listed: %+v", srv.Replicas())
	}
	if _, _, err := decodeHello(appendHello(nil, 0)); err == nil {
		t.Fatal("id 0 accepted")
	}
	if id, confirm, err := decodeHello(appendHello(nil, 7)); err != nil || id != 7 || !confirm {
		t.Fatalf("round trip: %d %v %v", id, confirm, err)
	}
}
