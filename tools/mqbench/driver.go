package main

import (
	"context"
	"errors"
	"fmt"
)

// Driver connects mqbench to one kind of broker through its official
// client. Implementations are safe for concurrent use after Open.
type Driver interface {
	// Versions returns the server and client library versions.
	Versions(ctx context.Context) (server, client string)
	// Prepare creates the topics (streams) with the given queue count.
	Prepare(ctx context.Context, topics []string, queues int) error
	// Producer returns a new producer with its own connection(s).
	Producer(ctx context.Context, cfg Config) (Producer, error)
	// Consume starts a consumer group reading topics from their beginning
	// and calls deliver for every batch of message bodies, possibly from
	// several goroutines at once; deliver must not keep the bodies. The
	// returned stop ends the consumer after acknowledging what was
	// delivered.
	Consume(ctx context.Context, cfg Config, topics []string, group string, deliver func(bodies [][]byte)) (stop func(), err error)
	// Cleanup deletes the topics (best effort).
	Cleanup(ctx context.Context, topics []string) error
	Close() error
}

// Producer sends to one broker. Safe for concurrent use.
type Producer interface {
	// Send blocks until the broker acknowledged the message.
	Send(ctx context.Context, topic string, body []byte) error
	// SendAsync starts a send and calls done exactly once (possibly from
	// another goroutine) unless it returns an error itself. The caller
	// bounds the number in flight.
	SendAsync(ctx context.Context, topic string, body []byte, done func(error)) error
	// SendOneway returns once the message is written.
	SendOneway(ctx context.Context, topic string, body []byte) error
	// SendBatch blocks until all bodies are acknowledged.
	SendBatch(ctx context.Context, topic string, bodies [][]byte) error
	Close() error
}

// ErrUnsupported is returned for a send mode a peer does not offer.
var ErrUnsupported = errors.New("mqbench: not supported by this target")

func openDriver(ctx context.Context, cfg Config) (Driver, error) {
	switch cfg.Target {
	case "tide":
		return openTide(ctx, cfg)
	case "tide-official":
		return openOfficial(ctx, cfg)
	case "nats":
		return openNATS(ctx, cfg)
	case "redis":
		return openRedis(ctx, cfg)
	}
	return nil, fmt.Errorf("unknown -target %q (tide, tide-official, nats, redis)", cfg.Target)
}
