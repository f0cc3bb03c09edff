package mqclient_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/tidetest"
)

// TestProducerRecoversWhenMasterReturns stops the master of a master/slave
// pair, waits until the producer has seen the route without a master (no
// writable queue: the slave still serves the topic), restarts the master
// on the same address and measures how long after the master registered
// with the NameServer the producer's sends succeed again. The periodic
// route refresh is left at its 30 s default, so only the on-demand refresh
// (a send that finds no writable queue re-asks the NameServer, at most
// once per 300 ms per topic) can make it quick. Typical: well under 0.5 s
// (one throttle gap plus a send); the bound is 5 s so that a loaded
// machine does not flake, and still far below the 30 s of the periodic
// refresh.
func TestProducerRecoversWhenMasterReturns(t *testing.T) {
	ns := nameservertest.Start(t)
	port := freePort(t)
	store := t.TempDir()
	master := func(o *broker.Options) {
		o.ListenPort = port
		o.Store.StorePathRootDir = store
	}
	m := brokertest.Start(t, ns, master)
	brokertest.Start(t, ns, func(o *broker.Options) {
		o.BrokerID = 1
		o.BrokerRole = "SLAVE"
	})
	e := &env{&tidetest.Env{NameServer: ns, Broker: m}}
	e.Admin = tidetest.Admin(t, e.Options()...)
	topic := e.Topic(t, 4)

	p, err := mqclient.NewProducer(mqclient.WithNameServers(ns), mqclient.WithLogger(tidetest.Logger()),
		mqclient.WithSendTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	send := func() error {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := p.Send(sctx, &mqclient.Message{Topic: topic, Body: []byte("x")})
		return err
	}
	if err := send(); err != nil {
		t.Fatalf("send before the restart: %v", err)
	}

	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := m.Shutdown(sctx); err != nil {
		t.Fatalf("stop master: %v", err)
	}
	cancel()
	// The slave keeps the topic's route alive without a master: the
	// producer must learn that (and fail fast) before the master returns.
	tidetest.WaitFor(t, 15*time.Second, "a send to fail with no writable queue", func() bool {
		return errors.Is(send(), mqclient.ErrTopicNotFound)
	})

	var firstOK atomic.Int64 // unix nanos of the first successful send after the restart
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if send() == nil {
				firstOK.Store(time.Now().UnixNano())
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	defer func() { close(stop); <-done }()

	brokertest.Start(t, ns, master) // returns once the master has registered
	registered := time.Now()
	tidetest.WaitFor(t, 5*time.Second, "a send to succeed after the master registered", func() bool {
		return firstOK.Load() != 0
	})
	took := max(time.Unix(0, firstOK.Load()).Sub(registered), 0)
	t.Logf("sends succeed %v after the master registered (route refresh interval 30 s)", took.Round(time.Millisecond))
}
