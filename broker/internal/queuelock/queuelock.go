// Package queuelock holds the broker-side queue locks of orderly
// consumption (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ): per consumer group and
// queue, at most one client id holds the lock; a lock not renewed within
// the lifetime (60 s in RocketMQ) expires and may be taken by another
// client. A lock ends only by UNLOCK_BATCH_MQ or expiry: not when its
// holder's connection closes or it unregisters (RocketMQ's rule), since a
// holder cut off from the broker may still be working on the queue.
package queuelock

import (
	"sync"
	"time"
)

// Queue names one queue of this broker.
type Queue struct {
	Topic   string
	QueueID int32
}

type entry struct {
	clientID string
	renewed  time.Time
}

// Table is the lock table. It is safe for concurrent use.
type Table struct {
	lifetime time.Duration
	now      func() time.Time

	mu    sync.Mutex
	locks map[string]map[Queue]*entry // group -> queue -> holder
}

// New returns a table whose locks expire after lifetime without renewal.
// now may be nil (time.Now); tests inject a fake clock.
func New(lifetime time.Duration, now func() time.Time) *Table {
	if now == nil {
		now = time.Now
	}
	return &Table{lifetime: lifetime, now: now, locks: map[string]map[Queue]*entry{}}
}

// TryLock locks (or renews) every queue that is free, expired or already
// held by clientID, and returns those queues: the subset clientID now holds.
func (t *Table) TryLock(group, clientID string, queues []Queue) []Queue {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	g := t.locks[group]
	if g == nil {
		g = map[Queue]*entry{}
		t.locks[group] = g
	}
	var got []Queue
	for _, q := range queues {
		e := g[q]
		switch {
		case e == nil:
			g[q] = &entry{clientID: clientID, renewed: now}
		case e.clientID == clientID || now.Sub(e.renewed) > t.lifetime:
			e.clientID, e.renewed = clientID, now
		default:
			continue
		}
		got = append(got, q)
	}
	return got
}

// Unlock releases the queues clientID holds; queues held by another client
// are left alone.
func (t *Table) Unlock(group, clientID string, queues []Queue) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.locks[group]
	for _, q := range queues {
		if e := g[q]; e != nil && e.clientID == clientID {
			delete(g, q)
		}
	}
	if len(g) == 0 {
		delete(t.locks, group)
	}
}

// Holder returns the live holder of a queue lock ("" if none or expired).
func (t *Table) Holder(group string, q Queue) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.locks[group][q]; e != nil && t.now().Sub(e.renewed) <= t.lifetime {
		return e.clientID
	}
	return ""
}
