package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
)

// tideDriver drives Tide (or any RocketMQ 4.x broker) with pkg/mqclient.
type tideDriver struct {
	namesrv string
	admin   *mqclient.Admin
	log     *slog.Logger
	version string // -server-version
}

func openTide(ctx context.Context, cfg Config) (Driver, error) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := mqclient.NewAdmin(mqclient.WithNameServers(cfg.Addr), mqclient.WithLogger(log))
	if err != nil {
		return nil, err
	}
	if err := a.Start(ctx); err != nil {
		return nil, err
	}
	return &tideDriver{namesrv: cfg.Addr, admin: a, log: log, version: cfg.ServerVersion}, nil
}

// headerOptions is -headers: pkg/mqclient's default binary header, or
// JSON.
func headerOptions(cfg Config) []mqclient.Option {
	if cfg.Headers == "json" {
		return []mqclient.Option{mqclient.WithJSONHeaders()}
	}
	return nil
}

func (d *tideDriver) Versions(ctx context.Context) (string, string) {
	v := d.version
	if v == "" {
		v = "(unknown build)"
	}
	return "tide " + v, "pkg/mqclient"
}

func (d *tideDriver) Prepare(ctx context.Context, topics []string, queues int) error {
	// A broker that just started may not have registered yet: wait for
	// the NameServer to know one (bounded), instead of failing the run.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		ci, err := d.admin.ClusterInfo(wctx)
		if err == nil && len(ci.BrokerAddrTable) > 0 {
			break
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("no broker registered with the NameServer: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	for _, t := range topics {
		if err := d.admin.CreateTopic(ctx, t, mqclient.TopicConfig{Queues: queues}); err != nil {
			return fmt.Errorf("create topic %s: %w", t, err)
		}
	}
	for _, t := range topics {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := d.admin.WaitTopic(wctx, t)
		cancel()
		if err != nil {
			return fmt.Errorf("wait for topic %s: %w", t, err)
		}
	}
	return nil
}

func (d *tideDriver) Producer(ctx context.Context, cfg Config) (Producer, error) {
	p, err := mqclient.NewProducer(append(headerOptions(cfg), mqclient.WithNameServers(d.namesrv), mqclient.WithLogger(d.log),
		mqclient.WithProducerGroup(cfg.Prefix+"-p"), mqclient.WithIdempotence(!cfg.NoIdempotence),
		mqclient.WithAutoBatch(cfg.Linger, cfg.BatchBytes))...)
	if err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	return tideProducer{p}, nil
}

func (d *tideDriver) Consume(ctx context.Context, cfg Config, topics []string, group string, deliver func([][]byte)) (func(), error) {
	pull := min(cfg.Pull, 1024)
	var cons []*mqclient.PushConsumer
	stop := func() {
		for _, c := range cons {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = c.Shutdown(sctx)
			cancel()
		}
	}
	for i := range cfg.Consumers {
		c, err := mqclient.NewPushConsumer(group, append(headerOptions(cfg), mqclient.WithNameServers(d.namesrv), mqclient.WithLogger(d.log),
			mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst), mqclient.WithPullBatchSize(pull),
			mqclient.WithConsumeBatchSize(pull), mqclient.WithInstanceName(fmt.Sprintf("%s-c%d", group, i)),
			mqclient.WithFlowControl(max(1024, 4*pull), 64<<20), mqclient.WithRebalanceInterval(time.Second))...)
		if err != nil {
			stop()
			return nil, err
		}
		h := func(_ context.Context, msgs []*mqclient.MessageExt) error {
			bodies := make([][]byte, len(msgs))
			for i, m := range msgs {
				bodies[i] = m.Body
			}
			deliver(bodies)
			return nil
		}
		for _, t := range topics {
			if err := c.SubscribeBatch(t, "*", h); err != nil {
				stop()
				return nil, err
			}
		}
		if err := c.Start(ctx); err != nil {
			stop()
			return nil, err
		}
		cons = append(cons, c)
	}
	return stop, nil
}

func (d *tideDriver) Cleanup(ctx context.Context, topics []string) error {
	for _, t := range topics {
		if err := d.admin.DeleteTopic(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

func (d *tideDriver) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return d.admin.Shutdown(ctx)
}

type tideProducer struct{ p *mqclient.Producer }

func (t tideProducer) Send(ctx context.Context, topic string, body []byte) error {
	_, err := t.p.Send(ctx, &mqclient.Message{Topic: topic, Body: body})
	return err
}

func (t tideProducer) SendAsync(ctx context.Context, topic string, body []byte, done func(error)) error {
	return t.p.SendAsync(ctx, &mqclient.Message{Topic: topic, Body: body}, func(_ *mqclient.SendResult, err error) { done(err) })
}

func (t tideProducer) SendOneway(ctx context.Context, topic string, body []byte) error {
	return t.p.SendOneway(ctx, &mqclient.Message{Topic: topic, Body: body})
}

func (t tideProducer) SendBatch(ctx context.Context, topic string, bodies [][]byte) error {
	msgs := make([]*mqclient.Message, len(bodies))
	for i, b := range bodies {
		msgs[i] = &mqclient.Message{Topic: topic, Body: b}
	}
	_, err := t.p.SendBatch(ctx, msgs)
	return err
}

func (t tideProducer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return t.p.Shutdown(ctx)
}
