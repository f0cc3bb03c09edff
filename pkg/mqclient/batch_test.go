package mqclient_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/tidetest"
)

// batchLog records every batch a BatchHandler got and checks each one as
// it arrives: at most max messages, one queue, strictly increasing queue
// offsets and, when ordered, one key.
type batchLog struct {
	t       *testing.T
	max     int
	ordered bool

	mu      sync.Mutex
	batches [][]*mqclient.MessageExt
	byID    map[string]int
	busy    map[string]bool // ordered: keys inside a handler
	next    map[string]int  // ordered: next expected new seq per key
}

func newBatchLog(t *testing.T, max int, ordered bool) *batchLog {
	return &batchLog{t: t, max: max, ordered: ordered, byID: map[string]int{}, busy: map[string]bool{}, next: map[string]int{}}
}

func (b *batchLog) handle(ctx context.Context, msgs []*mqclient.MessageExt) error {
	b.mu.Lock()
	b.check(msgs)
	b.batches = append(b.batches, msgs)
	for _, m := range msgs {
		b.byID[m.MsgID]++
	}
	var key string
	if b.ordered {
		key = msgs[0].Key()
		if b.busy[key] {
			b.t.Errorf("key %s in two batches at once", key)
		}
		b.busy[key] = true
	}
	b.mu.Unlock()
	if b.ordered {
		time.Sleep(time.Millisecond) // give a second batch of the key a chance to overlap
		b.mu.Lock()
		delete(b.busy, key)
		b.mu.Unlock()
	}
	return nil
}

// check runs with b.mu held.
func (b *batchLog) check(msgs []*mqclient.MessageExt) {
	t := b.t
	if len(msgs) == 0 || len(msgs) > b.max {
		t.Errorf("batch of %d messages, want 1..%d", len(msgs), b.max)
		return
	}
	for i, m := range msgs[1:] {
		prev := msgs[i]
		if m.Queue != prev.Queue {
			t.Errorf("batch mixes queues %v and %v", prev.Queue, m.Queue)
		}
		if m.QueueOffset <= prev.QueueOffset {
			t.Errorf("batch out of queue order: offset %d after %d", m.QueueOffset, prev.QueueOffset)
		}
		if b.ordered && m.Key() != prev.Key() {
			t.Errorf("ordered batch mixes keys %q and %q", prev.Key(), m.Key())
		}
	}
	if !b.ordered {
		return
	}
	for _, m := range msgs {
		key, seqS, _ := strings.Cut(string(m.Body), ":")
		seq, _ := strconv.Atoi(seqS)
		if b.byID[m.MsgID] > 0 {
			continue // a redelivery
		}
		if seq != b.next[key] {
			t.Errorf("key %s: got seq %d, expected %d", key, seq, b.next[key])
		}
		b.next[key] = seq + 1
	}
}

func (b *batchLog) distinct() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.byID)
}

// batchConsumer starts a push consumer of group on topic with a batch
// handler; it is shut down at the end of the test unless the test did it.
func (e *env) batchConsumer(t *testing.T, group, topic string, h mqclient.BatchHandler, opts ...mqclient.Option) *mqclient.PushConsumer {
	t.Helper()
	c, err := mqclient.NewPushConsumer(group, e.Options(opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SubscribeBatch(topic, "*", h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Shutdown(ctx)
	})
	return c
}

// sendKeyed sends n messages over keys keys, body "key:seq", one at a
// time, so that per-key order is the send order.
func sendKeyed(t *testing.T, p *mqclient.Producer, topic string, n, keys int) {
	t.Helper()
	seq := make([]int, keys)
	for i := 0; i < n; i++ {
		k := i % keys
		key := "key-" + strconv.Itoa(k)
		m := &mqclient.Message{Topic: topic, ShardingKey: key, Body: []byte(key + ":" + strconv.Itoa(seq[k]))}
		if _, err := p.Send(context.Background(), m); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		seq[k]++
	}
}

func TestPushConsumerBatchSizes(t *testing.T) {
	e := startEnv(t)
	p := e.Producer(t)
	tests := []struct {
		name      string
		batch     int
		pull      int // 0: default
		ordered   bool
		wantLimit int // the largest batch allowed
	}{
		{name: "one", batch: 1, wantLimit: 1},
		{name: "seven", batch: 7, wantLimit: 7},
		{name: "bounded by the pull", batch: 64, pull: 16, wantLimit: 16},
		{name: "ordered one", batch: 1, ordered: true, wantLimit: 1},
		{name: "ordered five", batch: 5, ordered: true, wantLimit: 5},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const n = 300
			topic := e.Topic(t, 4)
			// Everything is stored before the consumer starts, so pulls
			// return full pages and batches can fill up.
			sendKeyed(t, p, topic, n, 6)
			log := newBatchLog(t, tc.wantLimit, tc.ordered)
			opts := []mqclient.Option{mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst), mqclient.WithConsumeBatchSize(tc.batch)}
			if tc.pull > 0 {
				opts = append(opts, mqclient.WithPullBatchSize(tc.pull))
			}
			if tc.ordered {
				opts = append(opts, mqclient.WithOrdered())
			}
			e.batchConsumer(t, "g-batch-"+strconv.Itoa(i), topic, log.handle, opts...)
			tidetest.WaitFor(t, 20*time.Second, "every message", func() bool { return log.distinct() == n })
			log.mu.Lock()
			defer log.mu.Unlock()
			largest := 0
			for _, b := range log.batches {
				largest = max(largest, len(b))
			}
			if tc.wantLimit > 1 && largest < 2 {
				t.Errorf("no batch held more than one message (%d batches)", len(log.batches))
			}
			t.Logf("%d batches, largest %d", len(log.batches), largest)
		})
	}
}

func TestPushConsumerBatchFailureRedelivered(t *testing.T) {
	// Short delay levels, so that the retry topic redelivers within a second.
	e := startEnv(t, func(o *broker.Options) {
		o.Store.MessageDelayLevel = "1s 1s 1s 1s 1s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s"
	})
	topic := e.Topic(t, 2)
	p := e.Producer(t)
	const n = 40
	sendKeyed(t, p, topic, n, 4)
	var mu sync.Mutex
	times := map[string][]int32{} // body -> ReconsumeTimes of each delivery
	failed := 0                   // batches failed
	h := func(ctx context.Context, msgs []*mqclient.MessageExt) error {
		mu.Lock()
		defer mu.Unlock()
		if len(msgs) > 4 {
			t.Errorf("batch of %d", len(msgs))
		}
		fresh := false
		for _, m := range msgs {
			if m.Topic != topic {
				t.Errorf("handler saw topic %q, want the original %q", m.Topic, topic)
			}
			times[string(m.Body)] = append(times[string(m.Body)], m.ReconsumeTimes)
			fresh = fresh || m.ReconsumeTimes == 0
		}
		if fresh { // every first delivery fails, with its whole batch
			failed++
			return errors.New("first attempt fails")
		}
		return nil
	}
	e.batchConsumer(t, "g-batch-retry", topic, h, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
		mqclient.WithConsumeBatchSize(4), mqclient.WithRetryBackoff(50*time.Millisecond, 200*time.Millisecond))
	tidetest.WaitFor(t, 30*time.Second, "every message acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(times) < n {
			return false
		}
		for _, rt := range times {
			if rt[len(rt)-1] == 0 {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for body, rt := range times {
		if rt[0] != 0 {
			t.Errorf("message %s: first delivery has ReconsumeTimes %d", body, rt[0])
		}
		for i := 1; i < len(rt); i++ {
			if rt[i] < 1 {
				t.Errorf("message %s: redelivery %d has ReconsumeTimes %d", body, i, rt[i])
			}
		}
	}
	t.Logf("%d batches failed; sendback supported by the broker: %v", failed, probeSendBack(t, e))
}

func TestPushConsumerBatchOrderedFailureRetriedInPlace(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 1)
	p := e.Producer(t)
	sendKeyed(t, p, topic, 12, 2) // key-0 and key-1, six messages each
	var mu sync.Mutex
	var calls [][]string         // bodies of each batch, in call order
	var reconsume [][]int32      // ReconsumeTimes of each batch
	failures := map[string]int{} // first body of a batch -> failures so far
	h := func(ctx context.Context, msgs []*mqclient.MessageExt) error {
		mu.Lock()
		defer mu.Unlock()
		var bodies []string
		var rts []int32
		for _, m := range msgs {
			bodies = append(bodies, string(m.Body))
			rts = append(rts, m.ReconsumeTimes)
		}
		calls = append(calls, bodies)
		reconsume = append(reconsume, rts)
		if bodies[0] == "key-0:0" && failures["key-0:0"] < 2 {
			failures["key-0:0"]++
			return errors.New("fails twice")
		}
		return nil
	}
	e.batchConsumer(t, "g-batch-ordered-retry", topic, h, mqclient.WithOrdered(),
		mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst), mqclient.WithConsumeBatchSize(3),
		mqclient.WithRetryBackoff(50*time.Millisecond, 100*time.Millisecond))
	done := func(body string) bool {
		for _, c := range calls {
			for _, b := range c {
				if b == body {
					return true
				}
			}
		}
		return false
	}
	tidetest.WaitFor(t, 15*time.Second, "both keys to the end", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return done("key-0:5") && done("key-1:5")
	})
	mu.Lock()
	defer mu.Unlock()
	// key-0's first batch is retried whole, with growing ReconsumeTimes,
	// before any later message of key-0.
	var first [][]string
	var firstRT [][]int32
	for i, c := range calls {
		if strings.HasPrefix(c[0], "key-0:") {
			first = append(first, c)
			firstRT = append(firstRT, reconsume[i])
		}
	}
	if len(first) < 3 {
		t.Fatalf("key-0 batches %v", first)
	}
	for i := 0; i < 3; i++ {
		if strings.Join(first[i], ",") != strings.Join(first[0], ",") {
			t.Errorf("key-0 attempt %d got %v, want the failed batch %v again", i, first[i], first[0])
		}
		for _, rt := range firstRT[i] {
			if rt != int32(i) {
				t.Errorf("key-0 attempt %d: ReconsumeTimes %v, want %d", i, firstRT[i], i)
			}
		}
	}
	if len(first[0]) < 2 {
		t.Logf("the failed batch held one message only (%v): pulls returned one at a time", first[0])
	}
}

func TestPushConsumerBatchShutdownInFlight(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 1)
	p := e.Producer(t)
	const n = 40
	sendKeyed(t, p, topic, n, 1)
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	var mu sync.Mutex
	handled := map[int64]bool{}
	blockedFrom, blockedTo := int64(-1), int64(-1)
	h := func(ctx context.Context, msgs []*mqclient.MessageExt) error {
		first, last := msgs[0].QueueOffset, msgs[len(msgs)-1].QueueOffset
		if first <= 10 && 10 <= last {
			mu.Lock()
			blockedFrom, blockedTo = first, last
			mu.Unlock()
			<-release // past Shutdown, so nothing it does can depend on this batch
			return errors.New("released after shutdown")
		}
		mu.Lock()
		for _, m := range msgs {
			handled[m.QueueOffset] = true
		}
		mu.Unlock()
		return nil
	}
	c := e.batchConsumer(t, "g-batch-shutdown", topic, h, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
		mqclient.WithConsumeBatchSize(4), mqclient.WithConcurrency(4))
	tidetest.WaitFor(t, 15*time.Second, "every batch but the blocked one", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return blockedFrom >= 0 && len(handled) == n-int(blockedTo-blockedFrom+1)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := c.Shutdown(ctx); err == nil {
		t.Error("Shutdown reported no handler still running")
	}
	close(release)
	progress, err := e.Admin.ConsumerProgress(context.Background(), "g-batch-shutdown", topic)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	from := blockedFrom
	mu.Unlock()
	if len(progress) != 1 || progress[0].ConsumerOffset != from {
		t.Fatalf("committed %+v, want offset %d: the first message of the unfinished batch", progress, from)
	}
	// The next member starts with the unfinished batch.
	var got []int64
	var gotMu sync.Mutex
	e.batchConsumer(t, "g-batch-shutdown", topic, func(ctx context.Context, msgs []*mqclient.MessageExt) error {
		gotMu.Lock()
		defer gotMu.Unlock()
		for _, m := range msgs {
			got = append(got, m.QueueOffset)
		}
		return nil
	}, mqclient.WithConsumeBatchSize(4))
	tidetest.WaitFor(t, 15*time.Second, "the rest", func() bool {
		gotMu.Lock()
		defer gotMu.Unlock()
		return len(got) >= int(n-from)
	})
	gotMu.Lock()
	defer gotMu.Unlock()
	if lowest := slices.Min(got); lowest != from {
		t.Errorf("second consumer started at offset %d, want %d", lowest, from)
	}
}

func TestPushConsumerBatchValidation(t *testing.T) {
	for _, n := range []int{0, -1, 1025} {
		if _, err := mqclient.NewPushConsumer("g", mqclient.WithNameServers("127.0.0.1:1"), mqclient.WithConsumeBatchSize(n)); !errors.Is(err, mqclient.ErrInvalidOption) {
			t.Errorf("batch size %d: err %v, want ErrInvalidOption", n, err)
		}
	}
	c, err := mqclient.NewPushConsumer("g", mqclient.WithNameServers("127.0.0.1:1"), mqclient.WithConsumeBatchSize(1024))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SubscribeBatch("t", "*", nil); !errors.Is(err, mqclient.ErrInvalidOption) {
		t.Errorf("nil batch handler: err %v", err)
	}
	if err := c.SubscribeBatch("t", "*", func(context.Context, []*mqclient.MessageExt) error { return nil }); err != nil {
		t.Errorf("SubscribeBatch: %v", err)
	}
}
