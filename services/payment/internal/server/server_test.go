package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kratos/kratos/v2/errors"
	"github.com/go-kratos/kratos/v2/log"
	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	orderv1 "github.com/tidemq/tide/api/order/v1"
	v1 "github.com/tidemq/tide/api/payment/v1"
	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/metrics"
	"github.com/tidemq/tide/pkg/mqclient/tracing"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/api/apitest"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
	"github.com/tidemq/tide/services/kit/topics"
	"github.com/tidemq/tide/services/kit/topics/topicstest"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/data"
	"github.com/tidemq/tide/services/payment/internal/fault"
	"github.com/tidemq/tide/services/payment/internal/service"
)

// fakeOrders is the order service's gRPC API as the payment service
// reads it (the order service belongs to another team; its own tests
// cover it): orders with their user, total and status. PaymentSucceeded
// events mark orders paid, like the real one. With down set it answers
// Unavailable.
type fakeOrders struct {
	orderv1.UnimplementedOrderServer
	mu     sync.Mutex
	orders map[string]*orderv1.OrderInfo
	down   atomic.Bool
}

// add places a CREATED order.
func (f *fakeOrders) add(id, user string, total int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.orders[id] = &orderv1.OrderInfo{Id: id, UserId: user, TotalAmount: total, Status: orderv1.OrderStatus_ORDER_STATUS_CREATED}
}

// ensure places a CREATED order unless one with that id exists.
func (f *fakeOrders) ensure(id, user string, total int64) {
	f.mu.Lock()
	_, ok := f.orders[id]
	f.mu.Unlock()
	if !ok {
		f.add(id, user, total)
	}
}

func (f *fakeOrders) set(id string, s orderv1.OrderStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o := f.orders[id]; o != nil {
		o.Status = s
	} else {
		f.orders[id] = &orderv1.OrderInfo{Id: id, Status: s}
	}
}

func (f *fakeOrders) get(id string) orderv1.OrderStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.orders[id].GetStatus()
}

func (f *fakeOrders) GetOrder(_ context.Context, in *orderv1.GetOrderRequest) (*orderv1.GetOrderReply, error) {
	if f.down.Load() {
		return nil, errors.ServiceUnavailable("ORDER_UNAVAILABLE", "order service down (test)")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.orders[in.GetId()]
	if o == nil {
		return nil, errors.NotFound("ORDER_NOT_FOUND", "no order "+in.GetId())
	}
	return &orderv1.GetOrderReply{Order: proto.Clone(o).(*orderv1.OrderInfo)}, nil
}

// eventLog records the payment events a test consumer group receives.
type eventLog struct {
	mu    sync.Mutex
	count map[string]int // tag/order id
	ids   map[string][]string
	trace map[string]string // tag/order id -> traceparent of the last copy
}

func (e *eventLog) n(tag, order string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.count[tag+"/"+order]
}

type stack struct {
	dsn       string
	redisAddr string
	httpURL   string
	grpcAddr  string
	// ordersAddr is the fake order service's gRPC address.
	ordersAddr string
	ns         string
	acl        topicstest.ACL
	d          *data.Data
	uc         *biz.PaymentUsecase
	svc        *service.PaymentService
	reg        *prometheus.Registry
	faults     *fault.Set
	exits      chan int
	// panicOnCrash: crash by panicking (consumer goroutines) instead of
	// runtime.Goexit.
	panicOnCrash atomic.Bool
	orders       *fakeOrders
	events       *eventLog
	rc           *rechttp.Jobs
	accts        biz.AccountRepo
	gw           *data.Gateway
	prod         *mqclient.Producer
}

// crash is the injected exit of crash faults: it records the code and
// ends the calling goroutine without returning (runtime.Goexit runs the
// deferred rollbacks, as the death of the process would, and nothing
// after the crash point runs: no END_TRANSACTION, no ack).
func (s *stack) crash(code int) {
	s.exits <- code
	if s.panicOnCrash.Load() {
		panic("crash fault")
	}
	runtime.Goexit()
}

// stackConfig varies startStack: more broker options (ACL), the
// service's and the test clients' credentials, the tracer provider.
type stackConfig struct {
	acl topicstest.ACL
	tp  trace.TracerProvider
}

// clientOpts are the options of the test's own producers and consumers.
func (s *stack) clientOpts(extra ...mqclient.Option) []mqclient.Option {
	return s.acl.ClientOptions(s.ns, extra...)
}

func startStack(t *testing.T, opts ...func(*stackConfig)) *stack {
	t.Helper()
	var cfg stackConfig
	for _, o := range opts {
		o(&cfg)
	}
	ctx := context.Background()
	ns := cfg.acl.Start(t, func(o *broker.Options) {
		o.TransactionTimeOut = 1000
		o.TransactionCheckInterval = 1000
	})
	db, rd := testenv.MariaDB(t), testenv.Redis(t)
	l := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := &stack{ns: ns, acl: cfg.acl, exits: make(chan int, 16), reg: prometheus.NewRegistry(),
		orders: &fakeOrders{orders: map[string]*orderv1.OrderInfo{}}, events: &eventLog{count: map[string]int{}, ids: map[string][]string{}, trace: map[string]string{}}}
	// As main does: W3C trace context through HTTP and messages.
	if cfg.tp == nil {
		cfg.tp = sdktrace.NewTracerProvider()
	}
	otel.SetTracerProvider(cfg.tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	s.faults = fault.New(nil, s.crash, l)
	mc := &conf.Messaging{NameServers: ns, ProducerGroup: eventv1.GroupPaymentProducer,
		AccessKey: cfg.acl.Creds.AccessKey, SecretKey: cfg.acl.Creds.SecretKey}
	d, cleanup, err := data.NewData(&kitconf.Data{Database: &kitconf.Data_Database{Source: db.DSN, Migrate: proto.Bool(true), MaxOpenConns: 10},
		Redis: &kitconf.Data_Redis{Addr: rd.Addr()}}, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	s.d, s.dsn, s.redisAddr = d, db.DSN, rd.Addr()
	mm, err := metrics.New(s.reg)
	if err != nil {
		t.Fatal(err)
	}
	mcl, mqclean, err := data.NewMQClient(mc, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mqclean) // after the members' cleanups (LIFO)
	pub, pclean, err := data.NewPublisher(mc, mcl, d, s.faults, s.reg, mm, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pclean)
	keys, err := data.NewIdempotencyStore(d, s.reg, l)
	if err != nil {
		t.Fatal(err)
	}
	s.gw = data.NewGateway(d, s.faults, l)
	s.accts = data.NewAccountRepo(d)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gsrv := grpc.NewServer()
	orderv1.RegisterOrderServer(gsrv, s.orders)
	go gsrv.Serve(lis)
	t.Cleanup(gsrv.Stop)
	s.ordersAddr = lis.Addr().String()
	orders, oclean, err := data.NewOrderReader(&kitconf.Peer{GrpcAddr: s.ordersAddr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oclean)
	s.uc = biz.NewPaymentUsecase(s.accts, data.NewPaymentRepo(d), keys, s.gw, orders, d, pub, s.faults, biz.Options{}, l)
	s.svc = service.NewPaymentService(s.uc, data.NewDedup(d), l)
	rcConf := &conf.Reconcile{Repair: true}
	runner, err := data.NewRunner(rcConf, d, s.reg, l)
	if err != nil {
		t.Fatal(err)
	}
	s.rc = service.NewReconcileJobs(runner, biz.NewPaymentsJob(rcConf, s.uc, data.NewLedger(d), s.gw, orders),
		data.NewBrokerJob(rcConf, mcl), l)

	sc := &kitconf.Server{Http: &kitconf.Server_HTTP{Addr: "127.0.0.1:0"}, Grpc: &kitconf.Server_GRPC{Addr: "127.0.0.1:0"}}
	hs := NewHTTPServer(sc, &conf.Fault{Admin: true}, s.svc, service.NewGatewayService(s.gw), s.rc, s.faults, s.reg,
		api.AllReady(d.Ping, api.Dials("name server", topics.SplitAddrs(mc.GetNameServers()))), service.NewInput(log.DefaultLogger))
	gs := NewGRPCServer(sc, s.svc, service.NewInput(log.DefaultLogger))
	cs, err := NewConsumerServer(mc, mcl, s.svc, s.faults, s.reg, mm, l)
	if err != nil {
		t.Fatal(err)
	}
	s.httpURL, s.grpcAddr = apitest.ServeAPI(t, ctx, hs, gs)
	apitest.Start(t, ctx, 30*time.Second, cs)

	c, err := mqclient.NewPushConsumer("test-payment-events", s.clientOpts(mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
		mqclient.WithMiddleware(tracing.Middleware(tracing.Options{})))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(eventv1.TopicPaymentEvents, "*", func(_ context.Context, m *mqclient.MessageExt) error {
		order := m.ShardingKey
		if m.Tag == eventv1.TagPaymentSucceeded && s.orders.get(order) != orderv1.OrderStatus_ORDER_STATUS_CANCELLED {
			s.orders.set(order, orderv1.OrderStatus_ORDER_STATUS_PAID)
		}
		s.events.mu.Lock()
		s.events.count[m.Tag+"/"+order]++
		s.events.ids[m.Tag+"/"+order] = append(s.events.ids[m.Tag+"/"+order], m.MsgID)
		s.events.trace[m.Tag+"/"+order] = m.Properties["traceparent"]
		s.events.mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Shutdown(context.Background()) })

	s.prod, err = mqclient.NewProducer(s.clientOpts(mqclient.WithProducerGroup("test-order-producer"),
		mqclient.WithSendInterceptors(tracing.SendInterceptor(tracing.Options{})))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.prod.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.prod.Shutdown(context.Background()) })
	return s
}

type apiResult struct {
	status int
	body   map[string]any
	raw    string
}

func (s *stack) do(t *testing.T, method, path string, body any, hdr map[string]string) apiResult {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := nethttp.NewRequest(method, s.httpURL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
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

// pay pays for order, placing it (CREATED, of user, total amount) at
// the fake order service first unless it exists; payRaw places nothing.
func (s *stack) pay(t *testing.T, key, order, user string, amount int64) apiResult {
	t.Helper()
	s.orders.ensure(order, user, amount)
	return s.payRaw(t, key, order, user, amount)
}

func (s *stack) payRaw(t *testing.T, key, order, user string, amount int64) apiResult {
	t.Helper()
	h := map[string]string{}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	return s.do(t, "POST", "/v1/payments", map[string]any{"order_id": order, "user_id": user, "amount": amount}, h)
}

func (s *stack) cancelOrder(t *testing.T, order string) {
	t.Helper()
	body, _ := eventv1.Marshal(&eventv1.OrderCancelled{OrderId: order, Seq: 3, Reason: "timeout"})
	if _, err := s.prod.Send(context.Background(), &mqclient.Message{Topic: eventv1.TopicOrderEvents, Tag: eventv1.TagOrderCancelled,
		Body: body, ShardingKey: order, Keys: []string{order}}); err != nil {
		t.Fatal(err)
	}
}

func (s *stack) cancelled(order string) bool {
	var n int64
	s.d.Gorm().Raw("SELECT COUNT(*) FROM cancelled_orders WHERE order_id = ?", order).Scan(&n)
	return n == 1
}

func (s *stack) payment(t *testing.T, id string) *biz.Payment {
	t.Helper()
	p, err := s.uc.GetPayment(context.Background(), id)
	if err != nil {
		return nil
	}
	return p
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	apitest.WaitFor(t, what, 45*time.Second, cond)
}

func balance(t *testing.T, s *stack, user string) int64 {
	t.Helper()
	b, err := s.accts.Balance(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The payment API end to end: idempotency rules over HTTP, the debit
// and PaymentSucceeded exactly once through txmsg, the refund of a
// cancelled order exactly once (OrderCancelled delivered twice), a late
// payment refused, and GetPayment over gRPC.
func TestServerPaymentFlow(t *testing.T) {
	s := startStack(t)
	before := balance(t, s, "u-alice")
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
	if after := balance(t, s, "u-alice"); before-after != 2500 {
		t.Fatalf("u-alice debited %d, want 2500 once", before-after)
	}
	waitFor(t, "PaymentSucceeded", func() bool { return s.events.n(eventv1.TagPaymentSucceeded, "o1") >= 1 })

	// The HTTP request's trace continues in the message.
	s.events.mu.Lock()
	tp := s.events.trace[eventv1.TagPaymentSucceeded+"/o1"]
	s.events.mu.Unlock()
	if len(tp) != 55 || strings.HasPrefix(tp, "00-00000000000000000000000000000000") {
		t.Fatalf("PaymentSucceeded traceparent %q", tp)
	}

	// gRPC reads the same payment.
	conn, err := kgrpc.DialInsecure(context.Background(), kgrpc.WithEndpoint(s.grpcAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if r, err := v1.NewPaymentClient(conn).GetPayment(context.Background(), &v1.GetPaymentRequest{Id: biz.PaymentID("k1")}); err != nil ||
		r.GetPayment().GetOrderId() != "o1" || r.GetPayment().GetStatus() != v1.PaymentStatus_PAYMENT_STATUS_SUCCEEDED {
		t.Fatalf("GetPayment = %v, %v", r, err)
	}

	// Cancelled meanwhile: refunded once although OrderCancelled comes twice.
	s.cancelOrder(t, "o1")
	s.cancelOrder(t, "o1")
	id := biz.PaymentID("k1")
	waitFor(t, "refund", func() bool { p := s.payment(t, id); return p != nil && p.Status == biz.StatusRefunded })
	waitFor(t, "PaymentRefunded", func() bool { return s.events.n(eventv1.TagPaymentRefunded, "o1") >= 1 })
	if after := balance(t, s, "u-alice"); after != before {
		t.Fatalf("u-alice balance %d after refund, want %d", after, before)
	}
	// Already cancelled: a late payment is refused and debits nothing.
	s.cancelOrder(t, "o9")
	waitFor(t, "cancellation mark", func() bool { return s.cancelled("o9") })
	if r := s.pay(t, "k9", "o9", "u-bob", 10); r.status != 409 || r.body["reason"] != biz.ReasonOrderCancelled {
		t.Fatalf("payment of a cancelled order: %d %s", r.status, r.raw)
	}
	// The statement has the capture and the refund of o1, nothing for o9.
	var st struct {
		Lines []biz.StatementLine `json:"lines"`
	}
	if r := s.do(t, "GET", "/v1/gateway/statement", nil, nil); json.Unmarshal([]byte(r.raw), &st) != nil || len(st.Lines) != 2 ||
		st.Lines[0].Ref != biz.CaptureRef(id) || st.Lines[1].Ref != biz.RefundRef(id) {
		t.Fatalf("statement = %+v", st.Lines)
	}
	if s.events.n(eventv1.TagPaymentSucceeded, "o1") != 1 || s.events.n(eventv1.TagPaymentRefunded, "o1") != 1 || s.events.n(eventv1.TagPaymentSucceeded, "o9") != 0 {
		t.Fatalf("events = %v", s.events.count)
	}
	// Metrics of the patterns are exported.
	m := s.do(t, "GET", "/metrics", nil, nil)
	for _, name := range []string{"tide_txmsg_sends_total", "idempotent_effects_applied_total", "idempotent_dedup_hits_total", "mqclient_consumed_total"} {
		if !strings.Contains(m.raw, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}
