package mqclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func newTestProducer(t *testing.T, opts ...Option) *Producer {
	t.Helper()
	p, err := NewProducer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	return p
}

func TestProducerRetryMovesToAnotherBroker(t *testing.T) {
	a, b := newFakeBroker(t, "broker-a"), newFakeBroker(t, "broker-b")
	a.fail.Store(int32(protocol.SystemError))
	ns := startFakeNameServer(t, "orders", 2, a, b)
	p := newTestProducer(t, WithNameServers(ns), WithRetries(2))
	for i := 0; i < 6; i++ {
		res, err := p.Send(context.Background(), &Message{Topic: "orders", Body: []byte("x")})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if res.Queue.BrokerName != "broker-b" {
			t.Fatalf("send %d landed on %s", i, res.Queue.BrokerName)
		}
	}
	// broker-a failed once, then was isolated: later sends skip it.
	if n := a.sends.Load(); n != 1 {
		t.Errorf("broker-a got %d sends, want 1 (isolated after its failure)", n)
	}
}

func TestProducerRetriesExhausted(t *testing.T) {
	a := newFakeBroker(t, "broker-a")
	a.fail.Store(int32(protocol.SystemBusy))
	ns := startFakeNameServer(t, "orders", 1, a)
	p := newTestProducer(t, WithNameServers(ns), WithRetries(2))
	_, err := p.Send(context.Background(), &Message{Topic: "orders", Body: []byte("x")})
	if !errors.Is(err, ErrSendFailed) || !errors.Is(err, &protocol.Error{Code: protocol.SystemBusy}) {
		t.Fatalf("got %v", err)
	}
	if n := a.sends.Load(); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
}

func TestProducerNoRetryOnIllegalMessage(t *testing.T) {
	a := newFakeBroker(t, "broker-a")
	a.fail.Store(int32(protocol.MessageIllegal))
	ns := startFakeNameServer(t, "orders", 1, a)
	p := newTestProducer(t, WithNameServers(ns), WithRetries(2))
	if _, err := p.Send(context.Background(), &Message{Topic: "orders", Body: []byte("x")}); err == nil {
		t.Fatal("want an error")
	}
	if n := a.sends.Load(); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

func TestProducerShardedRetryKeepsQueue(t *testing.T) {
	a, b := newFakeBroker(t, "broker-a"), newFakeBroker(t, "broker-b")
	ns := startFakeNameServer(t, "orders", 2, a, b)
	p := newTestProducer(t, WithNameServers(ns), WithRetries(1))
	res, err := p.Send(context.Background(), &Message{Topic: "orders", Body: []byte("x"), ShardingKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	failing := map[string]*fakeBroker{"broker-a": a, "broker-b": b}[res.Queue.BrokerName]
	failing.fail.Store(int32(protocol.SystemError))
	if _, err := p.Send(context.Background(), &Message{Topic: "orders", Body: []byte("x"), ShardingKey: "k"}); err == nil {
		t.Fatal("a sharded message must not move to another broker")
	}
}

func TestProducerTopicNotFound(t *testing.T) {
	a := newFakeBroker(t, "broker-a")
	ns := startFakeNameServer(t, "orders", 1, a)
	p := newTestProducer(t, WithNameServers(ns), WithAutoCreateTopic(false))
	_, err := p.Send(context.Background(), &Message{Topic: "missing", Body: []byte("x")})
	if !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("got %v", err)
	}
}

func TestProducerAsyncCallbackOnce(t *testing.T) {
	a := newFakeBroker(t, "broker-a")
	ns := startFakeNameServer(t, "orders", 4, a)
	p := newTestProducer(t, WithNameServers(ns))
	done := make(chan error, 100)
	for i := 0; i < 100; i++ {
		if err := p.SendAsync(context.Background(), &Message{Topic: "orders", Body: []byte("x")}, func(_ *SendResult, err error) {
			done <- err
		}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if len(done) != 100 {
		t.Fatalf("%d callbacks after Shutdown, want 100", len(done))
	}
	for len(done) > 0 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestFaultIsolation(t *testing.T) {
	var f faultTable
	f.init()
	now := time.Unix(1000, 0)
	f.now = func() time.Time { return now }
	f.record("a", 100*time.Millisecond, false)
	if !f.available("a") {
		t.Fatal("fast broker isolated")
	}
	f.record("a", 0, true)
	if f.available("a") {
		t.Fatal("failed broker available")
	}
	now = now.Add(31 * time.Second)
	if !f.available("a") {
		t.Fatal("isolation did not end")
	}
	f.record("b", 1500*time.Millisecond, false)
	if f.available("b") {
		t.Fatal("slow broker not isolated")
	}
}

type tagger struct{ after chan *SendResult }

func (tg tagger) BeforeSend(_ context.Context, m *Message) error {
	if m.Properties == nil {
		m.Properties = map[string]string{}
	}
	m.Properties["trace"] = "abc"
	if string(m.Body) == "forbidden" {
		return errors.New("refused by interceptor")
	}
	return nil
}

func (tg tagger) AfterSend(_ context.Context, _ *Message, res *SendResult, err error) {
	if err == nil {
		tg.after <- res
	}
}

func TestProducerInterceptors(t *testing.T) {
	a := newFakeBroker(t, "broker-a")
	ns := startFakeNameServer(t, "orders", 1, a)
	tg := tagger{after: make(chan *SendResult, 1)}
	p := newTestProducer(t, WithNameServers(ns), WithSendInterceptors(tg))
	res, err := p.Send(context.Background(), &Message{Topic: "orders", Body: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if got := <-tg.after; got != res {
		t.Errorf("AfterSend got %+v, want the send result", got)
	}
	a.mu.Lock()
	props := protocol.DecodeProperties(a.log[0].Ext("i"))
	a.mu.Unlock()
	if props["trace"] != "abc" || props[protocol.PropUniqKey] != res.MsgID {
		t.Errorf("wire properties %v", props)
	}
	if _, err := p.Send(context.Background(), &Message{Topic: "orders", Body: []byte("forbidden")}); err == nil {
		t.Error("interceptor error did not abort the send")
	}
	if n := a.sends.Load(); n != 1 {
		t.Errorf("%d sends reached the broker, want 1", n)
	}
}

func TestStaleRoute(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"dial", fmt.Errorf("send: %w", remoting.ErrDial), true},
		{"closed", fmt.Errorf("send: %w", remoting.ErrClosed), true},
		{"timeout (a killed master)", fmt.Errorf("send: %w", remoting.ErrTimeout), true},
		{"topic not exist", &protocol.Error{Code: protocol.TopicNotExist}, true},
		{"a slave's answer (a demoted master)", &protocol.Error{Code: protocol.ServiceNotAvailable}, true},
		{"flush timeout", &protocol.Error{Code: protocol.FlushDiskTimeout}, false},
		{"other", errors.New("boom"), false},
	} {
		if got := staleRoute(tc.err); got != tc.want {
			t.Errorf("%s: staleRoute = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestProducerAwaitsNewMaster: the master of broker-a vanishes (its
// connections stay open, nothing answers: every request times out) and, a
// moment later, the NameServer names a new master under another address,
// as a controller-mode failover does. The send in flight times out once;
// its retries do not go back to the dead address (each would cost another
// send timeout) but wait for the route to name the new master, where the
// send succeeds; the route change heartbeats the new master only (a
// heartbeat to the dead one held the send for a request timeout).
func TestProducerAwaitsNewMaster(t *testing.T) {
	old, successor := newFakeBroker(t, "broker-a"), newFakeBroker(t, "broker-a")
	master, nsAddr := routeNameServer(t, old.addr)

	const sendTimeout = 500 * time.Millisecond
	p := newTestProducer(t, WithNameServers(nsAddr), WithRetries(2), WithSendTimeout(sendTimeout), WithRequestTimeout(sendTimeout),
		WithIdempotence(false))
	ctx := context.Background()
	if _, err := p.Send(ctx, &Message{Topic: "orders", Body: []byte("before")}); err != nil {
		t.Fatalf("send to the live master: %v", err)
	}
	old.hang.Store(true)
	done := make(chan struct{})
	defer close(done)
	go func() { // the new master registers one send timeout after the dead one got a request
		for old.hung.Load() == 0 {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		select {
		case <-done:
		case <-time.After(sendTimeout):
			master.Store(successor.addr)
		}
	}()
	res, err := p.Send(ctx, &Message{Topic: "orders", Body: []byte("across")})
	if err != nil {
		t.Fatalf("send across the failover: %v", err)
	}
	if res.Status != SendOK || successor.sends.Load() != 1 {
		t.Fatalf("status %v, %d sends on the new master, want SEND_OK and 1", res.Status, successor.sends.Load())
	}
	if n := old.hung.Load(); n != 1 {
		t.Errorf("the dead master got %d requests, want 1 (only the send in flight at its death)", n)
	}
}

// TestProducerLeavesADemotedMaster: the producer's cached route names a
// master that was demoted meanwhile (a killed master restarted as a slave
// under its old address, the controller having elected its slave); the
// NameServer names the new master. The demoted broker answers the send
// SERVICE_NOT_AVAILABLE, as a slave does; the producer looks the route up
// again and the retry reaches the new master. Before, every retry went to
// the cached address until the periodic route refresh (30 s).
func TestProducerLeavesADemotedMaster(t *testing.T) {
	old, successor := newFakeBroker(t, "broker-a"), newFakeBroker(t, "broker-a")
	master, nsAddr := routeNameServer(t, old.addr)
	p := newTestProducer(t, WithNameServers(nsAddr), WithRetries(2), WithIdempotence(false))
	ctx := context.Background()
	if _, err := p.Send(ctx, &Message{Topic: "orders", Body: []byte("before")}); err != nil {
		t.Fatalf("send to the master: %v", err)
	}
	old.fail.Store(int32(protocol.ServiceNotAvailable))
	master.Store(successor.addr)
	res, err := p.Send(ctx, &Message{Topic: "orders", Body: []byte("after")})
	if err != nil {
		t.Fatalf("send after the demotion: %v", err)
	}
	if res.Status != SendOK || successor.sends.Load() != 1 {
		t.Fatalf("status %v, %d sends on the new master, want SEND_OK and 1", res.Status, successor.sends.Load())
	}
}

// routeNameServer starts a NameServer whose route of every topic names
// one broker-a queue on the master address held in the returned value
// (initially addr); a test stores another address to fail over.
func routeNameServer(t *testing.T, addr string) (*atomic.Value, string) {
	var master atomic.Value
	master.Store(addr)
	ns := remoting.NewServer(remoting.ServerOptions{})
	ns.HandleFunc(protocol.GetRouteInfoByTopic, func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		r := protocol.TopicRouteData{
			BrokerDatas: []protocol.BrokerData{{Cluster: "c", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: master.Load().(string)}}},
			QueueDatas:  []protocol.QueueData{{BrokerName: "broker-a", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		}
		resp := protocol.NewResponse(req, protocol.Success, "")
		resp.Body = r.Encode()
		return resp
	})
	return &master, startServer(t, ns)
}

// afterCount counts AfterSend calls and keeps the errors they saw.
type afterCount struct {
	mu   sync.Mutex
	errs []error
}

func (*afterCount) BeforeSend(context.Context, *Message) error { return nil }

func (a *afterCount) AfterSend(_ context.Context, _ *Message, _ *SendResult, err error) {
	a.mu.Lock()
	a.errs = append(a.errs, err)
	a.mu.Unlock()
}

// A send whose context has already ended sends nothing and ends the same
// way every time, on every path: Send returns, and SendAsync's callback
// gets, ErrSendFailed wrapping the context's error; SendAsync itself
// returns nil and calls cb exactly once; the interceptors see that error
// too; the broker is not taken for unreachable. Each case runs many
// times: SendAsync used to choose at random (a select on a free slot and
// ctx.Done) between returning the bare context error without calling cb
// and calling cb with ErrSendFailed.
func TestSendEndedContext(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancelExpired()
	ctxs := []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"canceled", canceled, context.Canceled},
		{"expired", expired, context.DeadlineExceeded},
	}
	paths := []struct {
		name  string
		batch time.Duration // WithAutoBatch's linger; 0: off
		busy  bool          // a request to the queue is in flight: a message would join a batch
	}{
		{"plain", 0, false},
		{"batcher, idle queue", time.Hour, false},
		{"batcher, busy queue", time.Hour, true},
	}
	const runs = 200
	for _, call := range []string{"Send", "SendAsync"} {
		for _, path := range paths {
			for _, c := range ctxs {
				t.Run(call+"/"+path.name+"/"+c.name, func(t *testing.T) {
					a := newFakeBroker(t, "broker-a")
					ns := startFakeNameServer(t, "orders", 1, a)
					after := &afterCount{}
					p := newTestProducer(t, WithNameServers(ns), WithTopics("orders"),
						WithAutoBatch(path.batch, 0), WithSendInterceptors(after))
					// caches the route: later messages may join a batch
					if _, err := p.Send(context.Background(), &Message{Topic: "orders", Body: []byte("first")}); err != nil {
						t.Fatal(err)
					}
					if path.busy {
						holdQueues(p, "orders", 1)
					}
					var calls atomic.Int32
					for i := range runs {
						m := &Message{Topic: "orders", Body: []byte("late")}
						var err error
						switch call {
						case "Send":
							_, err = p.Send(c.ctx, m)
						case "SendAsync":
							got := make(chan error, 1)
							if rerr := p.SendAsync(c.ctx, m, func(_ *SendResult, err error) {
								calls.Add(1)
								got <- err
							}); rerr != nil {
								t.Fatalf("run %d: SendAsync returned %v, want nil and the outcome in cb", i, rerr)
							}
							select {
							case err = <-got:
							case <-time.After(30 * time.Second):
								t.Fatalf("run %d: no callback within 30 s", i)
							}
						}
						if !errors.Is(err, ErrSendFailed) || !errors.Is(err, c.want) {
							t.Fatalf("run %d: %v, want ErrSendFailed wrapping %v", i, err, c.want)
						}
					}
					if err := p.Shutdown(context.Background()); err != nil {
						t.Fatal(err)
					}
					if call == "SendAsync" && calls.Load() != runs {
						t.Errorf("%d callbacks for %d SendAsync calls", calls.Load(), runs)
					}
					if n := a.sends.Load(); n != 1 {
						t.Errorf("the broker got %d sends, want only the first", n)
					}
					after.mu.Lock()
					defer after.mu.Unlock()
					if len(after.errs) != runs+1 {
						t.Errorf("%d AfterSend calls, want %d", len(after.errs), runs+1)
					}
					for _, err := range after.errs[1:] {
						if !errors.Is(err, ErrSendFailed) || !errors.Is(err, c.want) {
							t.Errorf("AfterSend got %v", err)
							break
						}
					}
					if !p.c.unreachable.available(a.addr) {
						t.Error("the broker was isolated for a send that never left")
					}
				})
			}
		}
	}
}
