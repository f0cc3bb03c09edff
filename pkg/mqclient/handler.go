package mqclient

import (
	"context"
	"fmt"
	"runtime/debug"
)

// Handler processes one delivered message. Returning nil acknowledges it;
// returning an error asks for redelivery (see WithMaxReconsumeTimes and
// WithOrdered for how and how often). Handlers run concurrently (up to
// WithConcurrency at once) unless the consumer is ordered, in which case
// messages with the same key never overlap. ctx is cancelled when Shutdown
// gives up waiting; a handler should then return quickly. A panic in a
// handler is recovered and counts as an error.
type Handler func(ctx context.Context, msg *MessageExt) error

// Middleware wraps a Handler, for retries, timeouts, logging, metrics or
// tracing (see package middleware). It is applied once per subscription.
type Middleware func(Handler) Handler

// PanicError is the error a recovered handler panic becomes.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("mqclient: handler panic: %v", e.Value) }

// call runs h, turning a panic into a *PanicError.
func call(ctx context.Context, h Handler, m *MessageExt) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return h(ctx, m)
}

// BatchHandler processes up to WithConsumeBatchSize messages of one queue
// at once, in queue order (see SubscribeBatch). Returning nil acknowledges
// every message of the batch; returning an error asks for the redelivery
// of every one of them, so a handler must be idempotent per message. It
// owns msgs and may keep them. ctx and panics behave as for Handler.
type BatchHandler func(ctx context.Context, msgs []*MessageExt) error

// callBatch runs h, turning a panic into a *PanicError.
func callBatch(ctx context.Context, h BatchHandler, msgs []*MessageExt) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return h(ctx, msgs)
}
