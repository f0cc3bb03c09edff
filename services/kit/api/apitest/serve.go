package apitest

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-kratos/kratos/v2/transport"
	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
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

// ServeAPI serves a service's HTTP server hs and gRPC server gs, and
// more, as Serve does, after resolving their endpoints (that binds the
// listeners, which Kratos servers do not do safely concurrently); it
// returns the HTTP base URL ("http://host:port") and the gRPC address
// (host:port), failing the test when a listener cannot bind.
func ServeAPI(t testing.TB, ctx context.Context, hs *khttp.Server, gs *kgrpc.Server, more ...transport.Server) (httpURL, grpcAddr string) {
	t.Helper()
	he, err := hs.Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	ge, err := gs.Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	Serve(t, ctx, append([]transport.Server{hs, gs}, more...)...)
	return "http://" + he.Host, ge.Host
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

// WaitFor polls cond every 50 ms until it holds, failing the test after
// timeout ("timed out waiting for what").
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Metrics returns the text of GET base+"/metrics" (Prometheus
// exposition), failing the test when the request fails.
func Metrics(t testing.TB, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
