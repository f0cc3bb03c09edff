package remoting

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// connPair returns both ends of a connection of the given kind: "tcp"
// (vectored writes) or "pipe" (net.Pipe: the copying path TLS takes).
func connPair(t *testing.T, kind string) (w, r net.Conn) {
	t.Helper()
	if kind == "pipe" {
		w, r = net.Pipe()
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, _ := ln.Accept()
			accepted <- c
		}()
		if w, err = net.Dial("tcp", ln.Addr().String()); err != nil {
			t.Fatal(err)
		}
		if r = <-accepted; r == nil {
			t.Fatal("accept failed")
		}
	}
	t.Cleanup(func() { w.Close(); r.Close() })
	return w, r
}

func newTestQueue(nc net.Conn) *writeQueue {
	q := &writeQueue{}
	q.init(nc)
	return q
}

// TestWriteQueueOrder: concurrent writers, each writing numbered frames one
// after the other; every frame arrives whole, and each writer's in order.
func TestWriteQueueOrder(t *testing.T) {
	for _, kind := range []string{"tcp", "pipe"} {
		t.Run(kind, func(t *testing.T) {
			w, r := connPair(t, kind)
			q := newTestQueue(w)
			const writers, perWriter = 8, 300
			var wg sync.WaitGroup
			for g := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perWriter {
						// 8-byte frame header (writer, seq) and a body of
						// varying size, so batches mix sizes.
						f := make([]byte, 12+(i%7)*300)
						binary.BigEndian.PutUint32(f, uint32(len(f)-4))
						binary.BigEndian.PutUint32(f[4:], uint32(g))
						binary.BigEndian.PutUint32(f[8:], uint32(i))
						if _, err := q.write(f, time.Second*10); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			next := make([]uint32, writers)
			var hdr [12]byte
			for range writers * perWriter {
				if _, err := io.ReadFull(r, hdr[:]); err != nil {
					t.Fatal(err)
				}
				n := binary.BigEndian.Uint32(hdr[:])
				g, seq := binary.BigEndian.Uint32(hdr[4:]), binary.BigEndian.Uint32(hdr[8:])
				if g >= writers || seq != next[g] {
					t.Fatalf("writer %d: frame %d, want %d", g, seq, next[g])
				}
				next[g]++
				if _, err := io.CopyN(io.Discard, r, int64(n-8)); err != nil {
					t.Fatal(err)
				}
			}
			wg.Wait()
		})
	}
}

// TestWriteQueueTimeout: a peer that does not read makes the write in
// progress time out; it and every frame queued behind it or written later
// fail with an error wrapping ErrClosed, and exactly one writer is told
// its own I/O failed.
func TestWriteQueueTimeout(t *testing.T) {
	w, _ := connPair(t, "pipe") // nobody reads: the first write blocks
	q := newTestQueue(w)
	const writers = 6
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		owners int
	)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			failed, err := q.write(make([]byte, 1024), 50*time.Millisecond)
			if !errors.Is(err, ErrClosed) {
				t.Errorf("err = %v, want ErrClosed", err)
			}
			if failed {
				mu.Lock()
				owners++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if owners != 1 {
		t.Errorf("%d writers own the failure, want 1", owners)
	}
	if _, err := q.write([]byte{1}, time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("write after failure: %v, want ErrClosed", err)
	}
}

// TestWriteQueueFailQueued: frames queued behind a blocked write fail with
// the close cause once fail is called and the blocked write ends.
func TestWriteQueueFailQueued(t *testing.T) {
	w, _ := connPair(t, "pipe")
	q := newTestQueue(w)
	first := make(chan error, 1)
	go func() { _, err := q.write([]byte{1, 2, 3}, 0); first <- err }()
	waitFor(t, "first write in progress", func() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.busy })
	queued := make(chan error, 1)
	go func() { _, err := q.write([]byte{4}, 0); queued <- err }()
	waitFor(t, "second write queued", func() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.pending != nil })
	q.fail(ErrClosed)
	w.Close() // what Conn.closeWith does next
	for _, ch := range []chan error{first, queued} {
		if err := <-ch; !errors.Is(err, ErrClosed) {
			t.Errorf("err = %v, want ErrClosed", err)
		}
	}
}

// TestWriteQueueBackpressure: with maxQueuedBytes pending behind a blocked
// write, another writer waits instead of growing the queue, and everything
// is written once the peer reads.
func TestWriteQueueBackpressure(t *testing.T) {
	w, r := connPair(t, "pipe")
	q := newTestQueue(w)
	big := maxQueuedBytes/2 + 1
	errs := make(chan error, 4)
	write := func(n int) {
		_, err := q.write(make([]byte, n), 0)
		errs <- err
	}
	go write(1)
	waitFor(t, "first write in progress", func() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.busy })
	go write(big)
	waitFor(t, "second write queued", func() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.queued == big })
	go write(big) // does not fit: must wait for the room
	go write(big)
	total := 1 + 3*big
	maxQueued := 0
	buf := make([]byte, 64<<10)
	for read := 0; read < total; {
		n, err := r.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		read += n
		q.mu.Lock()
		maxQueued = max(maxQueued, q.queued)
		q.mu.Unlock()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if maxQueued > maxQueuedBytes {
		t.Errorf("queued %d bytes, bound %d", maxQueued, maxQueuedBytes)
	}
}

// countingConn counts Write calls (it is not a *net.TCPConn, so batches
// take the copying path: one Write per batch).
type countingConn struct {
	net.Conn
	mu     sync.Mutex
	writes int
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// TestWriteQueueGathers: writers that become runnable together (as the
// handlers of one burst of requests do) share write calls: the idle
// writer's yield lets them queue behind it. Every frame still arrives
// once, whole and in its writer's order.
func TestWriteQueueGathers(t *testing.T) {
	w, r := connPair(t, "tcp")
	cc := &countingConn{Conn: w}
	q := newTestQueue(cc)
	const writers, rounds = 64, 20
	go func() {
		var hdr [12]byte
		for range writers * rounds {
			if _, err := io.ReadFull(r, hdr[:]); err != nil {
				return
			}
		}
	}()
	for round := range rounds {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				f := make([]byte, 12)
				binary.BigEndian.PutUint32(f, 8)
				binary.BigEndian.PutUint32(f[4:], uint32(g))
				binary.BigEndian.PutUint32(f[8:], uint32(round))
				if _, err := q.write(f, 10*time.Second); err != nil {
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
	}
	cc.mu.Lock()
	writes := cc.writes
	cc.mu.Unlock()
	t.Logf("%d frames in %d writes", writers*rounds, writes)
	if writes >= writers*rounds {
		t.Fatalf("%d frames took %d writes: nothing was gathered", writers*rounds, writes)
	}
}
