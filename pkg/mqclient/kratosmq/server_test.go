package kratosmq_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kratos/kratos/v2"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/pkg/tidetest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestAppStopDrainsInFlight runs a consumer inside a kratos.App against a
// real broker: a message is consumed, and stopping the app waits for the
// slow handler that is still running, then commits its offset (the
// periodic commit is disabled, so only Stop can have committed it).
func TestAppStopDrainsInFlight(t *testing.T) {
	e := tidetest.Start(t)
	ns, admin := e.NameServer, e.Admin
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topic := e.CreateTopic(t, "kratosmq-", mqclient.TopicConfig{Queues: 2})

	var handled, finished atomic.Int32
	started := make(chan struct{})
	stopping := make(chan struct{})
	h := func(ctx context.Context, m *mqclient.MessageExt) error {
		if handled.Add(1) == 1 {
			close(started)
			<-stopping
			// Simulated slow work that is still running after app.Stop.
			select {
			case <-time.After(300 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		finished.Add(1)
		return nil
	}
	group := "kratosmq-drain"
	srv := kratosmq.NewServer(kratosmq.WithLogger(quiet()), kratosmq.WithClientOptions(
		mqclient.WithNameServers(ns), mqclient.WithLogger(quiet()),
		mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
		mqclient.WithRebalanceInterval(500*time.Millisecond),
		mqclient.WithCommitInterval(time.Hour)))
	if err := srv.Subscribe(group, topic, "*", h); err != nil {
		t.Fatal(err)
	}
	app := kratos.New(kratos.Name("kratosmq-test"), kratos.Server(srv), kratos.StopTimeout(10*time.Second))
	ran := make(chan error, 1)
	go func() { ran <- app.Run() }()

	p, err := mqclient.NewProducer(mqclient.WithNameServers(ns), mqclient.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(ctx)
	if _, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("order-1")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("message not consumed")
	}
	if err := app.Stop(); err != nil {
		t.Fatal(err)
	}
	close(stopping)
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("app.Run: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("app.Run did not return")
	}
	if n := finished.Load(); n != 1 || handled.Load() != 1 {
		t.Fatalf("after Run returned: finished %d handled %d, want 1 and 1", n, handled.Load())
	}
	// Invariant: the drained message's offset is committed, so nothing is
	// redelivered to the group.
	prog, err := admin.ConsumerProgress(ctx, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, q := range prog {
		if q.BrokerOffset > 0 && q.ConsumerOffset != q.BrokerOffset {
			t.Errorf("queue %v: committed %d, broker %d", q.Queue, q.ConsumerOffset, q.BrokerOffset)
		}
		total += q.BrokerOffset
	}
	if total != 1 {
		t.Fatalf("broker holds %d messages, want 1", total)
	}
	if err := srv.Start(ctx); !errors.Is(err, kratosmq.ErrStopped) {
		t.Fatalf("Start after Stop: %v, want ErrStopped", err)
	}
}

func TestStartFailureStopsStarted(t *testing.T) {
	ns := tidetest.Start(t).NameServer
	srv := kratosmq.NewServer(kratosmq.WithLogger(quiet()),
		kratosmq.WithClientOptions(mqclient.WithNameServers(ns), mqclient.WithLogger(quiet())))
	if err := srv.Subscribe("g-missing", "no-such-topic", "*", func(context.Context, *mqclient.MessageExt) error { return nil }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err == nil {
		t.Fatal("Start succeeded on a topic without route")
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestTaskLifecycle(t *testing.T) {
	ctx := context.Background()
	t.Run("stop before start", func(t *testing.T) {
		var calls atomic.Int32
		task := kratosmq.Runner("x", func(context.Context) error { calls.Add(1); return nil },
			func(context.Context) error { calls.Add(10); return nil })
		if err := task.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if err := task.Start(ctx); !errors.Is(err, kratosmq.ErrStopped) {
			t.Fatalf("Start after Stop: %v", err)
		}
		if calls.Load() != 0 {
			t.Fatalf("calls %d, want none", calls.Load())
		}
	})
	t.Run("start once stop once", func(t *testing.T) {
		var starts, stops atomic.Int32
		task := kratosmq.Runner("x", func(context.Context) error { starts.Add(1); return nil },
			func(context.Context) error { stops.Add(1); return nil })
		if err := task.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := task.Start(ctx); !errors.Is(err, kratosmq.ErrStarted) {
			t.Fatalf("second Start: %v", err)
		}
		task.Stop(ctx)
		task.Stop(ctx)
		if starts.Load() != 1 || stops.Load() != 1 {
			t.Fatalf("starts %d stops %d", starts.Load(), stops.Load())
		}
	})
	t.Run("loop cancelled and awaited", func(t *testing.T) {
		var exited atomic.Bool
		task := kratosmq.Loop("sweeper", func(ctx context.Context) error {
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond) // cleanup work Stop must wait for
			exited.Store(true)
			return ctx.Err()
		})
		if err := task.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := task.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if !exited.Load() {
			t.Fatal("Stop returned before the loop exited")
		}
	})
	t.Run("loop error reported", func(t *testing.T) {
		boom := errors.New("boom")
		task := kratosmq.Loop("x", func(context.Context) error { return boom })
		task.Start(ctx)
		if err := task.Stop(ctx); !errors.Is(err, boom) {
			t.Fatalf("Stop: %v", err)
		}
	})
	t.Run("inside an app", func(t *testing.T) {
		var stopped atomic.Bool
		ran := make(chan struct{})
		task := kratosmq.Loop("loop", func(ctx context.Context) error {
			close(ran)
			<-ctx.Done()
			stopped.Store(true)
			return nil
		})
		app := kratos.New(kratos.Server(task))
		done := make(chan error, 1)
		go func() { done <- app.Run() }()
		<-ran
		app.Stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !stopped.Load() {
			t.Fatal("Run returned before the loop stopped")
		}
	})
}
