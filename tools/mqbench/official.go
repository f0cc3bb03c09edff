package main

import (
	"context"
	"fmt"
	"sync/atomic"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// officialVersion is the official client's version this driver is built
// with (tools/mqbench/go.mod pins it).
const officialVersion = "rocketmq-client-go v2.1.2"

// officialDriver drives Tide (or any RocketMQ 4.x broker) with the
// official Go client, github.com/apache/rocketmq-client-go/v2: the client
// most RocketMQ users bring, so the broker's cost per message is shown
// with a client Tide does not control. Topics are created and deleted
// through pkg/mqclient's Admin (tideDriver); only sending and consuming go
// through the official client.
type officialDriver struct {
	*tideDriver
	seq atomic.Int64 // instance names: the official client shares one
	// MQClientInstance per instance name within a process, and a shared
	// instance would serialise producers the run means to be independent
}

func openOfficial(ctx context.Context, cfg Config) (Driver, error) {
	rlog.SetLogLevel("error") // it logs every route refresh at info level
	d, err := openTide(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &officialDriver{tideDriver: d.(*tideDriver)}, nil
}

func (d *officialDriver) Versions(ctx context.Context) (string, string) {
	s, _ := d.tideDriver.Versions(ctx)
	return s, officialVersion
}

func (d *officialDriver) instance(kind string) string {
	return fmt.Sprintf("mqbench-%s-%d", kind, d.seq.Add(1))
}

func (d *officialDriver) Producer(ctx context.Context, cfg Config) (Producer, error) {
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{d.namesrv})),
		producer.WithGroupName(cfg.Prefix+"-p"),
		producer.WithInstanceName(d.instance("p")),
		producer.WithRetry(2),
	)
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("start official producer: %w", err)
	}
	return officialProducer{p}, nil
}

func (d *officialDriver) Consume(ctx context.Context, cfg Config, topics []string, group string, deliver func([][]byte)) (func(), error) {
	pull := int32(min(cfg.Pull, 1024))
	var cons []rocketmq.PushConsumer
	stop := func() {
		for _, c := range cons {
			_ = c.Shutdown()
		}
	}
	h := func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		bodies := make([][]byte, len(msgs))
		for i, m := range msgs {
			bodies[i] = m.Body
		}
		deliver(bodies)
		return consumer.ConsumeSuccess, nil
	}
	for range cfg.Consumers {
		c, err := rocketmq.NewPushConsumer(
			consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{d.namesrv})),
			consumer.WithGroupName(group),
			consumer.WithInstance(d.instance("c")),
			consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
			consumer.WithPullBatchSize(pull),
			consumer.WithConsumeMessageBatchMaxSize(int(pull)),
		)
		if err != nil {
			stop()
			return nil, err
		}
		for _, t := range topics {
			if err := c.Subscribe(t, consumer.MessageSelector{}, h); err != nil {
				stop()
				return nil, err
			}
		}
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("start official consumer: %w", err)
		}
		cons = append(cons, c)
	}
	return stop, nil
}

type officialProducer struct{ p rocketmq.Producer }

// result turns a send result that is not SEND_OK into an error: the
// official client reports SLAVE_NOT_AVAILABLE and the flush timeouts as a
// result, not as an error, and the run must not count them as stored.
func result(r *primitive.SendResult, err error) error {
	if err != nil {
		return err
	}
	if r.Status != primitive.SendOK {
		return fmt.Errorf("send status %d", r.Status)
	}
	return nil
}

func (o officialProducer) Send(ctx context.Context, topic string, body []byte) error {
	return result(o.p.SendSync(ctx, primitive.NewMessage(topic, body)))
}

func (o officialProducer) SendAsync(ctx context.Context, topic string, body []byte, done func(error)) error {
	return o.p.SendAsync(ctx, func(_ context.Context, r *primitive.SendResult, err error) {
		done(result(r, err))
	}, primitive.NewMessage(topic, body))
}

func (o officialProducer) SendOneway(ctx context.Context, topic string, body []byte) error {
	return o.p.SendOneWay(ctx, primitive.NewMessage(topic, body))
}

func (o officialProducer) SendBatch(ctx context.Context, topic string, bodies [][]byte) error {
	msgs := make([]*primitive.Message, len(bodies))
	for i, b := range bodies {
		msgs[i] = primitive.NewMessage(topic, b)
	}
	return result(o.p.SendSync(ctx, msgs...))
}

func (o officialProducer) Close() error { return o.p.Shutdown() }
