package mqclient

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// recordingOffsets is an offsetStore fake that records writes in the order
// they land; the first write blocks until release is closed, like a slow
// broker round trip.
type recordingOffsets struct {
	mu      sync.Mutex
	writes  []int64
	started chan struct{}
	release chan struct{}
	first   sync.Once
}

func (r *recordingOffsets) read(context.Context, Queue) (int64, error) { return -1, nil }
func (r *recordingOffsets) flush()                                     {}
func (r *recordingOffsets) write(_ context.Context, _ Queue, off int64) error {
	r.first.Do(func() { close(r.started); <-r.release })
	r.mu.Lock()
	r.writes = append(r.writes, off)
	r.mu.Unlock()
	return nil
}

// TestCommitsOfADroppedQueueLandInOrder: a commit-loop write of an older
// offset that is still in flight when the queue is dropped must land
// before the final commit, and nothing may be written after it (the next
// owner of the queue owns the offset from then on).
func TestCommitsOfADroppedQueueLandInOrder(t *testing.T) {
	store := &recordingOffsets{started: make(chan struct{}), release: make(chan struct{})}
	pc := &PushConsumer{offsets: store, s: settings{logger: slog.New(slog.NewTextHandler(io.Discard, nil)), pullBackoff: time.Millisecond}}
	pq := newProcessQueue(Queue{Topic: "t", BrokerName: "b", QueueID: 0}, &subscription{})
	pq.init(10)
	m := &MessageExt{QueueOffset: 10}
	pq.pending[10] = m
	pq.base = 12

	loop := make(chan struct{})
	go func() { pc.commitQueue(context.Background(), pq); close(loop) }() // commit loop: offset 10
	<-store.started
	pq.finish(m) // the handler finishes: offset 12
	pq.drop()
	final := make(chan struct{})
	go func() { pc.commitFinal(context.Background(), pq); close(final) }()
	close(store.release)
	<-loop
	<-final
	pc.commitQueue(context.Background(), pq) // a late commit-loop pass
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.writes) != 2 || store.writes[0] != 10 || store.writes[1] != 12 {
		t.Fatalf("offset writes %v, want [10 12]", store.writes)
	}
}
