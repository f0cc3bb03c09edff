package mqclient_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/tidetest"
)

// stored returns how many messages the topic's queues hold.
func (e *env) stored(t *testing.T, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := e.Admin.TopicStats(ctx, e.Broker.Addr(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, o := range st.OffsetTable {
		n += o.MaxOffset - o.MinOffset
	}
	return n
}

// view returns the stored message of a send result.
func (e *env) view(t *testing.T, offsetMsgID string) *mqclient.MessageExt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := e.Admin.ViewMessage(ctx, offsetMsgID)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestIdempotentProducerStamps(t *testing.T) {
	t.Parallel()
	for _, ext := range []bool{true, false} {
		t.Run("tideExtensions="+strconv.FormatBool(ext), func(t *testing.T) {
			t.Parallel()
			e := startEnv(t, func(o *broker.Options) { o.TideExtensions = ext })
			topic := e.Topic(t, 2)
			p := e.Producer(t, mqclient.WithProducerGroup(tidetest.Name("idem")))
			ctx := context.Background()
			// a stamp copied from a consumed message is never sent on
			msg := &mqclient.Message{Topic: topic, Body: []byte("one"), Properties: map[string]string{protocol.PropProducerStamp: "1:1:1"}}
			q := mqclient.Queue{Topic: topic, BrokerName: "broker-a", QueueID: 1}
			var stamps []string
			for range 2 {
				res, err := p.SendTo(ctx, msg, q)
				if err != nil {
					t.Fatal(err)
				}
				stamps = append(stamps, e.view(t, res.OffsetMsgID).Properties[protocol.PropProducerStamp])
			}
			batch := []*mqclient.Message{{Topic: topic, Body: []byte("b0")}, {Topic: topic, Body: []byte("b1")}}
			res, err := p.SendBatch(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range splitIDs(res.OffsetMsgID) {
				stamps = append(stamps, e.view(t, id).Properties[protocol.PropProducerStamp])
			}
			if !ext {
				for i, s := range stamps {
					if s != "" {
						t.Errorf("message %d stamped %q by a producer talking to a RocketMQ 4.9 broker", i, s)
					}
				}
				return
			}
			var parsed []protocol.ProducerStamp
			for _, s := range stamps {
				st, err := protocol.ParseProducerStamp(s)
				if err != nil {
					t.Fatalf("stamps %q: %v", stamps, err)
				}
				parsed = append(parsed, st)
			}
			if parsed[0].Sequence != 0 || parsed[1].Sequence != 1 || parsed[0].ProducerID == 1 {
				t.Errorf("queue 1 stamps %q", stamps[:2])
			}
			if parsed[3].Sequence != parsed[2].Sequence+1 || parsed[2].ProducerID != parsed[0].ProducerID {
				t.Errorf("batch stamps %q", stamps[2:])
			}
		})
	}
}

func splitIDs(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

func TestIdempotentProducerFencing(t *testing.T) {
	t.Parallel()
	e := startEnv(t)
	topic := e.Topic(t, 1)
	group := tidetest.Name("fence")
	ctx := context.Background()
	zombie := e.Producer(t, mqclient.WithProducerGroup(group), mqclient.WithStableProducerID("orders-0"))
	if _, err := zombie.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("before")}); err != nil {
		t.Fatal(err)
	}
	fresh := e.Producer(t, mqclient.WithProducerGroup(group), mqclient.WithStableProducerID("orders-0"))
	if _, err := fresh.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("new instance")}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		_, err := zombie.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("zombie")})
		if !errors.Is(err, mqclient.ErrProducerFenced) {
			t.Fatalf("zombie send %d: %v, want ErrProducerFenced", i, err)
		}
	}
	if _, err := fresh.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("still fine")}); err != nil {
		t.Fatal(err)
	}
	// Dispatch to the consume queue trails the send answers.
	tidetest.WaitFor(t, 10*time.Second, "dispatch of the 3 accepted sends", func() bool { return e.stored(t, topic) >= 3 })
	want := map[string]int{"before": 1, "new instance": 1, "still fine": 1}
	if bodies := e.storedBodies(t, topic); !maps.Equal(bodies, want) {
		t.Errorf("stored %v, want before, new instance and still fine once each (the zombie's refused)", bodies)
	}
}

// lossyEnv is a broker whose client port is reached through a proxy that
// drops send answers: the broker advertises 127.0.0.2:port, listens on
// 127.0.0.1:port, and the proxy joins the two.
func lossyEnv(t *testing.T, rate float64, opts ...func(*broker.Options)) (*env, *tidetest.DropProxy) {
	t.Helper()
	if ln, err := net.Listen("tcp", "127.0.0.2:0"); err != nil {
		t.Skipf("no 127.0.0.2 loopback address: %v", err)
	} else {
		ln.Close()
	}
	e := startEnv(t, append(opts, func(o *broker.Options) { o.BrokerIP1 = "127.0.0.2" })...)
	_, port, _ := net.SplitHostPort(e.Broker.Addr())
	px := tidetest.StartDropProxy(t, e.Broker.Addr(), net.JoinHostPort("127.0.0.1", port), rate, 23)
	return e, px
}

// sendAll sends n messages from workers goroutines and returns how many
// the producer reported sent.
func sendAll(t *testing.T, n, workers int, send func(i int) error) int64 {
	t.Helper()
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := send(i); err != nil {
					if failed.Add(1) == 1 {
						t.Logf("send %d failed: %v", i, err)
					}
					continue
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	return ok.Load()
}

// TestNoDuplicatesThroughLossyNetwork sends through a proxy that drops 2%
// of the send answers. Every dropped answer makes the producer retry a
// message the broker stored. With idempotent sends the store holds each
// message once; the official client (no stamps) stores the retries again.
func TestNoDuplicatesThroughLossyNetwork(t *testing.T) {
	t.Parallel()
	n := 10000
	if testing.Short() {
		n = 2000
	}
	const rate = 0.02
	e, px := lossyEnv(t, rate)
	topic := e.Topic(t, 4)
	ctx := context.Background()
	p := e.Producer(t, mqclient.WithProducerGroup(tidetest.Name("lossy")), mqclient.WithSendTimeout(500*time.Millisecond), mqclient.WithRetries(8))
	var acked sync.Map
	sent := sendAll(t, n, 16, func(i int) error {
		body := "m" + strconv.Itoa(i)
		_, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte(body)})
		if err == nil {
			acked.Store(body, true)
		}
		return err
	})
	dropped := px.Dropped()
	tidetest.WaitFor(t, 10*time.Second, "dispatch of every stored message", func() bool { return e.stored(t, topic) >= sent })
	dups, missing, distinct := countCopies(e.storedBodies(t, topic), &acked)
	t.Logf("mqclient (idempotent): %d sends, %d reported sent, %d answers dropped, %d distinct messages stored, %d duplicates, %d acknowledged missing",
		n, sent, dropped, distinct, dups, missing)
	if dropped == 0 {
		t.Fatal("the proxy dropped no answer: the test proves nothing")
	}
	if dups != 0 || missing != 0 {
		t.Errorf("%d duplicates, %d acknowledged messages missing", dups, missing)
	}

	// the official client through the same proxy
	official := 2000
	otopic := e.Topic(t, 4)
	op, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{e.NameServer})),
		producer.WithGroupName(tidetest.Name("lossy-official")), producer.WithInstanceName(tidetest.Name("i")),
		producer.WithRetry(8), producer.WithSendMsgTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Start(); err != nil {
		t.Fatal(err)
	}
	defer op.Shutdown()
	before := px.Dropped()
	var oacked sync.Map
	osent := sendAll(t, official, 16, func(i int) error {
		body := "o" + strconv.Itoa(i)
		res, err := op.SendSync(ctx, primitive.NewMessage(otopic, []byte(body)))
		if err == nil && res.Status != primitive.SendOK {
			return fmt.Errorf("status %v", res.Status)
		}
		if err == nil {
			oacked.Store(body, true)
		}
		return err
	})
	odropped := px.Dropped() - before
	tidetest.WaitFor(t, 10*time.Second, "dispatch of the official client's messages", func() bool { return e.stored(t, otopic) >= osent })
	odups, omissing, odistinct := countCopies(e.storedBodies(t, otopic), &oacked)
	t.Logf("official client v2.1.2: %d sends, %d reported sent, %d answers dropped, %d distinct messages stored, %d duplicates, %d acknowledged missing",
		official, osent, odropped, odistinct, odups, omissing)
	if odropped > 0 && odups == 0 {
		t.Errorf("the official client stored no duplicate although %d answers were dropped", odropped)
	}
}

// storedBodies reads every message of topic and counts its bodies.
func (e *env) storedBodies(t *testing.T, topic string) map[string]int {
	t.Helper()
	bodies := map[string]int{}
	for b, ms := range e.storedMessages(t, topic) {
		bodies[b] = len(ms)
	}
	return bodies
}

// TestNoDuplicatesAcrossBrokerRestart restarts the broker while 8
// producers' sends are in flight and 5% of the send answers are dropped:
// no message is stored twice, and every send reported successful is
// stored (sends that failed during the restart may or may not be).
func TestNoDuplicatesAcrossBrokerRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := freePort(t) // the restarted broker binds it again
	opts := func(o *broker.Options) {
		o.Store.StorePathRootDir = dir
		o.BrokerIP1 = "127.0.0.2"
		o.ListenPort = port
	}
	if ln, err := net.Listen("tcp", "127.0.0.2:0"); err != nil {
		t.Skipf("no 127.0.0.2 loopback address: %v", err)
	} else {
		ln.Close()
	}
	e := startEnv(t, opts)
	px := tidetest.StartDropProxy(t, e.Broker.Addr(), net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 0.05, 11)
	topic := e.Topic(t, 2)
	p := e.Producer(t, mqclient.WithProducerGroup(tidetest.Name("restart")), mqclient.WithSendTimeout(300*time.Millisecond), mqclient.WithRetries(5))

	var (
		ok, failed atomic.Int64
		okBodies   sync.Map
		next       atomic.Int64
		stop       = make(chan struct{})
		wg         sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				body := "r" + strconv.FormatInt(next.Add(1), 10)
				if _, err := p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: []byte(body)}); err != nil {
					failed.Add(1)
					continue
				}
				okBodies.Store(body, true)
				ok.Add(1)
			}
		}()
	}
	tidetest.WaitFor(t, 60*time.Second, "1000 sends before the restart", func() bool { return ok.Load() >= 1000 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := e.Broker.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	before := ok.Load()
	e.Broker = brokertest.Start(t, e.NameServer, opts)
	tidetest.WaitFor(t, 60*time.Second, "1000 sends after the restart", func() bool { return ok.Load() >= before+1000 })
	close(stop)
	wg.Wait()

	tidetest.WaitFor(t, 10*time.Second, "dispatch", func() bool { return e.stored(t, topic) >= ok.Load() })
	dups, missing, distinct := countCopies(e.storedBodies(t, topic), &okBodies)
	t.Logf("restart: %d sends OK, %d failed, %d answers dropped, %d distinct bodies stored, %d duplicates, %d OK sends missing",
		ok.Load(), failed.Load(), px.Dropped(), distinct, dups, missing)
	if px.Dropped() == 0 {
		t.Error("the proxy dropped no answer")
	}
	if dups != 0 || missing != 0 {
		t.Errorf("%d duplicates, %d acknowledged messages missing", dups, missing)
	}
}

// countCopies returns the extra copies in bodies (body -> times stored),
// how many acknowledged bodies are not stored, and how many distinct ones
// are.
func countCopies(bodies map[string]int, acked *sync.Map) (dups, missing, distinct int) {
	for _, n := range bodies {
		if n > 1 {
			dups += n - 1
		}
	}
	acked.Range(func(k, _ any) bool {
		if bodies[k.(string)] == 0 {
			missing++
		}
		return true
	})
	return dups, missing, len(bodies)
}
