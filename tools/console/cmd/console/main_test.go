package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemq/tide/nameserver/nameservertest"
)

func TestRunServesAndShutsDown(t *testing.T) {
	ns := nameservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := map[string]string{"NAMESRV_ADDR": ns}
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0"}, func(k string) string { return env[k] }, io.Discard, func(a string) { addrs <- a })
	}()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + addr + p)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", p, err, resp)
		}
		resp.Body.Close()
	}
	if err := run(ctx, []string{"-healthcheck", addr}, func(string) string { return "" }, io.Discard, nil); err != nil {
		t.Fatalf("healthcheck: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	none := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no NameServer address"},
		{[]string{"-n", "127.0.0.1:9876", "-reconcile", "order:8000"}, "must start with http"},
		{[]string{"-n", "127.0.0.1:9876", "stray"}, "unexpected argument"},
		{[]string{"-bogus"}, "flag provided but not defined"},
		{[]string{"-healthcheck", "127.0.0.1:1"}, "connection refused"},
	} {
		err := run(context.Background(), tc.args, none, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run %v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
