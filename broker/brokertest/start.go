// Package brokertest starts in-process brokers for tests.
package brokertest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
)

// Start runs a master broker on 127.0.0.1:0 with its store in a temporary
// directory (small segments), registered with the given NameServers, and
// applies opts on top. It returns once the broker serves requests and has
// registered; the broker is shut down when the test ends. Set
// TIDE_TEST_LOG=1 to see the broker's log.
func Start(t testing.TB, namesrv string, opts ...func(*broker.Options)) *broker.Broker {
	t.Helper()
	o := broker.DefaultOptions()
	o.BrokerName = "broker-a"
	o.ListenAddr = "127.0.0.1"
	o.ListenPort = 0
	o.HAListenPort = 0
	o.BrokerIP1 = "127.0.0.1"
	o.NamesrvAddr = namesrv
	o.Store.StorePathRootDir = t.TempDir()
	o.Store.MappedFileSizeCommitLog = 64 << 20
	o.Store.MappedFileSizeConsumeQueue = 20 * 10000
	o.RegisterNameServerPeriod = 1000
	for _, f := range opts {
		f(&o)
	}
	var w io.Writer = io.Discard
	if os.Getenv("TIDE_TEST_LOG") != "" {
		w = os.Stderr
	}
	b, err := broker.New(o, slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatalf("brokertest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatalf("brokertest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("brokertest: shutdown: %v", err)
		}
	})
	return b
}
