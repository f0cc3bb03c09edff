// Package nameservertest starts in-process NameServers for tests.
package nameservertest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidemq/tide/nameserver"
)

// Start runs a NameServer on 127.0.0.1:0 with its KV file in a temporary
// directory and a logger that discards output, applies opts on top of
// those options, waits until it accepts connections and returns its
// address. The NameServer is shut down when the test ends. It fails the
// test on any error.
func Start(t testing.TB, opts ...func(*nameserver.Options)) string {
	t.Helper()
	o := nameserver.DefaultOptions()
	o.ListenAddr = "127.0.0.1:0"
	o.KVConfigPath = filepath.Join(t.TempDir(), "kvConfig.json")
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, f := range opts {
		f(&o)
	}
	ns, err := nameserver.New(o)
	if err != nil {
		t.Fatalf("nameservertest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ns.Start(ctx); err != nil {
		t.Fatalf("nameservertest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ns.Shutdown(ctx); err != nil {
			t.Errorf("nameservertest: shutdown: %v", err)
		}
	})
	addr := ns.Addr()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr
		}
		if ctx.Err() != nil {
			t.Fatalf("nameservertest: %s not reachable: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
