package ha

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestReplicateByteIdentical(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maxTransfer int
	}{
		{"default transfer", 0},
		{"1 KiB transfer, records larger than a transfer", 1024},
		{"4 KiB transfer", 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			master, _ := newStore(t)
			p := newProducer(1)
			p.put(t, master, 150) // before the slave exists: catch-up
			srv := startServer(t, master, ServerOptions{MaxTransfer: tc.maxTransfer})
			slave, _ := newStore(t)
			startClient(t, slave, srv.Addr(), ClientOptions{})
			waitCaughtUp(t, master, slave)
			p.put(t, master, 150) // while connected: streaming
			waitCaughtUp(t, master, slave)
			if n := len(master.Topics()); n == 0 {
				t.Fatal("no topics")
			}
			if segs := master.MaxPhyOffset() / segSize; segs < 4 {
				t.Fatalf("only %d segment rolls; the test wants several", segs)
			}
			assertSameLog(t, master, slave)
			assertSameQueues(t, master, slave)
			// The index is rebuilt on the slave too.
			r := slave.QueryMessages("TopicA", "key1", 1, 0, time.Now().Add(time.Hour).UnixMilli())
			want := master.QueryMessages("TopicA", "key1", 1, 0, time.Now().Add(time.Hour).UnixMilli())
			if len(r.Offsets) != len(want.Offsets) {
				t.Fatalf("index query on slave: %v, master %v", r.Offsets, want.Offsets)
			}
		})
	}
}

// TestReplicateUnderLoad keeps appending from several goroutines while the
// slave streams, with Notify after each put (as the broker may do).
func TestReplicateUnderLoad(t *testing.T) {
	master, _ := newStore(t)
	srv := startServer(t, master, ServerOptions{PollInterval: time.Hour})
	slave, _ := newStore(t)
	startClient(t, slave, srv.Addr(), ClientOptions{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := newProducer(uint64(10 + g))
			for range 100 {
				if _, err := master.PutMessage(context.Background(), p.msg()); err != nil {
					t.Error(err)
					return
				}
				srv.Notify()
			}
		}()
	}
	wg.Wait()
	waitCaughtUp(t, master, slave)
	assertSameLog(t, master, slave)
	assertSameQueues(t, master, slave)
}

func TestResumeAfterDisconnect(t *testing.T) {
	master, _ := newStore(t)
	srv := startServer(t, master, ServerOptions{MaxTransfer: 2048})
	slave, _ := newStore(t)
	cl := startClient(t, slave, srv.Addr(), ClientOptions{})
	p := newProducer(2)
	p.put(t, master, 50)
	waitCaughtUp(t, master, slave)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // keep writing while connections drop
		defer close(done)
		for ctx.Err() == nil {
			if _, err := master.PutMessage(ctx, p.msg()); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := range 6 {
		before := slave.MaxPhyOffset()
		waitFor(t, "slave progress", func() bool { return slave.MaxPhyOffset() > before })
		if i%2 == 0 {
			cl.dropConn()
		} else {
			dropSlaves(srv)
		}
		sessions := cl.Status().Sessions
		waitFor(t, "reconnect", func() bool { st := cl.Status(); return st.Connected && st.Sessions > sessions })
	}
	cancel()
	<-done
	waitCaughtUp(t, master, slave)
	assertSameLog(t, master, slave)
	assertSameQueues(t, master, slave)
	if s := cl.Status().Sessions; s < 7 {
		t.Fatalf("sessions = %d, want >= 7", s)
	}
}

// dropSlaves closes every slave connection on the master side.
func dropSlaves(s *Server) {
	for _, c := range *s.snapshot.Load() {
		c.close()
	}
}

func TestSlaveRestart(t *testing.T) {
	master, _ := newStore(t)
	srv := startServer(t, master, ServerOptions{MaxTransfer: 3000})
	slave, scfg := newStore(t)
	cl := startClient(t, slave, srv.Addr(), ClientOptions{})
	p := newProducer(3)
	p.put(t, master, 100)
	waitCaughtUp(t, master, slave)

	// Stop the slave in the middle of a stream, write more, restart it.
	p.put(t, master, 100)
	cl.Close()
	if err := slave.Close(); err != nil {
		t.Fatalf("slave Close: %v", err)
	}
	p.put(t, master, 100)
	slave = openStore(t, scfg)
	startClient(t, slave, srv.Addr(), ClientOptions{})
	waitCaughtUp(t, master, slave)
	assertSameLog(t, master, slave)
	assertSameQueues(t, master, slave)
}

func TestMasterRestart(t *testing.T) {
	master, mcfg := newStore(t)
	srv := startServer(t, master, ServerOptions{})
	addr := srv.Addr()
	slave, _ := newStore(t)
	cl := startClient(t, slave, addr, ClientOptions{})
	p := newProducer(4)
	p.put(t, master, 100)
	waitCaughtUp(t, master, slave)

	srv.Close()
	if err := master.Close(); err != nil {
		t.Fatalf("master Close: %v", err)
	}
	waitFor(t, "slave to notice", func() bool { return !cl.Status().Connected })
	master = openStore(t, mcfg)
	p.put(t, master, 100)
	// The same address again (SO_REUSEADDR): the slave's retries find it.
	startServer(t, master, ServerOptions{Addr: addr})
	waitCaughtUp(t, master, slave)
	p.put(t, master, 50)
	waitCaughtUp(t, master, slave)
	assertSameLog(t, master, slave)
	assertSameQueues(t, master, slave)
}

func TestSetMasterAddress(t *testing.T) {
	master, _ := newStore(t)
	p := newProducer(5)
	p.put(t, master, 40)
	slave, _ := newStore(t)
	cl := startClient(t, slave, "", ClientOptions{}) // no address yet: idle
	if st := cl.Status(); st.Connected || st.Sessions != 0 {
		t.Fatalf("status without an address: %+v", st)
	}
	srv := startServer(t, master, ServerOptions{})
	cl.SetMasterAddress(srv.Addr())
	waitCaughtUp(t, master, slave)
	if got := cl.MasterAddress(); got != srv.Addr() {
		t.Fatalf("MasterAddress = %q", got)
	}
	// Switching away disconnects; switching back resumes.
	cl.SetMasterAddress("")
	waitFor(t, "disconnect", func() bool { return !cl.Status().Connected })
	p.put(t, master, 40)
	cl.SetMasterAddress(srv.Addr())
	waitCaughtUp(t, master, slave)
	assertSameLog(t, master, slave)
}

// TestSlaveBehindMasterMin: retention removed the master's oldest
// segments. An empty slave starts from the master's first retained
// segment; a slave holding older data refuses the gap.
func TestSlaveBehindMasterMin(t *testing.T) {
	mcfg := storeConfig(t.TempDir())
	mcfg.DiskSpaceCleanForciblyRatio = 1 // Clean deletes the oldest segments now
	mcfg.DeleteFileBatchMax = 3
	master := openStore(t, mcfg)
	p := newProducer(6)
	p.put(t, master, 20)
	// A slave that copied the beginning, then went away.
	old, _ := newStore(t)
	srv := startServer(t, master, ServerOptions{})
	oc := startClient(t, old, srv.Addr(), ClientOptions{})
	waitCaughtUp(t, master, old)
	oc.Close()

	p.put(t, master, 300)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := master.WaitDispatched(ctx, master.MaxPhyOffset()); err != nil {
		t.Fatal(err)
	}
	if n := master.Clean(true); n == 0 || master.MinPhyOffset() <= old.MaxPhyOffset() {
		t.Fatalf("Clean deleted %d segments, min offset %d, old slave at %d", n, master.MinPhyOffset(), old.MaxPhyOffset())
	}

	fresh, _ := newStore(t)
	startClient(t, fresh, srv.Addr(), ClientOptions{})
	waitCaughtUp(t, master, fresh)
	assertSameLog(t, master, fresh)

	oldEnd := old.MaxPhyOffset()
	c2 := startClient(t, old, srv.Addr(), ClientOptions{})
	waitFor(t, "refusals", func() bool { return c2.Status().Sessions >= 3 })
	if got := old.MaxPhyOffset(); got != oldEnd {
		t.Fatalf("old slave appended across the gap: %d -> %d", oldEnd, got)
	}
}
