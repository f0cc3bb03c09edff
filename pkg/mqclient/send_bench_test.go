package mqclient_test

import (
	"context"
	"sync"
	"testing"

	"github.com/tidemq/tide/pkg/mqclient"
)

// The send benchmarks run against the in-process broker of pkg/tidetest,
// so allocs/op and B/op count the broker's work per message as well as
// the client's: compare them between builds of the client, not as the
// client's own figure. ns/op is per message.

// sendBench starts the harness and a producer of 1 KiB messages to a
// fresh topic of 8 queues.
func sendBench(b *testing.B) (*mqclient.Producer, func() *mqclient.Message) {
	e := startEnv(b)
	topic := e.Topic(b, 8)
	body := make([]byte, 1024)
	return e.Producer(b), func() *mqclient.Message { return &mqclient.Message{Topic: topic, Body: body} }
}

// BenchmarkSendSync is one goroutine's Sends of 1 KiB: each finds its
// queue idle and goes alone (auto-batching does not touch it).
func BenchmarkSendSync(b *testing.B) {
	p, msg := sendBench(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Send(ctx, msg()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendSyncConcurrent is 64 goroutines' Sends of 1 KiB (mqbench's
// workload (e) unpaced): concurrent Sends to a busy queue go auto-batched.
func BenchmarkSendSyncConcurrent(b *testing.B) {
	p, msg := sendBench(b)
	ctx := context.Background()
	b.SetParallelism(32) // x GOMAXPROCS 2 on the bench machine: 64 senders
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := p.Send(ctx, msg()); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkSendAsync is SendAsync of 1 KiB with 64 in flight (mqbench's
// workload (b)): the messages go auto-batched, each batch stamped.
func BenchmarkSendAsync(b *testing.B) {
	p, msg := sendBench(b)
	ctx := context.Background()
	window := make(chan struct{}, 64)
	var wg sync.WaitGroup
	done := func(_ *mqclient.SendResult, err error) {
		if err != nil {
			b.Error(err)
		}
		<-window
		wg.Done()
	}
	b.ReportAllocs()
	for b.Loop() {
		window <- struct{}{}
		wg.Add(1)
		if err := p.SendAsync(ctx, msg(), done); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
}
