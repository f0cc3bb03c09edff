package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting/tlstest"
)

// startConsole runs the console with args and env until the test ends
// and returns its address.
func startConsole(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-listen", "127.0.0.1:0", "-sample", "-1s", "-auth-proxy-header", "X-Test-User",
			"-auth-proxy-trusted", "127.0.0.1,::1"}, args...),
			func(k string) string { return env[k] }, io.Discard, func(a string) { addrs <- a })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("console shutdown: %v", err)
		}
	})
	select {
	case a := <-addrs:
		return a
	case err := <-done:
		done <- nil // for the cleanup
		t.Fatalf("console run: %v", err)
		return ""
	}
}

// topicAPI GETs the console's view of the default topic, which reads the
// broker's queue offsets (a signed request under ACL).
func topicAPI(t *testing.T, addr string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/topics/TBW102", nil)
	req.Header.Set("X-Test-User", "tester") // a trusted proxy's user (viewer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestCredentials(t *testing.T) {
	t.Parallel()
	acl := filepath.Join(t.TempDir(), "plain_acl.yml")
	err := os.WriteFile(acl, []byte("accounts:\n  - accessKey: consoleAdmin\n    secretKey: consoleSecret\n    admin: true\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ns := nameservertest.Start(t)
	brokertest.Start(t, ns, func(o *broker.Options) { o.AclEnable, o.PlainAclFile = true, acl })
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"env", map[string]string{"NAMESRV_ADDR": ns, "CONSOLE_ACCESS_KEY": "consoleAdmin", "CONSOLE_SECRET_KEY": "consoleSecret"}, nil, 200, `"topic": "TBW102"`},
		{"flags", map[string]string{"NAMESRV_ADDR": ns}, []string{"-access-key", "consoleAdmin", "-secret-key", "consoleSecret"}, 200, `"topic": "TBW102"`},
		{"none", map[string]string{"NAMESRV_ADDR": ns}, nil, 502, "No accessKey"},
		{"wrong secret", map[string]string{"NAMESRV_ADDR": ns, "CONSOLE_ACCESS_KEY": "consoleAdmin", "CONSOLE_SECRET_KEY": "wrong!"}, nil, 502, "signature"},
	} {
		addr := startConsole(t, tc.env, tc.args...)
		if code, body := topicAPI(t, addr); code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, code, body, tc.code, tc.want)
		}
	}
	// A key without its secret is refused at start.
	err = run(context.Background(), []string{"-n", ns, "-access-key", "consoleAdmin"}, func(string) string { return "" }, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "secret key") {
		t.Errorf("access key alone: %v", err)
	}
}

func TestTLS(t *testing.T) {
	t.Parallel()
	certs := tlstest.New(t)
	ns := nameservertest.Start(t, func(o *nameserver.Options) { o.TLSConfig = certs.ServerConfig(true) })
	brokertest.Start(t, ns, func(o *broker.Options) {
		o.TLSEnable, o.TLSClientAuth = true, true
		o.TLSCertPath, o.TLSKeyPath, o.TLSCAPath = certs.Files.ServerCert, certs.Files.ServerKey, certs.Files.CA
	})
	env := map[string]string{"NAMESRV_ADDR": ns}
	addr := startConsole(t, env, "-tls-ca", certs.Files.CA, "-tls-cert", certs.Files.ClientCert, "-tls-key", certs.Files.ClientKey)
	if code, body := topicAPI(t, addr); code != 200 {
		t.Errorf("over mutual TLS: %d %s", code, body)
	}
	plain := startConsole(t, env, "-timeout", "2s")
	if code, _ := topicAPI(t, plain); code == 200 {
		t.Error("plain TCP console served a TLS cluster")
	}
	for _, args := range [][]string{{"-n", ns, "-tls-ca", "/nonexistent.pem"}, {"-n", ns, "-tls-cert", "c.pem"}} {
		if err := run(context.Background(), args, func(string) string { return "" }, io.Discard, nil); err == nil {
			t.Errorf("run %v: no error", args)
		}
	}
}
