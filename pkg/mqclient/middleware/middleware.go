// Package middleware holds consumer handler middleware for package
// mqclient: in-process retry with backoff, timeout, panic recovery,
// logging, and a test mode that delivers every message twice. They are
// mqclient.Middleware values, applied with mqclient.WithMiddleware (the
// first given runs outermost). All of them are safe for concurrent use and
// keep no state between messages except Duplicate's counter-free wrapper.
//
// Metrics (Prometheus) are in package metrics and trace propagation
// (OpenTelemetry) in package tracing, so that programs which use neither
// do not compile their dependencies.
package middleware

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Retry configures in-process retries of a failing handler before the
// failure is returned to the consumer (which then uses the broker's retry
// topic or, for ordered consumers, its own retries).
type Retry struct {
	// MaxRetries is the number of retries after the first attempt.
	MaxRetries int
	// InitialInterval is the first wait; it grows by Multiplier (default
	// 2) up to MaxInterval (default 10 × InitialInterval).
	InitialInterval time.Duration
	MaxInterval     time.Duration
	Multiplier      float64
	// Jitter, in [0, 1], randomises each wait by ± that fraction.
	Jitter float64
	// ShouldRetry, if set, decides per error; errors it rejects are
	// returned at once. Permanent errors (see Permanent) are never retried.
	ShouldRetry func(error) bool
	// OnRetry, if set, is called before each retry.
	OnRetry func(msg *mqclient.MessageExt, attempt int, err error)
}

// permanent marks an error that must not be retried.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent wraps err so that Retry does not retry it.
func Permanent(err error) error { return permanent{err} }

// Middleware returns the retry middleware. A retry wait ends early (with
// the last error) when the handler context is cancelled.
func (r Retry) Middleware() mqclient.Middleware {
	mult := r.Multiplier
	if mult <= 1 {
		mult = 2
	}
	maxIv := r.MaxInterval
	if maxIv <= 0 {
		maxIv = 10 * r.InitialInterval
	}
	return func(h mqclient.Handler) mqclient.Handler {
		return func(ctx context.Context, m *mqclient.MessageExt) error {
			wait := r.InitialInterval
			var err error
			for attempt := 0; ; attempt++ {
				if err = h(ctx, m); err == nil {
					return nil
				}
				var p permanent
				if attempt >= r.MaxRetries || errors.As(err, &p) || (r.ShouldRetry != nil && !r.ShouldRetry(err)) {
					return err
				}
				if r.OnRetry != nil {
					r.OnRetry(m, attempt+1, err)
				}
				d := wait
				if r.Jitter > 0 {
					d = time.Duration(float64(d) * (1 + r.Jitter*(2*rand.Float64()-1)))
				}
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return err
				}
				wait = min(time.Duration(float64(wait)*mult), maxIv)
			}
		}
	}
}

// ErrTimeout is returned (wrapped) when Timeout cuts a handler short.
var ErrTimeout = errors.New("middleware: handler timeout")

// Timeout gives each handler call a context that expires after d. A
// handler that ignores its context keeps running; the call still waits for
// it, so that two attempts of one message never overlap, and returns
// ErrTimeout if the deadline passed, whatever the handler returned.
func Timeout(d time.Duration) mqclient.Middleware {
	return func(h mqclient.Handler) mqclient.Handler {
		return func(ctx context.Context, m *mqclient.MessageExt) error {
			ctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			err := h(ctx, m)
			if ctx.Err() == context.DeadlineExceeded {
				return fmt.Errorf("%w after %v: %v", ErrTimeout, d, err)
			}
			return err
		}
	}
}

// Recover turns a handler panic into an error (mqclient.PanicError with
// the stack) and logs it, so that inner middleware such as Retry sees it.
func Recover(log *slog.Logger) mqclient.Middleware {
	return func(h mqclient.Handler) mqclient.Handler {
		return func(ctx context.Context, m *mqclient.MessageExt) (err error) {
			defer func() {
				if r := recover(); r != nil {
					pe := &mqclient.PanicError{Value: r}
					if log != nil {
						log.Error("mqclient handler panic", "msgId", m.MsgID, "topic", m.Topic, "panic", r)
					}
					err = pe
				}
			}()
			return h(ctx, m)
		}
	}
}

// Logging logs every handled message at debug level and every failure at
// warn level, with its id, topic, queue, offset, attempt and duration.
func Logging(log *slog.Logger) mqclient.Middleware {
	return func(h mqclient.Handler) mqclient.Handler {
		return func(ctx context.Context, m *mqclient.MessageExt) error {
			start := time.Now()
			err := h(ctx, m)
			attrs := []any{"msgId", m.MsgID, "topic", m.Topic, "queue", m.Queue.QueueID, "offset", m.QueueOffset,
				"reconsumeTimes", m.ReconsumeTimes, "took", time.Since(start)}
			if err != nil {
				log.WarnContext(ctx, "message handler failed", append(attrs, "err", err)...)
			} else {
				log.DebugContext(ctx, "message handled", attrs...)
			}
			return err
		}
	}
}

// Duplicate is a test mode that hands every message to the handler twice
// in a row, as a redelivery would; it returns the second call's error (or
// the first's, if the first failed). Use it to prove handlers idempotent.
func Duplicate() mqclient.Middleware {
	return func(h mqclient.Handler) mqclient.Handler {
		return func(ctx context.Context, m *mqclient.MessageExt) error {
			if err := h(ctx, m); err != nil {
				return err
			}
			return h(ctx, m)
		}
	}
}
