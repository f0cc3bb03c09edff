// Package brokertest starts in-process brokers for tests.
package brokertest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
)

// Start runs a master broker on 127.0.0.1:0 with its store in a temporary
// directory (small segments), registered with the given NameServers, and
// applies opts on top. It returns once the broker serves requests and has
// registered; the broker is shut down when the test ends. Set
// TIDE_TEST_LOG=1 to see the broker's log, and TIDE_BROKER_EXTENSIONS=off
// to run it without Tide extensions (broker.Options.TideExtensions), as
// the plain RocketMQ 4.9 broker an application may meet in production;
// opts are applied after that and may turn them back on.
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
	o.TideExtensions = Extensions()
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

// ExtensionsEnv names the environment variable that turns Tide extensions
// off in every broker Start runs: TIDE_BROKER_EXTENSIONS=off (or false,
// 0). Suites run once with it and once without to prove that what they
// test works on a plain RocketMQ broker, or refuses clearly.
const ExtensionsEnv = "TIDE_BROKER_EXTENSIONS"

// Extensions reports whether brokers started by Start serve Tide
// extensions (ExtensionsEnv is unset or on), for tests whose expectations
// differ on a plain broker.
func Extensions() bool {
	switch strings.ToLower(os.Getenv(ExtensionsEnv)) {
	case "off", "false", "0", "no":
		return false
	}
	return true
}
