package main

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
)

// Benchmarks of the whole send and consume paths, client and broker in one
// process so that one -cpuprofile shows both:
//
//	go test -run '^$' -bench 'BenchmarkTide' -benchmem -cpuprofile cpu.out .
//	go tool pprof -top -nodecount 40 cpu.out

func benchEnv(b *testing.B, flush string) (string, *mqclient.Producer) {
	ns := nameservertest.Start(b)
	brokertest.Start(b, ns, func(o *broker.Options) {
		o.Store.FlushDiskType = flush
		o.Store.MappedFileSizeCommitLog = 256 << 20
	})
	p, err := mqclient.NewProducer(mqclient.WithNameServers(ns))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	if _, err := p.Send(ctx, &mqclient.Message{Topic: "bench", Body: []byte("warm")}); err != nil {
		b.Fatal(err)
	}
	return ns, p
}

func BenchmarkTideSend(b *testing.B) {
	for _, flush := range []string{"ASYNC_FLUSH", "SYNC_FLUSH"} {
		for _, mode := range []string{"sync", "async64", "batch64"} {
			b.Run(fmt.Sprintf("%s/%s", flush, mode), func(b *testing.B) {
				_, p := benchEnv(b, flush)
				ctx := context.Background()
				body := make([]byte, 1024)
				b.SetBytes(1024)
				b.ReportAllocs()
				b.ResetTimer()
				switch mode {
				case "sync":
					for range b.N {
						if _, err := p.Send(ctx, &mqclient.Message{Topic: "bench", Body: body}); err != nil {
							b.Fatal(err)
						}
					}
				case "async64":
					window := make(chan struct{}, 64)
					var wg sync.WaitGroup
					for range b.N {
						window <- struct{}{}
						wg.Add(1)
						err := p.SendAsync(ctx, &mqclient.Message{Topic: "bench", Body: body}, func(_ *mqclient.SendResult, err error) {
							if err != nil {
								b.Error(err)
							}
							<-window
							wg.Done()
						})
						if err != nil {
							b.Fatal(err)
						}
					}
					wg.Wait()
				case "batch64":
					msgs := make([]*mqclient.Message, 64)
					for i := range msgs {
						msgs[i] = &mqclient.Message{Topic: "bench", Body: body}
					}
					for i := 0; i < b.N; i += 64 {
						if _, err := p.SendBatch(ctx, msgs); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}

func BenchmarkTideConsume(b *testing.B) {
	ns, p := benchEnv(b, "ASYNC_FLUSH")
	ctx := context.Background()
	body := make([]byte, 1024)
	msgs := make([]*mqclient.Message, 64)
	for i := range msgs {
		msgs[i] = &mqclient.Message{Topic: "bench", Body: body}
	}
	for i := 0; i < b.N; i += 64 {
		if _, err := p.SendBatch(ctx, msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	done := make(chan struct{})
	var n int
	var mu sync.Mutex
	c, err := mqclient.NewPushConsumer("bench-g", mqclient.WithNameServers(ns), mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
		mqclient.WithPullBatchSize(256), mqclient.WithConsumeBatchSize(256))
	if err != nil {
		b.Fatal(err)
	}
	_ = c.SubscribeBatch("bench", "*", func(_ context.Context, ms []*mqclient.MessageExt) error {
		mu.Lock()
		n += len(ms)
		if n >= b.N && done != nil {
			close(done)
			done = nil
		}
		mu.Unlock()
		return nil
	})
	wait := done
	cpu0 := selfCPU()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	<-wait
	b.StopTimer()
	cpu := selfCPU() - cpu0
	_ = c.Shutdown(ctx)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	// CPU (user+system, client and broker) per message: what a shared,
	// noisy machine distorts least.
	b.ReportMetric(cpu*1e9/float64(b.N), "cpu-ns/msg")
}
