package kratosmq

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-kratos/kratos/v2/transport"
)

var _ transport.Server = (*Task)(nil)

// Task adapts anything with a start and a stop function (a reconcile
// runner, a transactional-outbox relay, a sweeper, a producer) to a Kratos
// transport.Server. Build one with Runner or Loop.
type Task struct {
	name  string
	start func(context.Context) error
	stop  func(context.Context) error

	mu      sync.Mutex
	started bool
	stopped bool
}

// Runner returns a Task that calls start on Start and stop on Stop. start
// may return at once (it started goroutines) or block until stop is called
// (Kratos runs every server's Start in its own goroutine); note that the
// context Kratos passes to Start is not cancelled when the app stops, so a
// blocking start must return when stop is called. stop is called at most
// once, only if start was called, and after Stop has been called Start
// never calls start (Kratos may stop a server before starting it). A nil
// stop is allowed.
//
//	kratosmq.Runner("producer", p.Start, p.Shutdown)
func Runner(name string, start, stop func(ctx context.Context) error) *Task {
	return &Task{name: name, start: start, stop: stop}
}

// Loop returns a Task that runs run(ctx) in the background on Start, with
// a ctx that Stop cancels; Stop then waits for run to return (or for its
// own ctx to be done). Use it for loops such as "for { select { case
// <-ctx.Done(): return nil; case <-tick.C: sweep() } }". run's error
// (other than context.Canceled) is returned by Stop; run's ctx carries the
// values of the context Kratos passed to Start (kratos.FromContext works).
func Loop(name string, run func(ctx context.Context) error) *Task {
	quit := make(chan struct{}) // closed by stop, possibly before start ran
	done := make(chan error, 1)
	start := func(ctx context.Context) error {
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		go func() {
			defer cancel()
			go func() {
				select {
				case <-quit:
					cancel()
				case <-rctx.Done():
				}
			}()
			done <- run(rctx)
		}()
		return nil
	}
	stop := func(ctx context.Context) error {
		close(quit)
		select {
		case err := <-done:
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("kratosmq: %s still running: %w", name, ctx.Err())
		}
	}
	return Runner(name, start, stop)
}

// Name returns the task's name.
func (t *Task) Name() string { return t.name }

// Start calls the start function unless Stop came first (then it returns
// ErrStopped).
func (t *Task) Start(ctx context.Context) error {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return ErrStopped
	}
	if t.started {
		t.mu.Unlock()
		return ErrStarted
	}
	t.started = true
	t.mu.Unlock()
	if err := t.start(ctx); err != nil {
		return fmt.Errorf("kratosmq: %s: %w", t.name, err)
	}
	return nil
}

// Stop calls the stop function once, if Start was called.
func (t *Task) Stop(ctx context.Context) error {
	t.mu.Lock()
	first := !t.stopped
	t.stopped = true
	started := t.started
	t.mu.Unlock()
	if !first || !started || t.stop == nil {
		return nil
	}
	if err := t.stop(ctx); err != nil {
		return fmt.Errorf("kratosmq: %s: %w", t.name, err)
	}
	return nil
}
