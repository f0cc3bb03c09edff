// Package workers runs short functions on reused goroutines.
//
// A server that starts a goroutine per request pays for the goroutine and,
// worse, for growing its stack again every time (runtime.newstack and
// copystack were ~10% of the broker's CPU on the send path). A Pool keeps
// goroutines whose stacks have already grown and hands them the next
// function; when none is idle it starts one, so it never queues work and
// never limits concurrency (callers bound that themselves, e.g. the
// transport's in-flight limits). Goroutines idle for longer than the
// pool's idle time exit, so a burst leaves nothing behind.
package workers

import (
	"sync"
	"time"
)

// DefaultIdle is how long a worker waits for more work before it exits.
const DefaultIdle = 10 * time.Second

// Pool runs functions on reused goroutines. The zero value is not usable;
// create it with New. A Pool is safe for concurrent use and needs no
// closing: idle workers exit on their own after the idle time.
type Pool struct {
	tasks chan func() // unbuffered: a send succeeds only to an idle worker
	idle  time.Duration
}

// New returns a pool whose idle workers exit after idle (DefaultIdle if
// idle <= 0).
func New(idle time.Duration) *Pool {
	if idle <= 0 {
		idle = DefaultIdle
	}
	return &Pool{tasks: make(chan func()), idle: idle}
}

// Go runs f on an idle worker, or on a new goroutine when none is idle. It
// never blocks and never drops f. f runs exactly once; a panic in f is not
// recovered (as with a go statement), so f must recover what it can cause.
func (p *Pool) Go(f func()) {
	select {
	case p.tasks <- f:
	default:
		go p.work(f)
	}
}

func (p *Pool) work(f func()) {
	f()
	// The timer is only armed while the worker waits (Go 1.23 timers
	// enter the runtime's heap when a goroutine blocks on their channel).
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		select {
		case f = <-p.tasks:
			f()
			t.Reset(p.idle)
		case <-t.C:
			return
		}
	}
}

var (
	sharedOnce sync.Once
	shared     *Pool
)

// Shared returns a process-wide pool with DefaultIdle, for packages that
// do not need a pool of their own.
func Shared() *Pool {
	sharedOnce.Do(func() { shared = New(DefaultIdle) })
	return shared
}
