package mqclient_test

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/tidetest"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

// lockAs sends LOCK_BATCH_MQ (lock) or UNLOCK_BATCH_MQ for q on behalf of
// clientID, as another member of group would, and reports whether the
// broker granted the lock (always true for an unlock).
func lockAs(t *testing.T, e *env, lock bool, group, clientID string, q mqclient.Queue) bool {
	t.Helper()
	body := (&protocol.LockBatchRequestBody{ConsumerGroup: group, ClientID: clientID, MQSet: []protocol.MessageQueue{q}}).Encode()
	code := protocol.UnlockBatchMQ
	if lock {
		code = protocol.LockBatchMQ
	}
	resp, err := e.Admin.Invoke(context.Background(), e.Broker.Addr(), protocol.NewRequest(code, nil, body))
	if err != nil || resp.Code != protocol.Success {
		t.Fatalf("lock request %d: %v %v", code, err, resp)
	}
	if !lock {
		return true
	}
	b, err := protocol.DecodeLockBatchResponseBody(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return len(b.LockOKMQSet) == 1
}

// TestOrderedRegainedLockResumesFromCommitted: an orderly consumer a loses
// its queue lock (the broker forgets it, as a restarted broker does, and
// another member, the "intruder", takes it), the intruder consumes offsets
// 10-14 and commits 15, and releases the queue; a locks it again. a must
// resume from the committed offset 15 as a new owner would, not from its
// in-memory position 10 nor deliver what it had pulled before: delivering
// 10-14 again and committing behind 15 is chaos finding 2 (an offset-back
// in the campaign's orderly group). The refusals are logged once, not once
// per renewal.
func TestOrderedRegainedLockResumesFromCommitted(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 1)
	p := e.Producer(t)
	group := tidetest.Name("g-relock")
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	var mu sync.Mutex
	var handled []int64
	var queue mqclient.Queue
	h := func(_ context.Context, m *mqclient.MessageExt) error {
		mu.Lock()
		handled = append(handled, m.QueueOffset)
		queue = m.Queue
		mu.Unlock()
		return nil
	}
	last := func() int64 {
		mu.Lock()
		defer mu.Unlock()
		if len(handled) == 0 {
			return -1
		}
		return handled[len(handled)-1]
	}
	send := func(from, to int) {
		for i := from; i < to; i++ {
			m := &mqclient.Message{Topic: topic, ShardingKey: "k", Body: []byte("m" + strconv.Itoa(i))}
			if _, err := p.Send(context.Background(), m); err != nil {
				t.Fatal(err)
			}
		}
	}
	committed := func() int64 {
		off, err := e.Admin.CommittedOffset(context.Background(), e.Broker.Addr(), group, queue)
		if err != nil {
			return -2
		}
		return off
	}

	a := e.Consumer(t, group, topic, h, mqclient.WithOrdered(), mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
		mqclient.WithLockInterval(100*time.Millisecond), mqclient.WithLogger(logger))
	send(0, 10)
	tidetest.WaitFor(t, 30*time.Second, "offsets 0-9 handled and committed", func() bool {
		return last() == 9 && committed() == 10
	})

	// The broker forgets a's lock and the intruder takes the queue (a's
	// renewals every 100 ms may win the race: then try again).
	tidetest.WaitFor(t, 30*time.Second, "the intruder holds the lock", func() bool {
		lockAs(t, e, false, group, a.ClientID(), queue)
		return lockAs(t, e, true, group, "intruder", queue)
	})
	const refused = `msg="mqclient: queue lock not held; the queue is not consumed until it is locked"`
	tidetest.WaitFor(t, 30*time.Second, "a's renewal refused", func() bool { return logs.count(refused) > 0 })

	// Sent while a's pull is parked on the broker: a receives them but
	// must not handle them without the lock.
	send(10, 20)
	// The intruder handles 10-14, commits 15 and releases the queue.
	if err := e.Admin.CommitOffset(context.Background(), e.Broker.Addr(), group, queue, 15); err != nil {
		t.Fatal(err)
	}
	lockAs(t, e, false, group, "intruder", queue)

	tidetest.WaitFor(t, 30*time.Second, "offset 19 handled and 20 committed", func() bool {
		return last() == 19 && committed() == 20
	})
	mu.Lock()
	defer mu.Unlock()
	var after []int64
	for _, off := range handled {
		if off >= 10 {
			after = append(after, off)
		}
	}
	want := []int64{15, 16, 17, 18, 19}
	if len(after) != len(want) || after[0] != 15 {
		t.Errorf("after the lock was regained a handled offsets %v, want %v (10-14 were consumed and committed by the intruder)", after, want)
	}
	if n := logs.count(refused); n != 1 {
		t.Errorf("lock refusal logged %d times, want once", n)
	}
}
