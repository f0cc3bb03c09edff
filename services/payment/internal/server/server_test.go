package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	nethttp "net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-kratos/kratos/v2/log"
	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	v1 "github.com/tidemq/tide/api/payment/v1"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/data"
	"github.com/tidemq/tide/services/payment/internal/service"
)

type stack struct {
	httpURL  string
	grpcAddr string
	ns       string
	accounts biz.AccountRepo
	producer *mqclient.Producer
}

func startStack(t *testing.T) *stack {
	t.Helper()
	ctx := context.Background()
	ns := nameservertest.Start(t)
	brokertest.Start(t, ns)
	db, rd := testenv.MariaDB(t), testenv.Redis(t)
	l := slog.New(slog.NewTextHandler(io.Discard, nil))
	mc := &conf.Messaging{NameServers: ns, ProducerGroup: eventv1.GroupPaymentProducer}
	d, cleanup, err := data.NewData(&conf.Data{Database: &conf.Data_Database{Source: db.DSN, Migrate: true},
		Redis: &conf.Data_Redis{Addr: rd.Addr()}}, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	pub, pclean, err := data.NewTxPublisher(mc, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pclean)
	gw := data.NewGateway(d, &conf.Fault{}, l)
	accounts := data.NewAccountRepo(d)
	uc := biz.NewPaymentUsecase(accounts, data.NewPaymentRepo(d), data.NewIdempotencyRepo(d),
		data.NewIdempotencyCache(d, &conf.Data{}), gw, d, pub, biz.Options{}, l)
	svc := service.NewPaymentService(uc, l)
	sc := &conf.Server{Http: &conf.Server_HTTP{Addr: "127.0.0.1:0"}, Grpc: &conf.Server_GRPC{Addr: "127.0.0.1:0"}}
	hs := NewHTTPServer(sc, svc, gw, d, log.DefaultLogger)
	gs := NewGRPCServer(sc, svc, log.DefaultLogger)
	cs, err := NewConsumerServer(mc, svc, l)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the Stop cleanups below (LIFO)
	for _, s := range []interface {
		Start(context.Context) error
		Stop(context.Context) error
	}{hs, gs} {
		wg.Go(func() { _ = s.Start(ctx) })
		t.Cleanup(func() { _ = s.Stop(context.Background()) })
	}
	startCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := cs.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = cs.Stop(sctx)
	})
	he, err := hs.Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	ge, err := gs.Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	op, err := mqclient.NewProducer(mqclient.WithNameServers(ns), mqclient.WithProducerGroup("test-order-producer"))
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = op.Shutdown(context.Background()) })
	return &stack{httpURL: "http://" + he.Host, grpcAddr: ge.Host, ns: ns, accounts: accounts, producer: op}
}

type apiResult struct {
	status int
	body   map[string]any
	raw    string
}

func (s *stack) pay(t *testing.T, key, order, user string, amount int64) apiResult {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"order_id": order, "user_id": user, "amount": amount})
	req, _ := nethttp.NewRequest("POST", s.httpURL+"/v1/payments", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return apiResult{status: resp.StatusCode, body: m, raw: string(raw)}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The payment API end to end: idempotency rules over HTTP, the debit
// and PaymentSucceeded exactly once through a transactional message, the
// refund of a cancelled order exactly once (OrderCancelled delivered
// twice), and the gateway statement.
func TestServerPaymentFlow(t *testing.T) {
	s := startStack(t)
	ctx := context.Background()

	var mu sync.Mutex
	events := map[string]int{}
	c, err := mqclient.NewPushConsumer("test-payment-events", mqclient.WithNameServers(s.ns), mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(eventv1.TopicPaymentEvents, "*", func(_ context.Context, m *mqclient.MessageExt) error {
		mu.Lock()
		events[m.Tag+"/"+m.ShardingKey]++
		mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Shutdown(context.Background()) })

	before, _ := s.accounts.Balance(ctx, "u-alice")
	first := s.pay(t, "k1", "o1", "u-alice", 2500)
	if first.status != 200 {
		t.Fatalf("first payment: %d %s", first.status, first.raw)
	}
	tests := []struct {
		name       string
		key, order string
		user       string
		amount     int64
		wantStatus int
		wantReason string
		wantSame   bool // the original response, byte for byte
	}{
		{name: "same key same body replays", key: "k1", order: "o1", user: "u-alice", amount: 2500, wantStatus: 200, wantSame: true},
		{name: "same key other amount", key: "k1", order: "o1", user: "u-alice", amount: 2600, wantStatus: 409, wantReason: biz.ReasonIdempotencyKeyReused},
		{name: "no key", order: "o1", user: "u-alice", amount: 2500, wantStatus: 400, wantReason: biz.ReasonIdempotencyKeyRequired},
		{name: "other key same order", key: "k2", order: "o1", user: "u-alice", amount: 2500, wantStatus: 409, wantReason: biz.ReasonOrderAlreadyPaid},
		{name: "insufficient balance", key: "k3", order: "o3", user: "u-erin", amount: 100, wantStatus: 402, wantReason: biz.ReasonInsufficientBalance},
		{name: "insufficient balance replayed", key: "k3", order: "o3", user: "u-erin", amount: 100, wantStatus: 402, wantReason: biz.ReasonInsufficientBalance},
		{name: "unknown account", key: "k4", order: "o4", user: "u-nobody", amount: 100, wantStatus: 404, wantReason: biz.ReasonAccountNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.pay(t, tt.key, tt.order, tt.user, tt.amount)
			if r.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.status, tt.wantStatus, r.raw)
			}
			if tt.wantReason != "" && r.body["reason"] != tt.wantReason {
				t.Fatalf("reason %v, want %s", r.body["reason"], tt.wantReason)
			}
			if tt.wantSame && r.raw != first.raw {
				t.Fatalf("replay differs:\n%s\n%s", r.raw, first.raw)
			}
		})
	}
	if after, _ := s.accounts.Balance(ctx, "u-alice"); before-after != 2500 {
		t.Fatalf("u-alice debited %d, want 2500 once", before-after)
	}
	waitFor(t, "PaymentSucceeded", func() bool { mu.Lock(); defer mu.Unlock(); return events["PaymentSucceeded/o1"] >= 1 })

	// The order was cancelled meanwhile: the payment is refunded once,
	// even with OrderCancelled delivered twice.
	body, _ := eventv1.Marshal(&eventv1.OrderCancelled{OrderId: "o1", Seq: 3, Reason: "timeout"})
	for range 2 {
		if _, err := s.producer.Send(ctx, &mqclient.Message{Topic: eventv1.TopicOrderEvents, Tag: eventv1.TagOrderCancelled, Body: body, ShardingKey: "o1"}); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := kgrpc.DialInsecure(ctx, kgrpc.WithEndpoint(s.grpcAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := v1.NewPaymentClient(conn)
	id := biz.PaymentID("k1")
	waitFor(t, "refund", func() bool {
		r, err := client.GetPayment(ctx, &v1.GetPaymentRequest{Id: id})
		return err == nil && r.GetPayment().GetStatus() == v1.PaymentStatus_PAYMENT_STATUS_REFUNDED
	})
	waitFor(t, "PaymentRefunded", func() bool { mu.Lock(); defer mu.Unlock(); return events["PaymentRefunded/o1"] >= 1 })
	if after, _ := s.accounts.Balance(ctx, "u-alice"); after != before {
		t.Fatalf("u-alice balance %d after refund, want %d", after, before)
	}
	// Another payment still goes through after the refund.
	if r := s.pay(t, "k5", "o1-again", "u-bob", 10); r.status != 200 {
		t.Fatalf("unrelated payment: %d %s", r.status, r.raw)
	}
	resp, err := nethttp.Get(s.httpURL + "/v1/gateway/statement")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Lines []struct {
			Ref string `json:"ref"`
		} `json:"lines"`
	}
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	refs := map[string]bool{}
	for _, l := range st.Lines {
		refs[l.Ref] = true
	}
	if !refs[id+":capture"] || !refs[id+":refund"] || len(st.Lines) != 3 {
		t.Fatalf("statement = %+v", st.Lines)
	}
	mu.Lock()
	defer mu.Unlock()
	if events["PaymentSucceeded/o1"] != 1 || events["PaymentRefunded/o1"] != 1 {
		t.Fatalf("events = %v, want one PaymentSucceeded and one PaymentRefunded for o1", events)
	}
}
