package broker_test

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestAbuseOnLoopback: 1,000 idle (half-open) connections, connections
// sending garbage, announcing oversized frames or frames they never
// finish, and a client pipelining requests without ever reading the
// answers. Throughout, a well-behaved client keeps being served, and the
// heap stays within a generous bound (not a timing assertion: how long
// anything takes is not checked).
func TestAbuseOnLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("abuse test: -short")
	}
	e := newEnv(t, func(o *broker.Options) {
		// Short enough for the test to see slow frames cut, long enough
		// not to matter for the well-behaved client.
		o.ServerFrameReadTimeoutMillis = 5000
	})
	topic := uniq("AbuseTopic")
	if err := createTopic(e.addr, topic, 1); err != nil {
		t.Fatal(err)
	}
	good := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { good.Close() })
	served := func(what string) {
		t.Helper()
		if resp, err := sendRaw(good, e.addr, topic); err != nil {
			t.Fatalf("%s: well-behaved send failed: %v %v", what, resp, err)
		}
	}
	served("before")
	before := heapInUse()

	var conns []net.Conn
	dial := func() net.Conn {
		t.Helper()
		nc, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		conns = append(conns, nc)
		return nc
	}
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})

	// 1,000 connections that never say anything (what half-open
	// connections look like from the server until the idle timeout).
	for i := 0; i < 1000; i++ {
		dial()
	}
	served("with 1,000 idle connections")

	// Garbage, oversized frames, frames announced big and never sent.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50; i++ {
		junk := make([]byte, 1+rng.IntN(4096))
		for j := range junk {
			junk[j] = byte(rng.Uint32())
		}
		dial().Write(junk)
		dial().Write(binary.BigEndian.AppendUint32(nil, 1<<30)) // > 16 MiB
		// 16 MiB announced, 100 bytes sent: must not cost 16 MiB each.
		big := binary.BigEndian.AppendUint32(nil, 16<<20-1)
		dial().Write(append(big, make([]byte, 100)...))
	}
	served("with garbage and oversized frames")
	// All of them accepted (the frame timeout has not cut the unfinished
	// frames yet), so that the heap is measured with them.
	eventually(t, 4*time.Second, "the abusive connections accepted", func() bool { return openConns(t, e) >= 1000+50 })

	// A client that pipelines requests and never reads the responses.
	deaf := dial()
	h := protocol.QueueRequestHeader{Topic: topic, QueueID: 0}
	frame, err := protocol.NewRequest(protocol.GetMaxOffset, h.Encode(), nil).Encode()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		// Writes block once the kernel buffers fill: that is the point.
		deaf.SetWriteDeadline(time.Now().Add(10 * time.Second))
		for i := 0; i < 200000; i++ {
			if _, err := deaf.Write(frame); err != nil {
				return
			}
		}
	}()
	for i := 0; i < 20; i++ {
		served("while a client does not read")
	}

	after := heapInUse()
	t.Logf("heap in use: %d MiB before, %d MiB with %d abusive connections dialled, %d open at the broker", before>>20, after>>20, len(conns), openConns(t, e))
	// 1,000 connections cost a goroutine and a read buffer (512 B to
	// 64 KiB, following the reads) each;
	// the 50 announced 16 MiB frames would cost 800 MiB if allocated
	// up front. 256 MiB is generous for everything else.
	if after > before+256<<20 {
		t.Errorf("heap grew from %d MiB to %d MiB", before>>20, after>>20)
	}
	// The oversized frames and garbage were cut at once, the unfinished
	// frames after the frame timeout: what stays open is the 1,000 idle
	// connections (until the idle timeout), the deaf client (until the
	// write timeout) and the well-behaved one.
	eventually(t, 30*time.Second, "abusive connections dropped", func() bool {
		return openConns(t, e) <= 1000+2
	})
	served("after")
}

// openConns counts the broker's open client connections.
func openConns(t *testing.T, e *env) int {
	t.Helper()
	return e.b.OpenConnections()
}
