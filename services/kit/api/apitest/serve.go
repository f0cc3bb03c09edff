package apitest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-kratos/kratos/v2/transport"
)

// stopTimeout bounds each server's Stop at the end of a test.
const stopTimeout = 10 * time.Second

// Serve runs each server's Start on its own goroutine until the test
// ends; then it stops them (each Stop bounded by 10 s) and waits for their
// Start calls to return. Resolve the servers' Endpoint first: Kratos
// servers bind there and are not safe to bind concurrently.
func Serve(t testing.TB, ctx context.Context, servers ...transport.Server) {
	t.Helper()
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // runs after the Stop cleanups below (LIFO)
	for _, s := range servers {
		wg.Go(func() { _ = s.Start(ctx) })
		t.Cleanup(func() { stop(s) })
	}
}

// Start starts a server whose Start returns once it runs (a consumer
// server: topics ensured, subscriptions made), failing the test when it
// does not within timeout, and stops it when the test ends (bounded by
// 10 s).
func Start(t testing.TB, ctx context.Context, timeout time.Duration, s transport.Server) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.Start(sctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(s) })
}

func stop(s transport.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	_ = s.Stop(ctx)
}
