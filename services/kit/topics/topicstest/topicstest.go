// Package topicstest holds what the services' tests of broker
// credentials (plain ACL) share: the ACL file a test broker loads and
// the check that a client without credentials is refused.
package topicstest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/mqclient"
)

// ACLFile writes body as plain_acl.yml into a temporary directory of t
// and returns its path (the broker's PlainAclFile).
func ACLFile(t testing.TB, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ACL is a test broker's plain ACL: the file the broker loads and the
// credentials the service's and the test's clients sign with. The zero
// ACL is a broker without ACL and unsigned clients.
type ACL struct {
	Path  string
	Creds mqclient.Credentials
}

// Admin writes a plain_acl.yml (ACLFile) with one admin account (a
// service creates its topics, so it needs admin) and returns it with the
// account's credentials.
func Admin(t testing.TB, accessKey, secretKey string) ACL {
	t.Helper()
	body := "accounts:\n  - accessKey: " + accessKey + "\n    secretKey: " + secretKey + "\n    admin: true\n"
	return ACL{Path: ACLFile(t, body), Creds: mqclient.Credentials{AccessKey: accessKey, SecretKey: secretKey}}
}

// BrokerOptions are the test broker's options for a: aclEnable with the
// file, none for the zero ACL.
func (a ACL) BrokerOptions() []func(*broker.Options) {
	if a.Path == "" {
		return nil
	}
	return []func(*broker.Options){func(o *broker.Options) { o.AclEnable, o.PlainAclFile = true, a.Path }}
}

// ClientOptions are a test's own producers' and consumers' options: the
// NameServers, the credentials when a has some, then extra.
func (a ACL) ClientOptions(ns string, extra ...mqclient.Option) []mqclient.Option {
	opts := []mqclient.Option{mqclient.WithNameServers(ns)}
	if a.Creds.AccessKey != "" {
		opts = append(opts, mqclient.WithCredentials(a.Creds))
	}
	return append(opts, extra...)
}

// RefusesUnsigned fails t unless a producer without credentials, on the
// NameServer ns, is refused a send to topic by the broker ("No
// accessKey"). It waits up to 30 s.
func RefusesUnsigned(t testing.TB, ns, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	unsigned, err := mqclient.NewProducer(mqclient.WithNameServers(ns), mqclient.WithProducerGroup("test-unsigned"),
		mqclient.WithRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := unsigned.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer unsigned.Shutdown(context.Background())
	if _, err := unsigned.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("x")}); err == nil ||
		!strings.Contains(err.Error(), "No accessKey") {
		t.Fatalf("unsigned send: %v, want a refusal", err)
	}
}
