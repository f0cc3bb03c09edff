package mqclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/mqtest"
	"github.com/tidemq/tide/pkg/tidetest"
)

// TestConformance runs the mqtest suite against the in-process broker,
// claiming the features the broker currently serves (probed once).
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	ns := nameservertest.Start(t)
	dir := t.TempDir()
	port := freePort(t) // restart binds it again
	b := brokertest.Start(t, ns, func(o *broker.Options) { o.Store.StorePathRootDir = dir; o.ListenPort = port })
	e := &env{&tidetest.Env{NameServer: ns, Broker: b}}
	e.Admin = tidetest.Admin(t, e.Options()...)
	restart := func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Broker.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		e.Broker = brokertest.Start(t, ns, func(o *broker.Options) {
			o.Store.StorePathRootDir = dir
			o.ListenPort = port
		})
	}
	mqtest.Run(t, mqtest.Config{
		NameServers: []string{ns},
		Options:     []mqclient.Option{mqclient.WithLogger(tidetest.Logger())},
		Features: mqtest.Features{
			Ordered:   true,
			Broadcast: true,
			Retry:     e.probe(t, "sendback"),
			Delay:     probeDelay(t, e),
			Timer:     probeTimer(t, e),
			Restart:   restart,
		},
	})
}

// probeTimer reports whether a message with DeliverAt 1.5 s ahead is held
// (a broker without timers delivers it at once).
func probeTimer(t *testing.T, e *env) bool {
	return probeHeld(t, e, "g-probe-timer", &mqclient.Message{Body: []byte("probe"), DeliverAt: time.Now().Add(1500 * time.Millisecond)}, 1200*time.Millisecond)
}

// probeDelay reports whether a delay-level-1 message is held about a
// second (a broker without delay support delivers it at once).
func probeDelay(t *testing.T, e *env) bool {
	return probeHeld(t, e, "g-probe-delay", &mqclient.Message{Body: []byte("probe"), DelayLevel: 1}, 900*time.Millisecond)
}

// probeHeld sends m to a new topic and reports whether it arrived no
// earlier than min.
func probeHeld(t *testing.T, e *env, group string, m *mqclient.Message, min time.Duration) bool {
	topic := e.Topic(t, 1)
	m.Topic = topic
	p := e.Producer(t)
	got := make(chan time.Duration, 1)
	start := time.Now()
	e.Consumer(t, group, topic, func(ctx context.Context, m *mqclient.MessageExt) error {
		select {
		case got <- time.Since(start):
		default:
		}
		return nil
	}, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))
	if _, err := p.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		return d >= min
	case <-time.After(10 * time.Second):
		return false
	}
}
