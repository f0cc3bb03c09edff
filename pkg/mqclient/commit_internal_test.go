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
	forward []bool
	started chan struct{}
	release chan struct{}
	first   sync.Once
}

func (r *recordingOffsets) read(context.Context, Queue) (int64, error) { return -1, nil }
func (r *recordingOffsets) flush()                                     {}
func (r *recordingOffsets) write(_ context.Context, _ Queue, off int64, forward bool) error {
	r.first.Do(func() { close(r.started); <-r.release })
	r.mu.Lock()
	r.writes = append(r.writes, off)
	r.forward = append(r.forward, forward)
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

// TestCommitsAreForwardOnlyUnlessTheBrokerMovedTheQueueBack: a commit asks
// the broker to keep a higher offset (two members can own a queue for a
// moment in a rebalance), except the first one after a PULL_OFFSET_MOVED
// answer moved the position back, which must be stored as it is.
func TestCommitsAreForwardOnlyUnlessTheBrokerMovedTheQueueBack(t *testing.T) {
	store := &recordingOffsets{started: make(chan struct{}), release: make(chan struct{})}
	close(store.release)
	pc := &PushConsumer{offsets: store, s: settings{logger: slog.New(slog.NewTextHandler(io.Discard, nil)), pullBackoff: time.Millisecond}}
	pq := newProcessQueue(Queue{Topic: "t", BrokerName: "b", QueueID: 0}, &subscription{})
	pq.init(100)
	steps := []struct {
		name        string
		base        int64
		moved       bool // a PULL_OFFSET_MOVED answer sets base
		wantOff     int64
		wantForward bool
	}{
		{"first commit", 110, false, 110, true},
		{"moving on", 120, false, 120, true},
		{"moved back by the broker", 90, true, 90, false},
		{"next commit after the move", 95, false, 95, true},
		{"moved forward by the broker", 130, true, 130, true},
	}
	for i, st := range steps {
		pq.mu.Lock()
		if st.moved {
			pq.movedLocked(st.base)
		} else {
			pq.base = st.base
		}
		pq.mu.Unlock()
		if err := pc.commitQueue(context.Background(), pq); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		store.mu.Lock()
		if len(store.writes) != i+1 || store.writes[i] != st.wantOff || store.forward[i] != st.wantForward {
			t.Fatalf("%s: writes %v forward %v, want #%d = %d forward=%v", st.name, store.writes, store.forward, i, st.wantOff, st.wantForward)
		}
		store.mu.Unlock()
	}
}
