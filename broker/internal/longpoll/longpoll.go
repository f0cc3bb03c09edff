// Package longpoll holds pull requests that found no message until a
// message arrives for their queue or their suspend timeout expires
// (RocketMQ's PullRequestHoldService). The store's dispatcher calls Notify
// for every consume-queue entry it builds; a periodic re-check against the
// queue's max offset covers notifications that raced a Hold.
package longpoll

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Request is one held pull.
type Request struct {
	Topic   string
	QueueID int32
	// Offset is the queue offset the pull asked for; the request is woken
	// when the queue's max offset passes it.
	Offset int64
	// Deadline is when the pull must be answered even without a message.
	Deadline time.Time
	// Match, if not nil, is asked whether a newly dispatched message
	// (tags code and raw property string) is of interest; a request is
	// woken only by matching messages (and always at its deadline).
	Match func(tagsCode int64, props []byte) bool
	// Resume answers the pull; timedOut tells whether the deadline fired.
	// It is called exactly once, on its own goroutine.
	Resume func(timedOut bool)
	// Owner, if not nil, is what the per-owner limit counts by (the
	// broker passes the connection). It must be comparable.
	Owner any

	done  atomic.Bool
	timer *time.Timer
}

func (r *Request) finish(s *Service, timedOut bool) {
	if !r.done.CompareAndSwap(false, true) {
		return
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	s.held.Add(-1)
	if r.Owner != nil {
		s.mu.Lock()
		if n := s.owners[r.Owner] - 1; n > 0 {
			s.owners[r.Owner] = n
		} else {
			delete(s.owners, r.Owner)
		}
		s.mu.Unlock()
	}
	go r.Resume(timedOut)
}

// Limits bound the requests held at once; zero means no bound.
type Limits struct {
	// Max is the number of requests held in the whole service.
	Max int
	// MaxPerOwner is the number of requests held for one Request.Owner.
	MaxPerOwner int
}

// ErrFull is returned by Hold when a limit is reached; wrapped errors
// name the limit (ErrFullTotal or ErrFullOwner).
var ErrFull = errors.New("longpoll: too many held pull requests")

var (
	// ErrFullTotal: the service holds Limits.Max requests.
	ErrFullTotal = fmt.Errorf("%w in the broker", ErrFull)
	// ErrFullOwner: the owner holds Limits.MaxPerOwner requests.
	ErrFullOwner = fmt.Errorf("%w on this connection", ErrFull)
)

// Service is the set of held requests. It is safe for concurrent use.
type Service struct {
	maxOffset func(topic string, queueID int32) int64

	mu     sync.Mutex
	queues map[queueKey][]*Request
	owners map[any]int // held requests by Request.Owner
	limits Limits
	closed bool
	held   atomic.Int64
	// refusedTotal and refusedOwner count Holds refused by each limit.
	refusedTotal atomic.Int64
	refusedOwner atomic.Int64
	stop         chan struct{}
	wg           sync.WaitGroup
}

// queueKey names a queue; a struct rather than a joined string so that
// Notify, called for every dispatched message, does not allocate.
type queueKey struct {
	topic   string
	queueID int32
}

func key(topic string, queueID int32) queueKey { return queueKey{topic, queueID} }

// New returns a Service; maxOffset reports a queue's current max offset
// (next free offset) for the periodic re-check, which runs every
// checkInterval (5 s in RocketMQ).
func New(maxOffset func(topic string, queueID int32) int64, checkInterval time.Duration) *Service {
	s := &Service{maxOffset: maxOffset, queues: map[queueKey][]*Request{}, owners: map[any]int{}, stop: make(chan struct{})}
	if checkInterval <= 0 {
		checkInterval = 5 * time.Second
	}
	s.wg.Add(1)
	go s.recheckLoop(checkInterval)
	return s
}

// SetLimits sets the bounds checked by later Holds; requests already
// held stay. Safe to call at any time.
func (s *Service) SetLimits(l Limits) {
	s.mu.Lock()
	s.limits = l
	s.mu.Unlock()
}

// Held returns the number of requests currently held.
func (s *Service) Held() int64 { return s.held.Load() }

// Refused returns how many Holds were refused by Limits.Max (total) and
// by Limits.MaxPerOwner (owner) since New.
func (s *Service) Refused() (total, owner int64) {
	return s.refusedTotal.Load(), s.refusedOwner.Load()
}

// Hold parks r until a matching message arrives or r.Deadline passes. If
// the service is closed, or a message already arrived, r resumes at once.
// If a limit is reached it returns an error wrapping ErrFull without
// holding r: r.Resume is then never called and the caller answers the
// request itself. Hold never blocks on other requests.
func (s *Service) Hold(r *Request) error {
	s.mu.Lock()
	if s.closed {
		s.count(r)
		s.mu.Unlock()
		r.finish(s, true)
		return nil
	}
	if s.limits.Max > 0 && s.held.Load() >= int64(s.limits.Max) {
		s.mu.Unlock()
		s.refusedTotal.Add(1)
		return ErrFullTotal
	}
	if r.Owner != nil && s.limits.MaxPerOwner > 0 && s.owners[r.Owner] >= s.limits.MaxPerOwner {
		s.mu.Unlock()
		s.refusedOwner.Add(1)
		return ErrFullOwner
	}
	k := key(r.Topic, r.QueueID)
	s.queues[k] = append(s.queues[k], r)
	s.count(r)
	// Set under the lock: the timer's func takes it too (in remove) before
	// finish reads r.timer.
	r.timer = time.AfterFunc(time.Until(r.Deadline), func() { s.expire(k, r) })
	s.mu.Unlock()
	// A message dispatched between the caller's store read and the
	// append above would have found nobody to wake: check once more.
	if s.maxOffset != nil && s.maxOffset(r.Topic, r.QueueID) > r.Offset {
		s.remove(k, r)
		r.finish(s, false)
	}
	return nil
}

// count adds r to the held counts; s.mu must be held. Counting under the
// lock makes the limit checks in Hold exact (finish decrements later).
func (s *Service) count(r *Request) {
	s.held.Add(1)
	if r.Owner != nil {
		s.owners[r.Owner]++
	}
}

func (s *Service) expire(k queueKey, r *Request) {
	s.remove(k, r)
	r.finish(s, true)
}

func (s *Service) remove(k queueKey, r *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.queues[k]
	for i, x := range list {
		if x == r {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.queues, k)
	} else {
		s.queues[k] = list
	}
}

// Notify wakes the requests held on topic/queue that wait for an offset
// below maxOffset and match the new message.
func (s *Service) Notify(topic string, queueID int32, maxOffset int64, tagsCode int64, props []byte) {
	k := key(topic, queueID)
	s.mu.Lock()
	list := s.queues[k]
	if len(list) == 0 {
		s.mu.Unlock()
		return
	}
	var wake []*Request
	keep := list[:0]
	for _, r := range list {
		if maxOffset > r.Offset && (r.Match == nil || r.Match(tagsCode, props)) {
			wake = append(wake, r)
		} else {
			keep = append(keep, r)
		}
	}
	if len(keep) == 0 {
		delete(s.queues, k)
	} else {
		s.queues[k] = keep
	}
	s.mu.Unlock()
	for _, r := range wake {
		r.finish(s, false)
	}
}

func (s *Service) recheckLoop(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if s.maxOffset == nil {
			continue
		}
		s.mu.Lock()
		var wake []*Request
		for k, list := range s.queues {
			if len(list) == 0 {
				continue
			}
			max := s.maxOffset(list[0].Topic, list[0].QueueID)
			keep := list[:0]
			for _, r := range list {
				if max > r.Offset {
					wake = append(wake, r)
				} else {
					keep = append(keep, r)
				}
			}
			if len(keep) == 0 {
				delete(s.queues, k)
			} else {
				s.queues[k] = keep
			}
		}
		s.mu.Unlock()
		for _, r := range wake {
			r.finish(s, false)
		}
	}
}

// Close resumes every held request (as timed out, so each gets its
// "no new message" answer) and stops the re-check loop. Requests held
// after Close resume at once.
func (s *Service) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	var all []*Request
	for _, list := range s.queues {
		all = append(all, list...)
	}
	s.queues = map[queueKey][]*Request{}
	s.mu.Unlock()
	close(s.stop)
	s.wg.Wait()
	for _, r := range all {
		r.finish(s, true)
	}
}
