package ha

import (
	"container/heap"
	"sync"
)

// ackWaiters releases WaitSlaveAck callers as slave acks arrive. Waiters
// sit in a min-heap by offset, so one ack pops exactly the waiters it
// satisfies: each waiter is woken once, and an ack costs O(k log n) for
// the k it releases, not a poll per waiter.
type ackWaiters struct {
	mu     sync.Mutex
	best   int64 // the highest offset any slave acked (monotonic)
	h      waiterHeap
	closed bool
}

type waiter struct {
	off  int64
	done chan struct{} // closed when released
	err  error         // set before done is closed: nil (acked) or ErrClosed
	i    int           // heap index, -1 once released or removed
}

// add registers a waiter for off, or returns nil when off is already
// acked. It returns ErrClosed after close.
func (a *ackWaiters) add(off int64) (*waiter, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, ErrClosed
	}
	if a.best >= off {
		return nil, nil
	}
	w := &waiter{off: off, done: make(chan struct{})}
	heap.Push(&a.h, w)
	return w, nil
}

// remove drops w after a timeout or cancellation. It reports false when
// w was released meanwhile (then w.err holds the outcome).
func (a *ackWaiters) remove(w *waiter) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w.i < 0 {
		return false
	}
	heap.Remove(&a.h, w.i)
	w.i = -1
	return true
}

// ack records that a slave has everything below off and releases the
// waiters it satisfies.
func (a *ackWaiters) ack(off int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if off <= a.best {
		return
	}
	a.best = off
	for len(a.h) > 0 && a.h[0].off <= off {
		w := heap.Pop(&a.h).(*waiter)
		w.i = -1
		close(w.done)
	}
}

// acked returns the highest acked offset.
func (a *ackWaiters) acked() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.best
}

// close releases every waiter with ErrClosed and refuses new ones.
func (a *ackWaiters) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	for _, w := range a.h {
		w.i = -1
		w.err = ErrClosed
		close(w.done)
	}
	a.h = nil
}

type waiterHeap []*waiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].off < h[j].off }
func (h waiterHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}
func (h *waiterHeap) Push(x any) {
	w := x.(*waiter)
	w.i = len(*h)
	*h = append(*h, w)
}
func (h *waiterHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return w
}
