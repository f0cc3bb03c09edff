package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemq/tide/nameserver/nameservertest"
)

func TestRunServesAndShutsDown(t *testing.T) {
	ns := nameservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := map[string]string{"NAMESRV_ADDR": ns}
	users := filepath.Join(t.TempDir(), "users")
	if err := userCmd([]string{"add", "-users", users, "-role", "admin", "root"}, func(string) string { return "" },
		strings.NewReader("a-long-password\n"), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-users", users}, func(k string) string { return env[k] }, io.Discard, func(a string) { addrs <- a })
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
		{[]string{"-n", "127.0.0.1:9876"}, "sign-in needs a users file"},
		{[]string{"-n", "127.0.0.1:9876", "-users", "/nonexistent/users"}, "users file"},
		{[]string{"-n", "127.0.0.1:9876", "-auth-proxy-header", "X-User"}, "needs the proxies' addresses"},
		{[]string{"-n", "127.0.0.1:9876", "-auth-proxy-header", "X-User", "-auth-proxy-trusted", "proxy.local"}, "neither a CIDR nor an address"},
		{[]string{"-n", "127.0.0.1:9876", "-auth-proxy-header", "X-User", "-auth-proxy-trusted", "10.0.0.1", "-auth-proxy-default-role", "root"}, "unknown role"},
		{[]string{"-n", "127.0.0.1:9876", "-auth-proxy-header", "X-User", "-auth-proxy-trusted", "10.0.0.1", "-cert", "c.pem"}, "certificate and a key"},
		{[]string{"-n", "127.0.0.1:9876", "-auth-proxy-header", "X-User", "-auth-proxy-trusted", "10.0.0.1", "-cert", "c.pem", "-key", "k.pem"}, "console certificate"},
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
