package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisDriver drives Redis Streams with go-redis: XADD per message, one
// stream per topic, consumer groups with XREADGROUP + XACK. Durability is
// the server's appendfsync setting.
type redisDriver struct {
	addr string
	rdb  *redis.Client
}

func openRedis(ctx context.Context, cfg Config) (Driver, error) {
	rdb := redis.NewClient(&redis.Options{Addr: cfg.Addr})
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, err
	}
	return &redisDriver{addr: cfg.Addr, rdb: rdb}, nil
}

func (d *redisDriver) Versions(ctx context.Context) (string, string) {
	v := "?"
	if info, err := d.rdb.Info(ctx, "server").Result(); err == nil {
		for _, l := range strings.Split(info, "\n") {
			if s, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
				v = s
			}
		}
	}
	return "redis-server " + v, "go-redis " + redis.Version()
}

func (d *redisDriver) Prepare(ctx context.Context, topics []string, queues int) error {
	return d.rdb.Del(ctx, topics...).Err()
}

func (d *redisDriver) Producer(ctx context.Context, cfg Config) (Producer, error) {
	rdb := redis.NewClient(&redis.Options{Addr: d.addr, PoolSize: cfg.Inflight + 1})
	p := &redisProducer{rdb: rdb, reqs: make(chan redisReq, cfg.Inflight+1), maxPipe: max(cfg.Inflight, 1)}
	p.wg.Go(p.pipeline)
	return p, nil
}

type redisReq struct {
	topic string
	body  []byte
	done  func(error)
}

type redisProducer struct {
	rdb     *redis.Client
	reqs    chan redisReq // async sends, pipelined by one goroutine on one connection
	maxPipe int
	wg      sync.WaitGroup
	once    sync.Once
}

func xadd(topic string, body []byte) *redis.XAddArgs {
	return &redis.XAddArgs{Stream: topic, Values: []any{"d", body}}
}

// pipeline sends whatever async requests are waiting as one pipeline, so
// that up to maxPipe are in flight on one connection (what -inflight means
// for the other targets).
func (p *redisProducer) pipeline() {
	batch := make([]redisReq, 0, p.maxPipe)
	for first := range p.reqs {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < p.maxPipe {
			select {
			case r, ok := <-p.reqs:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		pipe := p.rdb.Pipeline()
		cmds := make([]*redis.StringCmd, len(batch))
		for i, r := range batch {
			cmds[i] = pipe.XAdd(context.Background(), xadd(r.topic, r.body))
		}
		_, _ = pipe.Exec(context.Background())
		for i, r := range batch {
			r.done(cmds[i].Err())
		}
	}
}

func (p *redisProducer) Send(ctx context.Context, topic string, body []byte) error {
	return p.rdb.XAdd(ctx, xadd(topic, body)).Err()
}

func (p *redisProducer) SendAsync(ctx context.Context, topic string, body []byte, done func(error)) error {
	select {
	case p.reqs <- redisReq{topic, body, done}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *redisProducer) SendOneway(ctx context.Context, topic string, body []byte) error {
	return ErrUnsupported
}

// SendBatch pipelines one XADD per body (Redis has no multi-entry XADD).
func (p *redisProducer) SendBatch(ctx context.Context, topic string, bodies [][]byte) error {
	pipe := p.rdb.Pipeline()
	for _, b := range bodies {
		pipe.XAdd(ctx, xadd(topic, b))
	}
	_, err := pipe.Exec(ctx)
	return err
}

func (p *redisProducer) Close() error {
	p.once.Do(func() { close(p.reqs) })
	p.wg.Wait()
	return p.rdb.Close()
}

// Consume reads with XREADGROUP (COUNT -pull, BLOCK 500 ms) over all
// streams and acknowledges each batch with one XACK per stream.
func (d *redisDriver) Consume(ctx context.Context, cfg Config, topics []string, group string, deliver func([][]byte)) (func(), error) {
	for _, t := range topics {
		err := d.rdb.XGroupCreateMkStream(ctx, t, group, "0").Err()
		if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
			return nil, fmt.Errorf("XGROUP CREATE %s: %w", t, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	streams := make([]string, 0, 2*len(topics))
	streams = append(streams, topics...)
	for range topics {
		streams = append(streams, ">")
	}
	for i := range cfg.Consumers {
		rdb := redis.NewClient(&redis.Options{Addr: d.addr, PoolSize: 2})
		name := fmt.Sprintf("c%d", i)
		wg.Go(func() {
			defer rdb.Close()
			bodies := make([][]byte, 0, cfg.Pull)
			for cctx.Err() == nil {
				res, err := rdb.XReadGroup(cctx, &redis.XReadGroupArgs{Group: group, Consumer: name, Streams: streams,
					Count: int64(cfg.Pull), Block: 500 * time.Millisecond}).Result()
				if err != nil {
					if !errors.Is(err, redis.Nil) && cctx.Err() == nil {
						time.Sleep(10 * time.Millisecond) // back off after a failed read
					}
					continue
				}
				for _, s := range res {
					bodies = bodies[:0]
					ids := make([]string, len(s.Messages))
					for j, m := range s.Messages {
						ids[j] = m.ID
						if v, ok := m.Values["d"].(string); ok {
							bodies = append(bodies, []byte(v))
						}
					}
					deliver(bodies)
					_ = rdb.XAck(context.Background(), s.Stream, group, ids...).Err()
				}
			}
		})
	}
	return func() { cancel(); wg.Wait() }, nil
}

func (d *redisDriver) Cleanup(ctx context.Context, topics []string) error {
	return d.rdb.Del(ctx, topics...).Err()
}

func (d *redisDriver) Close() error { return d.rdb.Close() }
