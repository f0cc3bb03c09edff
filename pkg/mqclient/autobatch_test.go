package mqclient_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

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
// message of it and stores none twice.
func TestAutoBatchNoDuplicatesThroughLossyNetwork(t *testing.T) {
	t.Parallel()
	n := 5000
	if testing.Short() {
		n = 2000
	}
	e, px := lossyEnv(t, 0.05)
	topic := e.Topic(t, 4)
	p := e.Producer(t, mqclient.WithTopics(topic), mqclient.WithProducerGroup(tidetest.Name("lossy-batch")),
		mqclient.WithAutoBatch(5*time.Millisecond, 0), mqclient.WithSendTimeout(500*time.Millisecond), mqclient.WithRetries(8))
	_, errs := sendAsyncAll(t, p, topic, n, 64, func(i int) string { return "b" + strconv.Itoa(i) })
	var acked sync.Map
	sent := int64(0)
	for i, err := range errs {
		if err == nil {
			acked.Store("b"+strconv.Itoa(i), true)
			sent++
		}
	}
	dropped := px.Dropped()
	tidetest.WaitFor(t, 10*time.Second, "dispatch of every stored message", func() bool { return e.stored(t, topic) >= sent })
	dups, missing, distinct := countCopies(e.storedBodies(t, topic), &acked)
	t.Logf("auto-batched, idempotent: %d sends, %d reported sent, %d answers dropped of %d, %d distinct stored, %d duplicates, %d acknowledged missing",
		n, sent, dropped, dropped+px.Passed(), distinct, dups, missing)
	if dropped == 0 {
		t.Fatal("the proxy dropped no answer: the test proves nothing")
	}
	if dups != 0 || missing != 0 {
		t.Errorf("%d duplicates, %d acknowledged messages missing", dups, missing)
	}
}
