package mqclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// asyncResults collects SendAsync callbacks by message index.
type asyncResults struct {
	mu   sync.Mutex
	res  map[int]*SendResult
	errs map[int]error
	n    map[int]int // callbacks per message: must be 1
	all  sync.WaitGroup
}

func newAsyncResults(n int) *asyncResults {
	r := &asyncResults{res: map[int]*SendResult{}, errs: map[int]error{}, n: map[int]int{}}
	r.all.Add(n)
	return r
}

func (r *asyncResults) cb(i int) func(*SendResult, error) {
	return func(res *SendResult, err error) {
		r.mu.Lock()
		r.res[i], r.errs[i] = res, err
		r.n[i]++
		first := r.n[i] == 1
		r.mu.Unlock()
		if first {
			r.all.Done()
		}
	}
}

// wait waits for every callback, failing after a generous timeout.
func (r *asyncResults) wait(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	go func() { r.all.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("callbacks missing after 30 s")
	}
}

// sentBatches returns, per request the fake broker got, its code and the
// UNIQ_KEYs of its messages in order.
func sentBatches(t *testing.T, f *fakeBroker) (codes []int16, keys [][]string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, req := range f.log {
		codes = append(codes, req.Code)
		if req.Code != protocol.SendBatchMessage {
			h, err := protocol.DecodeSendRequest(req)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, []string{protocol.DecodeProperties(h.Properties)[protocol.PropUniqKey]})
			continue
		}
		items, err := protocol.DecodeBatch(req.Body)
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, it := range items {
			ks = append(ks, protocol.DecodeProperties(it.Properties)[protocol.PropUniqKey])
		}
		keys = append(keys, ks)
	}
	return codes, keys
}

// itemSize is the batch bytes the batcher counts for msg.
func itemSize(t *testing.T, p *Producer, msg *Message) int {
	o, err := p.encode(msg)
	if err != nil {
		t.Fatal(err)
	}
	// o.props holds no UNIQ_KEY (o.msgID): encodeProps sets it, as a
	// send does (props.go)
	return protocol.BatchItemLen(len(o.body), len(encodeProps(o.props, o.msgID, nil))+protocol.MaxStampPropertyLen)
}

// holdQueues makes the batcher believe a request to each of the n queues
// of topic on broker-a is in flight and never ends, so batches close only
// by size, linger or Shutdown (not when their queue turns idle).
func holdQueues(p *Producer, topic string, n int32) {
	p.batch.mu.Lock()
	defer p.batch.mu.Unlock()
	for i := range n {
		p.batch.busy[Queue{Topic: topic, BrokerName: "broker-a", QueueID: i}]++
		p.batch.inflight["broker-a"]++
	}
}

// autoBatchCase is one case of TestAutoBatch.
type autoBatchCase struct {
	name     string
	linger   time.Duration
	perBatch int // maxBytes in items (0: default)
	msgs     int // messages sent
	msg      func(i int) *Message
	fail     int16 // the broker's answer to every send (0: success)
	failB    int16 // the broker's answer to batch sends (0: as fail)
	idle     bool  // no request in flight before (else holdQueues)
	shutdown bool  // results only come after Shutdown
	// want: the messages' indexes per request, in order
	want [][]int
	// wantCodes: request codes; nil: all SEND_BATCH_MESSAGE
	wantCodes []int16
}

func TestAutoBatch(t *testing.T) {
	body := []byte("0123456789")
	plain := func(i int) *Message { return &Message{Topic: "orders", Body: body} }
	const hour = time.Hour // a linger that never ends within the test: only size or Shutdown send
	tests := []autoBatchCase{
		{name: "linger sends a lone batch", linger: 5 * time.Millisecond, msgs: 1, msg: plain,
			want: [][]int{{0}}, wantCodes: []int16{protocol.SendMessageV2}},
		{name: "a message to an idle queue goes at once", linger: hour, msgs: 1, msg: plain, idle: true,
			want: [][]int{{0}}, wantCodes: []int16{protocol.SendMessageV2}},
		{name: "size closes batches in order", linger: hour, perBatch: 4, msgs: 8, msg: plain,
			want: [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}}},
		{name: "shutdown drains", linger: hour, msgs: 5, msg: plain, shutdown: true,
			want: [][]int{{0, 1, 2, 3, 4}}},
		{name: "each caller gets the batch's error", linger: hour, perBatch: 3, msgs: 3, msg: plain,
			fail: protocol.VersionNotSupported, want: [][]int{{0, 1, 2}}},
		{name: "an illegal batch is sent again message by message", linger: hour, perBatch: 3, msgs: 3, msg: plain,
			failB: protocol.MessageIllegal, want: [][]int{{0, 1, 2}, {0}, {1}, {2}},
			wantCodes: []int16{protocol.SendBatchMessage, protocol.SendMessageV2, protocol.SendMessageV2, protocol.SendMessageV2}},
		{name: "keyed messages batch per queue", linger: hour, perBatch: 3, msgs: 6,
			msg: func(i int) *Message {
				return &Message{Topic: "orders", Body: body, ShardingKey: fmt.Sprintf("k%d", i%2)}
			},
			want: [][]int{{0, 2, 4}, {1, 3, 5}}},
		{name: "delayed messages go alone", linger: hour, msgs: 2, shutdown: true,
			msg:  func(i int) *Message { return &Message{Topic: "orders", Body: body, DelayLevel: 1} },
			want: [][]int{{0}, {1}}, wantCodes: []int16{protocol.SendMessageV2, protocol.SendMessageV2}},
		{name: "compressed messages go alone", linger: hour, msgs: 1, shutdown: true,
			msg:  func(i int) *Message { return &Message{Topic: "orders", Body: make([]byte, 5000)} },
			want: [][]int{{0}}, wantCodes: []int16{protocol.SendMessageV2}},
	}
	for _, tc := range tests {
		for _, mode := range []string{"SendAsync", "Send"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) { testAutoBatch(t, mode, tc) })
		}
	}
}

// testAutoBatch runs one case of TestAutoBatch. mode Send sends each
// message from a goroutine of its own, the next one only once the
// previous one waits in a batch or has returned, so the batches' order
// is the messages' as with SendAsync.
func testAutoBatch(t *testing.T, mode string, tc autoBatchCase) {
	a := newFakeBroker(t, "broker-a")
	a.fail.Store(int32(tc.fail))
	a.failBatch.Store(int32(tc.failB))
	ns := startFakeNameServer(t, "orders", 4, a)
	probe, err := NewProducer(WithNameServers(ns))
	if err != nil {
		t.Fatal(err)
	}
	maxBytes := 0
	if tc.perBatch > 0 {
		maxBytes = tc.perBatch * itemSize(t, probe, tc.msg(0))
	}
	p := newTestProducer(t, WithNameServers(ns), WithTopics("orders"), WithRetries(0),
		WithAutoBatch(tc.linger, maxBytes))
	if !tc.idle {
		holdQueues(p, "orders", 4)
	}
	r := newAsyncResults(tc.msgs)
	msgs := make([]*Message, tc.msgs)
	for i := range msgs {
		msgs[i] = tc.msg(i)
		if mode == "Send" {
			done := make(chan struct{})
			go func() {
				defer close(done)
				r.cb(i)(p.Send(context.Background(), msgs[i]))
			}()
			waitJoined(t, p, msgs[i], done)
			continue
		}
		if err := p.SendAsync(context.Background(), msgs[i], r.cb(i)); err != nil {
			t.Fatal(err)
		}
	}
	if tc.shutdown {
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	r.wait(t)

	// per request: which messages, in which order
	ids := map[string]int{}
	for i := range msgs {
		if tc.fail == 0 {
			ids[r.res[i].MsgID] = i
		}
	}
	codes, keys := sentBatches(t, a)
	if tc.fail == 0 {
		var got [][]int
		for _, ks := range keys {
			var idx []int
			for _, k := range ks {
				idx = append(idx, ids[k])
			}
			got = append(got, idx)
		}
		slices.SortStableFunc(got, func(x, y []int) int { return x[0] - y[0] })
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("requests carried messages %v, want %v", got, tc.want)
		}
	} else if len(keys) != len(tc.want) {
		t.Errorf("%d requests, want %d", len(keys), len(tc.want))
	}
	want := tc.wantCodes
	if want == nil {
		for range tc.want {
			want = append(want, protocol.SendBatchMessage)
		}
	}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("request codes %v, want %v", codes, want)
	}

	for i := range msgs {
		if r.n[i] != 1 {
			t.Errorf("message %d: %d callbacks", i, r.n[i])
		}
		if tc.fail != 0 {
			if !errors.Is(r.errs[i], &protocol.Error{Code: tc.fail}) {
				t.Errorf("message %d: error %v, want code %d", i, r.errs[i], tc.fail)
			}
			continue
		}
		if r.errs[i] != nil {
			t.Fatalf("message %d: %v", i, r.errs[i])
		}
	}
	if tc.fail != 0 {
		return
	}
	// each caller's offset: the batch's first plus its place in it
	for _, batch := range tc.want {
		first := r.res[batch[0]]
		for k, i := range batch {
			res := r.res[i]
			if res.Queue != first.Queue || res.QueueOffset != first.QueueOffset+int64(k) {
				t.Errorf("message %d (#%d of its batch): %v offset %d, first %v offset %d",
					i, k, res.Queue, res.QueueOffset, first.Queue, first.QueueOffset)
			}
		}
	}
}

// waitJoined waits until m waits in an open batch of p or its Send has
// returned (done closed).
func waitJoined(t *testing.T, p *Producer, m *Message, done <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return
		default:
		}
		if waitsIn(p, m) {
			return
		}
		time.Sleep(100 * time.Microsecond) // polling the batcher; bounded by the deadline
	}
	t.Fatal("the Send neither joined a batch nor returned within 30 s")
}

// waitsIn reports whether m waits in an open batch of p.
func waitsIn(p *Producer, m *Message) bool {
	p.batch.mu.Lock()
	defer p.batch.mu.Unlock()
	for _, l := range p.batch.open {
		for _, c := range l.calls {
			if c.msg == m {
				return true
			}
		}
	}
	return false
}

// A caller whose context ends while its message waits in a batch gets
// what Send gets then, ErrSendFailed wrapping the context's error; the
// others of the batch are still sent.
func TestAutoBatchCallerGivesUp(t *testing.T) {
	a := newFakeBroker(t, "broker-a")
	ns := startFakeNameServer(t, "orders", 1, a)
	p := newTestProducer(t, WithNameServers(ns), WithTopics("orders"), WithAutoBatch(time.Hour, 0))
	holdQueues(p, "orders", 1)
	r := newAsyncResults(3)
	gone, cancel := context.WithCancel(context.Background())
	for i, ctx := range []context.Context{context.Background(), gone, context.Background()} {
		if err := p.SendAsync(ctx, &Message{Topic: "orders", Body: []byte("x")}, r.cb(i)); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.wait(t)
	if !errors.Is(r.errs[1], context.Canceled) || !errors.Is(r.errs[1], ErrSendFailed) {
		t.Errorf("the cancelled caller got %v", r.errs[1])
	}
	if r.errs[0] != nil || r.errs[2] != nil {
		t.Errorf("the others got %v, %v", r.errs[0], r.errs[2])
	}
	_, keys := sentBatches(t, a)
	if len(keys) != 1 || len(keys[0]) != 2 {
		t.Errorf("sent %v, want one batch of the two others", keys)
	}
}

// A Send whose context ends while its message waits in a batch returns
// the context's error at once, not when the batch goes; its message is
// taken out of the batch, and the other Sends' are still sent.
func TestAutoBatchSendGivesUp(t *testing.T) {
	a := newFakeBroker(t, "broker-a")
	ns := startFakeNameServer(t, "orders", 1, a)
	p := newTestProducer(t, WithNameServers(ns), WithTopics("orders"), WithAutoBatch(time.Hour, 0))
	holdQueues(p, "orders", 1)
	gone, cancel := context.WithCancel(context.Background())
	errs := make([]error, 3)
	done := make([]chan struct{}, 3)
	for i, ctx := range []context.Context{context.Background(), gone, context.Background()} {
		done[i] = make(chan struct{})
		m := &Message{Topic: "orders", Body: []byte("x")}
		go func() {
			defer close(done[i])
			_, errs[i] = p.Send(ctx, m)
		}()
		waitJoined(t, p, m, done[i])
	}
	cancel()
	<-done[1] // before the batch goes: its linger is an hour
	if !errors.Is(errs[1], context.Canceled) || !errors.Is(errs[1], ErrSendFailed) {
		t.Errorf("the cancelled caller got %v", errs[1])
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done[0]
	<-done[2]
	if errs[0] != nil || errs[2] != nil {
		t.Errorf("the others got %v, %v", errs[0], errs[2])
	}
	_, keys := sentBatches(t, a)
	if len(keys) != 1 || len(keys[0]) != 2 {
		t.Errorf("sent %v, want one batch of the two others", keys)
	}
}

func TestAutoBatchOptionValidation(t *testing.T) {
	if _, err := NewProducer(WithNameServers("127.0.0.1:1"), WithAutoBatch(-time.Millisecond, 0)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("negative linger: %v", err)
	}
	p, err := NewProducer(WithNameServers("127.0.0.1:1"), WithAutoBatch(0, 0))
	if err != nil || p.batch != nil {
		t.Errorf("linger 0 must turn auto-batching off: %v, batcher %v", err, p.batch)
	}
}

// A Send to an idle queue whose context has already ended sends nothing
// and fails as a plain Send does: ErrSendFailed wrapping the context's
// error.
func TestAutoBatchSendEndedContext(t *testing.T) {
	a := newFakeBroker(t, "broker-a")
	ns := startFakeNameServer(t, "orders", 1, a)
	p := newTestProducer(t, WithNameServers(ns), WithTopics("orders"), WithAutoBatch(time.Hour, 0))
	// the first Send caches the route, so the second is eligible for a batch
	if _, err := p.Send(context.Background(), &Message{Topic: "orders", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Send(gone, &Message{Topic: "orders", Body: []byte("y")})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrSendFailed) {
		t.Errorf("Send with an ended context: %v, want ErrSendFailed wrapping context.Canceled", err)
	}
	if codes, _ := sentBatches(t, a); len(codes) != 1 {
		t.Errorf("the broker got %d requests, want only the first Send's", len(codes))
	}
}

// A message to an idle queue of a broker that has a request of the
// batcher in flight gathers behind it (Nagle's rule per broker), and the
// batch goes when that request ends, though it was to another queue.
func TestAutoBatchBusyBrokerGathers(t *testing.T) {
	a := newFakeBroker(t, "broker-a")
	ns := startFakeNameServer(t, "orders", 2, a)
	p := newTestProducer(t, WithNameServers(ns), WithTopics("orders"), WithAutoBatch(time.Hour, 0))
	// a request to queue 0 in flight; queue 1 idle
	q0 := Queue{Topic: "orders", BrokerName: "broker-a", QueueID: 0}
	p.batch.mu.Lock()
	p.batch.busy[q0]++
	p.batch.inflight["broker-a"]++
	p.batch.mu.Unlock()
	r := newAsyncResults(3)
	msgs := make([]*Message, 3)
	for i := range msgs {
		msgs[i] = &Message{Topic: "orders", Body: []byte("x")}
		if err := p.SendAsync(context.Background(), msgs[i], r.cb(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range msgs {
		if !waitsIn(p, m) {
			t.Fatalf("message %d did not wait in a batch while the broker had a request in flight", i)
		}
	}
	p.batch.sent(q0) // the request to queue 0 ends
	r.wait(t)
	for i, err := range r.errs {
		if err != nil {
			t.Errorf("message %d: %v", i, err)
		}
	}
	codes, keys := sentBatches(t, a)
	if len(keys) != 1 || len(keys[0]) != 3 || codes[0] != protocol.SendBatchMessage {
		t.Errorf("sent %v (codes %v), want one batch of the three", keys, codes)
	}
}

// TestAutoBatchLonelyTopicGoesAlone: a topic whose batches leave with one
// message (loneAfter of them) stops waiting behind its busy broker: its
// messages go alone at once, except one in loneProbe, which opens a batch
// again; a batch that gathers many lifts the average and ends it. A
// topic whose batches mostly hold several keeps batching through a run of
// single ones.
func TestAutoBatchLonelyTopicGoesAlone(t *testing.T) {
	a := newFakeBroker(t, "broker-a")
	ns := startFakeNameServer(t, "orders", 2, a)
	p := newTestProducer(t, WithNameServers(ns), WithTopics("orders"), WithAutoBatch(time.Hour, 0))
	holdQueues(p, "orders", 2) // the broker stays busy: every message would wait
	send := func(n int) (waited []bool) {
		t.Helper()
		r := newAsyncResults(n)
		for i := range n {
			m := &Message{Topic: "orders", Body: []byte("x")}
			if err := p.SendAsync(context.Background(), m, r.cb(i)); err != nil {
				t.Fatal(err)
			}
			waited = append(waited, waitsIn(p, m))
		}
		p.batch.flush()
		r.wait(t)
		for i, err := range r.errs {
			if err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
		}
		return waited
	}
	for i := range loneAfter {
		if w := send(1); !w[0] {
			t.Fatalf("batch %d of one: the message did not wait in a batch", i)
		}
	}
	for i := range loneProbe - 1 {
		if w := send(1); w[0] {
			t.Fatalf("after %d batches of one, message %d waited in a batch; want it sent alone", loneAfter, i)
		}
	}
	if w := send(8); !w[0] || !w[7] {
		t.Fatalf("probe: %v, want the probe to open a batch and the others to join it", w)
	}
	for i := range 8 { // a busy topic: batches of three, then single ones
		if w := send(3); !w[0] {
			t.Fatalf("batch %d of three did not wait", i)
		}
	}
	for i := range 8 {
		if w := send(1); !w[0] {
			t.Fatalf("single batch %d after batches of three went alone; want it to keep batching", i)
		}
	}
	if n := len(p.batch.shapes); n != 1 {
		t.Errorf("%d topics counted, want 1", n)
	}
}
