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
