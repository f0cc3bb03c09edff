package remoting

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestShutdownSlowDisconnectHook: an OnDisconnect hook that blocks on one
// connection neither keeps the others from being closed nor Shutdown
// from returning when its context ends.
func TestShutdownSlowDisconnectHook(t *testing.T) {
	s := NewServer(ServerOptions{Logger: testLogger()})
	release := make(chan struct{})
	var blocked, closed atomic.Int32
	s.OnDisconnect(func(*Conn) {
		if blocked.Add(1) == 1 {
			<-release
		}
		closed.Add(1)
	})
	addr := startServer(t, s)
	const n = 50
	for range n {
		dialRaw(t, addr)
	}
	for deadline := time.Now().Add(5 * time.Second); len(s.Conns()) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections accepted", len(s.Conns()), n)
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want DeadlineExceeded", err)
	}
	if got := closed.Load(); got != n-1 {
		t.Errorf("%d hooks returned while one blocks, want %d", got, n-1)
	}
	if got := len(s.Conns()); got != 0 {
		t.Errorf("%d connections left open", got)
	}
	close(release)
	for deadline := time.Now().Add(5 * time.Second); closed.Load() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d hooks returned, want %d", closed.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
