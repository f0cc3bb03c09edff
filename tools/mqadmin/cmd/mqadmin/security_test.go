package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting/tlstest"
)

// testACL has an admin and an account that may only read topics.
const testACL = `
accounts:
  - accessKey: toolsAdmin
    secretKey: toolsAdminSecret
    admin: true
  - accessKey: reader
    secretKey: readerSecret
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
`

// runEnv runs one invocation with the given environment.
func runEnv(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, args, &out, &errb, func(k string) string { return env[k] })
	return result{code, out.String(), errb.String()}
}

// startACLBroker runs a NameServer and a broker with ACL on (testACL,
// in the returned file).
func startACLBroker(t *testing.T) (ns string, b *broker.Broker, aclFile string) {
	t.Helper()
	aclFile = filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(aclFile, []byte(testACL), 0o600); err != nil {
		t.Fatal(err)
	}
	ns = nameservertest.Start(t)
	b = brokertest.Start(t, ns, func(o *broker.Options) { o.AclEnable, o.PlainAclFile = true, aclFile })
	return ns, b, aclFile
}

func TestCredentials(t *testing.T) {
	t.Parallel()
	ns, b, _ := startACLBroker(t)
	admin := map[string]string{"NAMESRV_ADDR": ns, "TIDE_ACCESS_KEY": "toolsAdmin", "TIDE_SECRET_KEY": "toolsAdminSecret"}
	bare := map[string]string{"NAMESRV_ADDR": ns}
	topic := "CredTopic"

	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string // in stderr when code != 0
	}{
		{"admin from env creates a topic", admin, []string{"updateTopic", "-b", b.Addr(), "-t", topic, "-r", "2", "-w", "2"}, 0, ""},
		{"no credentials", bare, []string{"topicStatus", "-t", topic}, 1, "No accessKey"},
		{"wrong secret", bare, []string{"topicStatus", "-t", topic, "--access-key", "reader", "--secret-key", "not-it"}, 1, "signature"},
		{"reader by flags reads", bare, []string{"topicStatus", "-t", topic, "--access-key", "reader", "--secret-key", "readerSecret"}, 0, ""},
		{"flags override env", admin, []string{"updateTopic", "-b", b.Addr(), "-t", topic, "--access-key", "reader", "--secret-key", "readerSecret"}, 1, "admin"},
		{"admin sends", admin, []string{"sendMessage", "-t", topic, "-p", "hello"}, 0, ""},
		{"key without secret", bare, []string{"topicStatus", "-t", topic, "--access-key", "reader"}, 2, "--access-key needs --secret-key"},
		{"secret without key", map[string]string{"NAMESRV_ADDR": ns, "TIDE_SECRET_KEY": "x"}, []string{"topicStatus", "-t", topic}, 2, "--secret-key needs --access-key"},
		{"unreadable CA", admin, []string{"topicStatus", "-t", topic, "--tls-ca", "/nonexistent/ca.pem"}, 1, "TLS CA"},
		{"cert without key", admin, []string{"topicStatus", "-t", topic, "--tls-cert", "c.pem"}, 2, "--tls-cert and --tls-key"},
	}
	for _, tt := range tests { // in order: the first creates the topic
		r := runEnv(t, tt.env, tt.args...)
		if r.code != tt.code || (tt.code != 0 && !strings.Contains(r.stderr, tt.want)) {
			t.Errorf("%s: exit %d (want %d), stderr %q (want %q)\nstdout: %s", tt.name, r.code, tt.code, r.stderr, tt.want, r.stdout)
		}
	}
	// What the admin sent is there (the consume queue is built
	// asynchronously); the secret is never printed.
	var r result
	waitFor(t, "the sent message readable with credentials", func() bool {
		r = runEnv(t, admin, "consumeMessage", "-t", topic, "-c", "10")
		return r.code == 0 && strings.Contains(r.stdout, "hello")
	})
	if strings.Contains(r.stdout+r.stderr, "toolsAdminSecret") {
		t.Error("the secret key appears in the output")
	}
}

func TestTLS(t *testing.T) {
	t.Parallel()
	certs := tlstest.New(t)
	ns := nameservertest.Start(t, func(o *nameserver.Options) { o.TLSConfig = certs.ServerConfig(true) })
	b := brokertest.Start(t, ns, func(o *broker.Options) {
		o.TLSEnable, o.TLSClientAuth = true, true
		o.TLSCertPath, o.TLSKeyPath, o.TLSCAPath = certs.Files.ServerCert, certs.Files.ServerKey, certs.Files.CA
	})
	env := map[string]string{"NAMESRV_ADDR": ns}
	tlsArgs := []string{"--tls-ca", certs.Files.CA, "--tls-cert", certs.Files.ClientCert, "--tls-key", certs.Files.ClientKey}
	r := runEnv(t, env, append([]string{"updateTopic", "-b", b.Addr(), "-t", "TLSTopic"}, tlsArgs...)...)
	if r.code != 0 {
		t.Fatalf("updateTopic over mutual TLS: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runEnv(t, env, append([]string{"topicStatus", "-t", "TLSTopic"}, tlsArgs...)...)
	if r.code != 0 {
		t.Fatalf("topicStatus over mutual TLS: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for name, args := range map[string][]string{
		"plain TCP":          {"clusterList", "--timeout", "2s"},
		"no client cert":     {"clusterList", "--timeout", "2s", "--tls-ca", certs.Files.CA},
		"untrusted (system)": {"clusterList", "--timeout", "2s", "--tls"},
	} {
		if r := runEnv(t, env, args...); r.code != 1 {
			t.Errorf("%s against a mutual-TLS cluster: exit %d, want 1\n%s", name, r.code, r.stderr)
		}
	}
}
