package broker

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/internal/acl"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// startInternal starts a master broker on loopback without NameServers.
func startInternal(t *testing.T, opts ...func(*Options)) *Broker {
	t.Helper()
	o := DefaultOptions()
	o.BrokerName, o.ListenAddr, o.ListenPort, o.HAListenPort, o.BrokerIP1 = "broker-a", "127.0.0.1", 0, 0, "127.0.0.1"
	o.Store.StorePathRootDir = t.TempDir()
	o.Store.MappedFileSizeCommitLog = 64 << 20
	for _, f := range opts {
		f(&o)
	}
	b, err := New(o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.Shutdown(ctx)
	})
	return b
}

// TestEveryCodeHasAnAccessRule walks the broker's processor table: every
// registered request code must have a rule in aclRules that says what it
// needs (so a new code cannot ship unchecked), and every rule must belong
// to a registered code (so the table stays the truth).
func TestEveryCodeHasAnAccessRule(t *testing.T) {
	b := startInternal(t)
	codes := b.server.Codes()
	if len(codes) < 30 {
		t.Fatalf("only %d registered codes: %v", len(codes), codes)
	}
	registered := map[int16]bool{}
	for _, code := range codes {
		registered[code] = true
		r, ok := aclRules[code]
		if !ok {
			t.Errorf("request code %d is served but has no access rule in aclRules", code)
			continue
		}
		if !r.admin && r.resources == nil && r.resolved == "" && r.open == "" {
			t.Errorf("request code %d: has an empty rule (say admin, resources, resolved or open)", code)
		}
		if r.admin && (r.resources != nil || r.resolved != "" || r.open != "") {
			t.Errorf("request code %d: an admin rule needs nothing else", code)
		}
		if r.open != "" && (r.resources != nil || r.resolved != "") {
			t.Errorf("request code %d: open, yet checks something", code)
		}
	}
	for code := range aclRules {
		if !registered[code] {
			t.Errorf("aclRules has a rule for code %d, which the broker does not serve", code)
		}
	}
}

// TestCodeWithoutRuleRefused: a request code served without a rule is
// refused under aclEnable, even for an admin.
func TestCodeWithoutRuleRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte("accounts:\n  - accessKey: adminKey\n    secretKey: adminSecret\n    admin: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startInternal(t, func(o *Options) { o.AclEnable, o.PlainAclFile = true, path })
	const unruled int16 = 9999
	var ran atomic.Bool
	b.server.HandleFunc(unruled, func(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
		ran.Store(true)
		return protocol.NewResponse(req, protocol.Success, "")
	})
	cl := remoting.NewClient(remoting.ClientOptions{RequestHook: func(req *protocol.Command) {
		req.SetExt(acl.FieldAccessKey, "adminKey")
		req.SetExt(acl.FieldSignature, acl.Sign(req.ExtFields, req.Body, "adminSecret"))
	}})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, b.Addr(), protocol.NewRequest(unruled, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != protocol.NoPermission || !strings.Contains(resp.Remark, "no access rule") || ran.Load() {
		t.Fatalf("code without a rule: response %d %q, handler ran %v", resp.Code, resp.Remark, ran.Load())
	}
}
