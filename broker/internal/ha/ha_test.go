package ha

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Shared test harness: real stores in t.TempDir() with 64 KiB segments,
// servers on 127.0.0.1:0, readiness by polling with a deadline.

const segSize = 64 << 10

func quietLogger() *slog.Logger {
	if os.Getenv("HA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func storeConfig(dir string) store.Config {
	c := store.DefaultConfig()
	c.StorePathRootDir = dir
	c.MappedFileSizeCommitLog = segSize
	c.MappedFileSizeConsumeQueue = 20 * 100
	c.MaxMessageSize = 16 << 10
	c.MaxHashSlotNum = 64
	c.MaxIndexNum = 2000
	c.FlushIntervalCommitLog = 10
	c.FlushIntervalConsumeQueue = 20
	return c
}

func openStore(t testing.TB, c store.Config) *store.Store {
	t.Helper()
	st, err := store.Open(c, quietLogger())
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newStore(t testing.TB) (*store.Store, store.Config) {
	c := storeConfig(t.TempDir())
	return openStore(t, c), c
}

func startServer(t testing.TB, st *store.Store, opts ServerOptions) *Server {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	srv, err := NewServer(st, opts)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatalf("Server.Start: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func startClient(t testing.TB, st *store.Store, addr string, opts ClientOptions) *Client {
	t.Helper()
	opts.MasterAddr = addr
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	opts.MinBackoff = or(opts.MinBackoff, 5*time.Millisecond)
	opts.MaxBackoff = or(opts.MaxBackoff, 50*time.Millisecond)
	opts.SegmentSize = or(opts.SegmentSize, segSize)
	st.SetReadOnly(true)
	cl, err := NewClient(st, opts)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	if err := cl.Start(); err != nil {
		t.Fatalf("Client.Start: %v", err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

var (
	bornHost  = netip.MustParseAddrPort("10.0.0.1:5000")
	storeHost = netip.MustParseAddrPort("10.0.0.2:10911")
)

// producer appends deterministic messages of varied topics, queues and
// sizes (some larger than a small MaxTransfer).
type producer struct {
	rng *rand.Rand
	n   int
}

func newProducer(seed uint64) *producer { return &producer{rng: rand.New(rand.NewPCG(seed, 7))} }

func (p *producer) msg() *protocol.MessageExt {
	p.n++
	size := 10 + p.rng.IntN(200)
	if p.rng.IntN(8) == 0 {
		size = 4000 + p.rng.IntN(6000)
	}
	body := make([]byte, size)
	for i := range body {
		body[i] = byte(p.rng.Uint32())
	}
	m := &protocol.MessageExt{QueueID: int32(p.rng.IntN(4)), BornTimestamp: time.Now().UnixMilli(),
		BornHost: bornHost, StoreHost: storeHost}
	m.Topic = []string{"TopicA", "TopicB", "TopicC"}[p.rng.IntN(3)]
	m.Body = body
	m.Properties = map[string]string{
		protocol.PropKeys: fmt.Sprintf("key%d", p.n), protocol.PropTags: fmt.Sprintf("tag%d", p.n%3),
		protocol.PropUniqKey: fmt.Sprintf("UNIQ%08d", p.n),
	}
	return m
}

// put appends n messages and returns the end of the last one.
func (p *producer) put(t testing.TB, st *store.Store, n int) int64 {
	t.Helper()
	var end int64
	for range n {
		r, err := st.PutMessage(context.Background(), p.msg())
		if err != nil {
			t.Fatalf("PutMessage: %v", err)
		}
		end = r.CommitLogOffset + int64(r.WroteBytes)
	}
	return end
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitCaughtUp(t testing.TB, master, slave *store.Store) {
	t.Helper()
	waitFor(t, "slave to catch up", func() bool { return slave.MaxPhyOffset() == master.MaxPhyOffset() })
}

// assertSameLog compares the two commit logs byte for byte.
func assertSameLog(t testing.TB, master, slave *store.Store) {
	t.Helper()
	if m, s := master.MaxPhyOffset(), slave.MaxPhyOffset(); m != s {
		t.Fatalf("max offsets differ: master %d, slave %d", m, s)
	}
	if m, s := master.MinPhyOffset(), slave.MinPhyOffset(); m != s {
		t.Fatalf("min offsets differ: master %d, slave %d", m, s)
	}
	for off := master.MinPhyOffset(); off < master.MaxPhyOffset(); {
		a, err := master.ReadCommitLog(off, 1<<20)
		if err != nil {
			t.Fatalf("master ReadCommitLog(%d): %v", off, err)
		}
		b, err := slave.ReadCommitLog(off, len(a))
		if err != nil {
			t.Fatalf("slave ReadCommitLog(%d): %v", off, err)
		}
		if !bytes.Equal(a, b) {
			i := 0
			for i < min(len(a), len(b)) && a[i] == b[i] {
				i++
			}
			t.Fatalf("commit logs differ at %d (%d vs %d bytes read)", off+int64(i), len(a), len(b))
		}
		off += int64(len(a))
	}
}

// assertSameQueues waits for both dispatchers and compares every consume
// queue unit for unit.
func assertSameQueues(t testing.TB, master, slave *store.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, st := range []*store.Store{master, slave} {
		if err := st.WaitDispatched(ctx, st.MaxPhyOffset()); err != nil {
			t.Fatalf("WaitDispatched: %v", err)
		}
	}
	mt, sl := master.Topics(), slave.Topics()
	if len(mt) != len(sl) {
		t.Fatalf("topics differ: master %v, slave %v", mt, sl)
	}
	for topic, qids := range mt {
		for _, q := range qids {
			mMin, mMax := master.MinOffset(topic, q), master.MaxOffset(topic, q)
			if sMax := slave.MaxOffset(topic, q); sMax != mMax {
				t.Fatalf("%s/%d: max offset master %d, slave %d", topic, q, mMax, sMax)
			}
			a, err := master.ReadQueue(topic, q, mMin, int(mMax-mMin))
			if err != nil {
				t.Fatalf("master ReadQueue %s/%d: %v", topic, q, err)
			}
			b, err := slave.ReadQueue(topic, q, mMin, int(mMax-mMin))
			if err != nil {
				t.Fatalf("slave ReadQueue %s/%d: %v", topic, q, err)
			}
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("%s/%d: consume queues differ", topic, q)
			}
		}
	}
}
