package mqtest

import (
	"context"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Consume starts a test's own push consumer of group (opts: its
// NameServers, credentials and other options) with h subscribed to
// topic's messages matching expr, failing the test when it cannot; the
// consumer shuts down when the test ends (bounded by 10 s). It stands in
// for another service, or records what a service sent.
func Consume(t testing.TB, group string, opts []mqclient.Option, topic, expr string, h mqclient.Handler) {
	t.Helper()
	c, err := mqclient.NewPushConsumer(group, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, expr, h); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Shutdown(ctx)
	})
}
