// Package boottest runs a service's wired kratos.App in its tests.
package boottest

import (
	"context"
	"errors"
	nethttp "net/http"
	"testing"
	"time"

	"github.com/go-kratos/kratos/v2"
)

// RunReady runs app in the background and returns once GET /readyz on
// httpAddr answers 200; t fails if that takes over 30 s. stop stops the
// app and fails t unless Run returns within 30 s without an error (a
// cancelled context is no error).
func RunReady(t testing.TB, app *kratos.App, httpAddr string) (stop func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- app.Run() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := nethttp.Get("http://" + httpAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == nethttp.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return func() {
		t.Helper()
		if err := app.Stop(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("app did not stop")
		}
	}
}
