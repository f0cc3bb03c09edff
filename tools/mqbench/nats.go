package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsDriver drives NATS JetStream with nats.go: one stream per topic with
// file storage (durability is the server's sync_interval setting), one
// subject per stream.
type natsDriver struct {
	url string
	nc  *nats.Conn
	js  jetstream.JetStream
}

func openNATS(ctx context.Context, cfg Config) (Driver, error) {
	nc, err := nats.Connect(cfg.Addr)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &natsDriver{url: cfg.Addr, nc: nc, js: js}, nil
}

func (d *natsDriver) Versions(ctx context.Context) (string, string) {
	return "nats-server " + d.nc.ConnectedServerVersion(), "nats.go " + nats.Version
}

func (d *natsDriver) Prepare(ctx context.Context, topics []string, queues int) error {
	for _, t := range topics {
		_, err := d.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: t, Subjects: []string{t},
			Storage: jetstream.FileStorage, Retention: jetstream.LimitsPolicy})
		if err != nil {
			return fmt.Errorf("create stream %s: %w", t, err)
		}
	}
	return nil
}

func (d *natsDriver) Producer(ctx context.Context, cfg Config) (Producer, error) {
	nc, err := nats.Connect(d.url)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(max(4000, 2*cfg.Inflight*cfg.Batch)))
	if err != nil {
		nc.Close()
		return nil, err
	}
	p := &natsProducer{nc: nc, js: js, acks: make(chan natsPending, 1<<16)}
	p.wg.Go(p.collect)
	return p, nil
}

type natsPending struct {
	fut  jetstream.PubAckFuture
	done func(error)
}

type natsProducer struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	acks chan natsPending // futures in publish order, answered by collect
	wg   sync.WaitGroup
	once sync.Once
}

// collect waits for the futures in order (JetStream acks arrive in order
// on one connection) and calls their callbacks.
func (p *natsProducer) collect() {
	for pa := range p.acks {
		select {
		case <-pa.fut.Ok():
			pa.done(nil)
		case err := <-pa.fut.Err():
			pa.done(err)
		}
	}
}

func (p *natsProducer) Send(ctx context.Context, topic string, body []byte) error {
	_, err := p.js.Publish(ctx, topic, body)
	return err
}

func (p *natsProducer) SendAsync(ctx context.Context, topic string, body []byte, done func(error)) error {
	fut, err := p.js.PublishAsync(topic, body)
	if err != nil {
		return err
	}
	p.acks <- natsPending{fut, done}
	return nil
}

func (p *natsProducer) SendOneway(ctx context.Context, topic string, body []byte) error {
	// Core NATS publish on the stream's subject: stored, never acknowledged.
	return p.nc.Publish(topic, body)
}

// SendBatch publishes the bodies asynchronously and waits for every ack
// (JetStream 2.9/2.10 have no batch publish; this is its pipelined form).
func (p *natsProducer) SendBatch(ctx context.Context, topic string, bodies [][]byte) error {
	futs := make([]jetstream.PubAckFuture, 0, len(bodies))
	for _, b := range bodies {
		f, err := p.js.PublishAsync(topic, b)
		if err != nil {
			return err
		}
		futs = append(futs, f)
	}
	var first error
	for _, f := range futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			if first == nil {
				first = err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return first
}

func (p *natsProducer) Close() error {
	p.once.Do(func() { close(p.acks) })
	p.wg.Wait()
	p.nc.Close()
	return nil
}

// Consume fetches batches with a durable pull consumer per stream
// (AckAll: one ack per batch, like a committed offset).
func (d *natsDriver) Consume(ctx context.Context, cfg Config, topics []string, group string, deliver func([][]byte)) (func(), error) {
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stop := func() { cancel(); wg.Wait() }
	for range cfg.Consumers {
		nc, err := nats.Connect(d.url)
		if err != nil {
			stop()
			return nil, err
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			stop()
			return nil, err
		}
		for _, t := range topics {
			cons, err := js.CreateOrUpdateConsumer(ctx, t, jetstream.ConsumerConfig{Durable: group,
				AckPolicy: jetstream.AckAllPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
				MaxAckPending: max(1000, 4*cfg.Pull)})
			if err != nil {
				nc.Close()
				stop()
				return nil, fmt.Errorf("consumer on %s: %w", t, err)
			}
			wg.Go(func() {
				bodies := make([][]byte, 0, cfg.Pull)
				for cctx.Err() == nil {
					batch, err := cons.Fetch(cfg.Pull, jetstream.FetchMaxWait(500*time.Millisecond))
					if err != nil {
						continue
					}
					bodies = bodies[:0]
					var last jetstream.Msg
					for m := range batch.Messages() {
						bodies = append(bodies, m.Data())
						last = m
					}
					if last != nil {
						deliver(bodies)
						_ = last.Ack()
					}
					if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && cctx.Err() == nil {
						time.Sleep(10 * time.Millisecond) // back off after a failed fetch
					}
				}
			})
		}
		wg.Go(func() { <-cctx.Done(); _ = nc.Flush(); nc.Close() })
	}
	return stop, nil
}

func (d *natsDriver) Cleanup(ctx context.Context, topics []string) error {
	for _, t := range topics {
		if err := d.js.DeleteStream(ctx, t); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return err
		}
	}
	return nil
}

func (d *natsDriver) Close() error { d.nc.Close(); return nil }
