package mqclient_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/tidetest"
)

// sendAsyncAll sends n messages with SendAsync, at most inflight
// pending, and waits for every callback; body(i) names message i.
// It returns the results and errors by index.
func sendAsyncAll(t *testing.T, p *mqclient.Producer, topic string, n, inflight int, body func(i int) string) ([]*mqclient.SendResult, []error) {
	t.Helper()
	res, errs := make([]*mqclient.SendResult, n), make([]error, n)
	sem := make(chan struct{}, inflight)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		err := p.SendAsync(context.Background(), &mqclient.Message{Topic: topic, Body: []byte(body(i))}, func(r *mqclient.SendResult, err error) {
			res[i], errs[i] = r, err
			<-sem
			wg.Done()
		})
		if err != nil {
			t.Fatalf("SendAsync %d: %v", i, err)
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("callbacks missing after 2 min")
	}
	return res, errs
}

// storedMessages reads every message of topic, by body.
func (e *env) storedMessages(t *testing.T, topic string) map[string][]*mqclient.MessageExt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pc, err := mqclient.NewPullConsumer(tidetest.Name("read"), e.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pc.Shutdown(context.Background())
	qs, err := pc.Queues(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*mqclient.MessageExt{}
	for _, q := range qs {
		for off := int64(0); ; {
			res, err := pc.Pull(ctx, q, "*", off, 32, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Messages {
				out[string(m.Body)] = append(out[string(m.Body)], m)
			}
			if res.Status != mqclient.PullFound && res.Status != mqclient.PullOffsetIllegal {
				break
			}
			off = res.NextOffset
		}
	}
	return out
}

// TestAutoBatchResultsMatchStore: auto-batched SendAsync calls each get
// the MsgID, OffsetMsgID, queue and offset of their own stored message,
// and the broker got fewer send requests than messages.
func TestAutoBatchResultsMatchStore(t *testing.T) {
	t.Parallel()
	e, px := lossyEnv(t, 0) // drops nothing: counts the send answers
	topic := e.Topic(t, 4)
	p := e.Producer(t, mqclient.WithTopics(topic), mqclient.WithAutoBatch(20*time.Millisecond, 0))
	const n = 500
	res, errs := sendAsyncAll(t, p, topic, n, 64, func(i int) string { return "m" + strconv.Itoa(i) })
	for i, err := range errs {
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	tidetest.WaitFor(t, 10*time.Second, "dispatch of every message", func() bool { return e.stored(t, topic) >= n })
	stored := e.storedMessages(t, topic)
	for i, r := range res {
		ms := stored["m"+strconv.Itoa(i)]
		if len(ms) != 1 {
			t.Fatalf("message %d stored %d times", i, len(ms))
		}
		m := ms[0]
		if r.MsgID != m.MsgID || r.OffsetMsgID != m.OffsetMsgID || r.Queue != m.Queue || r.QueueOffset != m.QueueOffset {
			t.Errorf("message %d: result %s %s %v@%d, stored %s %s %v@%d", i,
				r.MsgID, r.OffsetMsgID, r.Queue, r.QueueOffset, m.MsgID, m.OffsetMsgID, m.Queue, m.QueueOffset)
		}
	}
	requests := px.Passed()
	t.Logf("%d messages in %d send requests", n, requests)
	if requests >= n {
		t.Errorf("%d send requests for %d messages: nothing was batched", requests, n)
	}
}

// TestAutoBatchNoDuplicatesThroughLossyNetwork: a batch whose answer is
// lost is retried whole; with idempotent sends the broker recognises every
// message of it and stores none twice. Batches of SendAsync calls and of
// concurrent Send calls alike.
func TestAutoBatchNoDuplicatesThroughLossyNetwork(t *testing.T) {
	t.Parallel()
	n := 5000
	if testing.Short() {
		n = 2000
	}
	for _, kind := range []string{"SendAsync", "Send"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e, px := lossyEnv(t, 0.05)
			topic := e.Topic(t, 4)
			p := e.Producer(t, mqclient.WithTopics(topic), mqclient.WithProducerGroup(tidetest.Name("lossy-batch")),
				mqclient.WithAutoBatch(5*time.Millisecond, 0), mqclient.WithSendTimeout(500*time.Millisecond), mqclient.WithRetries(8))
			body := func(i int) string { return "b" + strconv.Itoa(i) }
			var errs []error
			if kind == "Send" {
				_, errs = sendSyncAll(t, p, topic, n, 64, body)
			} else {
				_, errs = sendAsyncAll(t, p, topic, n, 64, body)
			}
			var acked sync.Map
			sent := int64(0)
			for i, err := range errs {
				if err == nil {
					acked.Store(body(i), true)
					sent++
				}
			}
			dropped := px.Dropped()
			tidetest.WaitFor(t, 10*time.Second, "dispatch of every stored message", func() bool { return e.stored(t, topic) >= sent })
			dups, missing, distinct := countCopies(e.storedBodies(t, topic), &acked)
			t.Logf("auto-batched %s, idempotent: %d sends, %d reported sent, %d answers dropped of %d, %d distinct stored, %d duplicates, %d acknowledged missing",
				kind, n, sent, dropped, dropped+px.Passed(), distinct, dups, missing)
			if dropped == 0 {
				t.Fatal("the proxy dropped no answer: the test proves nothing")
			}
			if dups != 0 || missing != 0 {
				t.Errorf("%d duplicates, %d acknowledged messages missing", dups, missing)
			}
		})
	}
}

// sendSyncAll sends n messages with Send from workers goroutines;
// body(i) names message i. It returns the results and errors by index.
func sendSyncAll(t *testing.T, p *mqclient.Producer, topic string, n, workers int, body func(i int) string) ([]*mqclient.SendResult, []error) {
	t.Helper()
	res, errs := make([]*mqclient.SendResult, n), make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				res[i], errs[i] = p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: []byte(body(i))})
			}
		})
	}
	wg.Wait()
	return res, errs
}

// TestAutoBatchSyncSends: concurrent Send calls to a busy queue go in
// batches, and each caller gets its own stored message's MsgID,
// OffsetMsgID, queue and offset, with the status of the batch's answer:
// SEND_OK only once the broker flushed (SYNC_FLUSH) or replicated
// (SYNC_MASTER) as it would for a lone message; a SYNC_MASTER without its
// slave answers SLAVE_NOT_AVAILABLE, and so every caller of the batch
// gets that status, never SEND_OK.
func TestAutoBatchSyncSends(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		broker func(*broker.Options)
		want   mqclient.SendStatus
	}{
		{"ASYNC_FLUSH", func(*broker.Options) {}, mqclient.SendOK},
		{"SYNC_FLUSH", func(o *broker.Options) { o.Store.FlushDiskType = "SYNC_FLUSH" }, mqclient.SendOK},
		{"SYNC_MASTER without its slave", func(o *broker.Options) { o.BrokerRole = "SYNC_MASTER" }, mqclient.SendSlaveNotAvailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, px := lossyEnv(t, 0, tc.broker) // drops nothing: counts the send answers
			topic := e.Topic(t, 2)
			p := e.Producer(t, mqclient.WithTopics(topic), mqclient.WithAutoBatch(20*time.Millisecond, 0))
			const n = 400
			res, errs := sendSyncAll(t, p, topic, n, 32, func(i int) string { return "s" + strconv.Itoa(i) })
			for i, err := range errs {
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				if res[i].Status != tc.want {
					t.Fatalf("message %d: status %v, want %v", i, res[i].Status, tc.want)
				}
			}
			tidetest.WaitFor(t, 10*time.Second, "dispatch of every message", func() bool { return e.stored(t, topic) >= n })
			stored := e.storedMessages(t, topic)
			for i, r := range res {
				ms := stored["s"+strconv.Itoa(i)]
				if len(ms) != 1 {
					t.Fatalf("message %d stored %d times", i, len(ms))
				}
				m := ms[0]
				if r.MsgID != m.MsgID || r.OffsetMsgID != m.OffsetMsgID || r.Queue != m.Queue || r.QueueOffset != m.QueueOffset {
					t.Errorf("message %d: result %s %s %v@%d, stored %s %s %v@%d", i,
						r.MsgID, r.OffsetMsgID, r.Queue, r.QueueOffset, m.MsgID, m.OffsetMsgID, m.Queue, m.QueueOffset)
				}
			}
			requests := px.Passed()
			t.Logf("%d messages from 32 senders in %d send requests", n, requests)
			if requests >= n {
				t.Errorf("%d send requests for %d messages: nothing was batched", requests, n)
			}
		})
	}
}

// TestAutoBatchLoneSyncSender: a single goroutine's Sends find their
// queue idle every time (each waits for the previous one's answer), so
// each goes at once in a request of its own, in order: auto-batching
// changes nothing for it.
func TestAutoBatchLoneSyncSender(t *testing.T) {
	t.Parallel()
	e, px := lossyEnv(t, 0)
	topic := e.Topic(t, 1)
	p := e.Producer(t, mqclient.WithTopics(topic), mqclient.WithAutoBatch(time.Hour, 0)) // a linger never waited for
	const n = 50
	var last int64 = -1
	for i := range n {
		r, err := p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: []byte("l" + strconv.Itoa(i))})
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if r.QueueOffset != last+1 {
			t.Fatalf("message %d at offset %d after %d", i, r.QueueOffset, last)
		}
		last = r.QueueOffset
	}
	if got := px.Passed(); got != n {
		t.Errorf("%d send requests for %d sequential Sends, want one each", got, n)
	}
}
