package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/tools/console"
)

// fixture is a NameServer, a broker and a console with real data: the
// demo's topics, the messages of a few orders, a live consumer group
// (inventory-service) with a retried delivery, an offline group
// (payment-service) with a dead letter, a slave, and a pending half
// message.
type fixture struct {
	ns, broker, base string
	order            string // the order id with the interesting history
	created, paid    *mqclient.SendResult
	dlq              string // offset message id of the dead letter
	half             *mqclient.SendResult
	srv              *console.Server
	users            string       // the users file: one user per role (testUsers)
	clock            *clock       // the console's clock
	client           *http.Client // signed in as admin
}

// clock is a settable clock for the console's sessions, sign-in limits
// and audit records: tests move it instead of sleeping.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var lowCost sync.Once

// testUsers writes a users file with one user per role: viewer, operator
// and admin, each with the password NAME+"-password".
func testUsers(t *testing.T) string {
	t.Helper()
	lowCost.Do(func() { console.BcryptCost = bcrypt.MinCost })
	path := filepath.Join(t.TempDir(), "users")
	err := console.EditUsers(path, func(us map[string]console.User) error {
		for _, n := range []string{"viewer", "operator", "admin"} {
			h, err := console.HashPassword(n + "-password")
			if err != nil {
				return err
			}
			role, _ := console.ParseRole(n)
			us[n] = console.User{Name: n, Role: role, Hash: h}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// authOptions sets o's sign-in to a fresh users file and clock and
// returns them.
func authOptions(t *testing.T, o *console.Options) (string, *clock) {
	users, c := testUsers(t), newClock()
	o.Auth.UsersFile, o.Now = users, c.Now
	return users, c
}

// signIn returns a client with a cookie jar signed in as user (its
// password is user+"-password") at base.
func signIn(t *testing.T, base, user string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Transport: http.DefaultTransport}
	if code, body := login(t, c, base, user, user+"-password"); code != http.StatusOK || !strings.Contains(body, user) {
		t.Fatalf("sign in as %s: %d\n%s", user, code, body)
	}
	return c
}

// login posts the sign-in form and follows the redirect.
func login(t *testing.T, c *http.Client, base, user, password string) (int, string) {
	t.Helper()
	resp, err := c.PostForm(base+"/login", url.Values{"user": {user}, "password": {password}, "next": {"/topics"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls cond every 50 ms until it holds, for at most 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// startServer starts a console with o until the test ends.
func startServer(t *testing.T, o console.Options) *console.Server {
	t.Helper()
	s, err := console.New(o)
	if err == nil {
		err = s.Start(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return s
}

// consume starts a push consumer of group on topics that accepts every
// message, committing every 100 ms, until the test ends.
func consume(t *testing.T, ctx context.Context, opts []mqclient.Option, group string, topics ...string) {
	t.Helper()
	c, err := mqclient.NewPushConsumer(group, append(opts, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
		mqclient.WithCommitInterval(100*time.Millisecond))...)
	for _, topic := range topics {
		if err == nil {
			err = c.Subscribe(topic, "*", func(context.Context, *mqclient.MessageExt) error { return nil })
		}
	}
	if err == nil {
		err = c.Start(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown(context.Background()) })
}

func quiet() *slog.Logger {
	if os.Getenv("TIDE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := &fixture{ns: nameservertest.Start(t), order: "ord-1001"}
	b := brokertest.Start(t, f.ns)
	f.broker = b.Addr()
	// broker-a's slave, which finds its master through the NameServer.
	brokertest.Start(t, f.ns, func(o *broker.Options) { o.BrokerRole, o.BrokerID = "SLAVE", 1 })
	opts := []mqclient.Option{mqclient.WithNameServers(f.ns), mqclient.WithLogger(quiet())}

	admin, err := mqclient.NewAdmin(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Shutdown(context.Background()) })
	for topic, queues := range map[string]int{"order-events": 4, "inventory-events": 2, "payment-events": 2} {
		if err := admin.CreateTopic(ctx, topic, mqclient.TopicConfig{Queues: queues}); err != nil {
			t.Fatal(err)
		}
		if err := admin.WaitTopic(ctx, topic); err != nil {
			t.Fatal(err)
		}
	}

	p, err := mqclient.NewProducer(append(opts, mqclient.WithProducerGroup("order-producer"))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	send := func(topic, tag, order string, amount int) *mqclient.SendResult {
		body := fmt.Sprintf(`{"orderId":%q,"event":%q,"amountCents":%d}`, order, tag, amount)
		res, err := p.Send(ctx, &mqclient.Message{Topic: topic, Tag: tag, Keys: []string{order}, ShardingKey: order, Body: []byte(body),
			Properties: map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for i := 2; i <= 4; i++ {
		o := "ord-100" + strconv.Itoa(i)
		send("order-events", "OrderCreated", o, 1000*i)
		send("inventory-events", "StockReserved", o, 0)
	}
	f.created = send("order-events", "OrderCreated", f.order, 4200)
	send("inventory-events", "StockReserved", f.order, 0)
	send("payment-events", "PaymentSucceeded", f.order, 4200)
	f.paid = send("order-events", "OrderPaid", f.order, 4200)

	// inventory-service: online, consumes everything; order-service:
	// online, consumes the other services' events.
	consume(t, ctx, opts, "inventory-service", "order-events")
	consume(t, ctx, opts, "order-service", "inventory-events", "payment-events")

	// payment-service: offline; committed past OrderCreated of the order,
	// which it also dead-lettered.
	cl := remoting.NewClient(remoting.ClientOptions{Logger: quiet()})
	t.Cleanup(func() { cl.Close() })
	invoke := func(req *protocol.Command) {
		t.Helper()
		resp, err := cl.Invoke(ctx, f.broker, req)
		if err == nil {
			err = resp.Err()
		}
		if err != nil {
			t.Fatalf("invoke %d: %v", req.Code, err)
		}
	}
	uh := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "payment-service", Topic: "order-events",
		QueueID: f.created.Queue.QueueID, CommitOffset: f.created.QueueOffset + 1}
	invoke(protocol.NewRequest(protocol.UpdateConsumerOffset, uh.Encode(), nil))
	sb := protocol.ConsumerSendMsgBackRequestHeader{Offset: commitLogOffset(t, f.created.OffsetMsgID), Group: "payment-service",
		DelayLevel: -1, OriginMsgID: f.created.MsgID, OriginTopic: "order-events", MaxReconsumeTimes: -1}
	invoke(protocol.NewRequest(protocol.ConsumerSendMsgBack, sb.Encode(), nil))
	// The send-back created %RETRY%payment-service (one queue) on that
	// broker; its registration reaches the NameServer asynchronously, and a
	// resend before it would use the auto-creation template's route (more
	// queues than the topic has) and be refused, as RocketMQ's broker does.
	if err := admin.WaitTopic(ctx, "%RETRY%payment-service"); err != nil {
		t.Fatal(err)
	}
	// inventory-service failed OrderPaid once: a retry one second later.
	sb = protocol.ConsumerSendMsgBackRequestHeader{Offset: commitLogOffset(t, f.paid.OffsetMsgID), Group: "inventory-service",
		DelayLevel: 1, OriginMsgID: f.paid.MsgID, OriginTopic: "order-events", MaxReconsumeTimes: -1}
	invoke(protocol.NewRequest(protocol.ConsumerSendMsgBack, sb.Encode(), nil))

	// A half message nobody decides.
	tp, err := mqclient.NewTransactionProducer(func(context.Context, *mqclient.MessageExt) mqclient.TransactionState {
		return mqclient.TransactionUnknown
	}, append(opts, mqclient.WithProducerGroup("payment-producer"))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	f.half, _, err = tp.SendInTransaction(ctx, &mqclient.Message{Topic: "payment-events", Tag: "PaymentSucceeded", Keys: []string{"ord-1005"},
		Body: []byte(`{"orderId":"ord-1005"}`)}, func(context.Context) error { return mqclient.ErrTransactionUnknown })
	if f.half == nil || (err != nil && !errors.Is(err, mqclient.ErrTransactionUnknown)) {
		t.Fatal(err)
	}

	// Stand-ins for the order service's GET /v1/orders and the payment
	// service's GET /v1/reconcile/runs, in their JSON shapes (the console
	// only reads them over HTTP).
	orderSvc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		type order struct{ id, user, status, total, at string }
		all := []order{{f.order, "u-alice", "PAID", "4200", "2026-12-01T16:20:03.101Z"},
			{"ord-1003", "u-bob", "CANCELLED", "3000", "2026-12-01T16:19:41.515Z"},
			{"ord-1002", "u-alice", "RESERVED", "2000", "2026-12-01T16:19:12.007Z"},
			{"ord-1000", "u-carol", "CREATED", "1000", "2026-12-01T16:18:55.880Z"}}
		var rows []string
		for _, o := range all {
			if st := r.URL.Query().Get("status"); st != "" && st != o.status {
				continue
			}
			if u := r.URL.Query().Get("user_id"); u != "" && u != o.user {
				continue
			}
			rows = append(rows, fmt.Sprintf(`{"id":%q,"userId":%q,"status":"ORDER_STATUS_%s","totalAmount":%q,"createdAt":%q}`,
				o.id, o.user, o.status, o.total, o.at))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"orders":[%s],"nextPageToken":""}`, strings.Join(rows, ","))
	}))
	t.Cleanup(orderSvc.Close)
	paymentSvc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("order_id") != f.order {
			w.Write([]byte(`{"runs":[],"audit":[]}`))
			return
		}
		w.Write([]byte(`{"runs":[{"run_id":3,"job":"payments","status":"done","checked":12,"found":1,"in_flight":0,"repaired":1,` +
			`"resumes":0,"started_at":"2026-12-01T16:21:00Z","finished_at":"2026-12-01T16:21:01Z"}],"audit":[]}`))
	}))
	t.Cleanup(paymentSvc.Close)

	o := console.DefaultOptions()
	o.ListenAddr, o.NameServers, o.SampleInterval, o.Logger = "127.0.0.1:0", []string{f.ns}, 200*time.Millisecond, quiet()
	o.OrderURL, o.ReconcileURLs = orderSvc.URL, []string{"payment=" + paymentSvc.URL}
	o.ResendRate = 1000
	f.users, f.clock = authOptions(t, &o)
	o.Auth.MaxSession = 2 * time.Hour // TestBrowser reaches it in five steps
	f.srv = startServer(t, o)
	f.base = "http://" + f.srv.Addr()
	f.client = signIn(t, f.base, "admin")

	// Everything above lands asynchronously: the key index, the dead
	// letter, the retry after its delay, the consumer's commits.
	waitFor(t, "the order's history indexed and consumed", func() bool {
		var v console.OrderView
		if f.getJSON(t, "/api/orders/"+f.order, &v) != 200 || len(v.Events) != 4 || v.DLQ != 1 || v.Retries != 1 {
			return false
		}
		var g, og console.GroupView
		var c console.ClusterView
		return f.getJSON(t, "/api/groups/inventory-service", &g) == 200 && g.TotalLag == 0 && len(g.Members.Connections) == 1 &&
			f.getJSON(t, "/api/groups/order-service", &og) == 200 && og.TotalLag == 0 && len(og.Queues) >= 4 &&
			f.getJSON(t, "/api/cluster", &c) == 200 && len(c.Brokers) == 2 && len(c.Brokers[0].Slaves) == 1 && c.Brokers[0].Slaves[0].Ready
	})
	var dl console.DLQView
	f.getJSON(t, "/api/dlq?group=payment-service", &dl)
	if len(dl.Letters) != 1 {
		t.Fatalf("dead letters: %+v", dl)
	}
	f.dlq = dl.Letters[0].OffsetMsgID
	return f
}

func commitLogOffset(t *testing.T, offsetMsgID string) int64 {
	_, off, err := protocol.ParseOffsetMsgID(offsetMsgID)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

// getJSON GETs path, decodes the body into v and returns the status.
func (f *fixture) getJSON(t *testing.T, path string, v any) int {
	t.Helper()
	resp, err := f.client.Get(f.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode
}

// get GETs path and returns the status and body.
func (f *fixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := f.client.Get(f.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
