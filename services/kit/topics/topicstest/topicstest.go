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

// Admin writes a plain_acl.yml (ACLFile) with one admin account (a
// service creates its topics, so it needs admin) and returns its path and
// the account's credentials for the service's clients.
func Admin(t testing.TB, accessKey, secretKey string) (string, mqclient.Credentials) {
	t.Helper()
	body := "accounts:\n  - accessKey: " + accessKey + "\n    secretKey: " + secretKey + "\n    admin: true\n"
	return ACLFile(t, body), mqclient.Credentials{AccessKey: accessKey, SecretKey: secretKey}
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
