package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kerrors "github.com/go-kratos/kratos/v2/errors"
	"github.com/go-kratos/kratos/v2/log"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	inventoryv1 "github.com/tidemq/tide/api/inventory/v1"
	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/api/apitest"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/fault"
	"github.com/tidemq/tide/services/kit/topics/topicstest"
	"github.com/tidemq/tide/services/order/internal/biz"
	"github.com/tidemq/tide/services/order/internal/conf"
	"github.com/tidemq/tide/services/order/internal/data"
	"github.com/tidemq/tide/services/order/internal/service"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fakeInventory is the inventory service's catalog as the order service
// reads it (gRPC GetProduct; the inventory service's own tests and the
// flow test in services/inventory cover the real one): p1 costs 150, p2
// 100. With down set it answers Unavailable.
type fakeInventory struct {
	inventoryv1.UnimplementedInventoryServer
	down atomic.Bool
}

var catalogPrices = map[string]int64{"p1": 150, "p2": 100}

func (f *fakeInventory) GetProduct(_ context.Context, in *inventoryv1.GetProductRequest) (*inventoryv1.GetProductReply, error) {
	if f.down.Load() {
		return nil, kerrors.ServiceUnavailable("UNAVAILABLE", "inventory down (test)")
	}
	p, ok := catalogPrices[in.GetId()]
	if !ok {
		return nil, kerrors.NotFound("PRODUCT_NOT_FOUND", "no product "+in.GetId())
	}
	return &inventoryv1.GetProductReply{Product: &inventoryv1.Product{Id: in.GetId(), Price: p, Available: 100}}, nil
}

// stack is the order service wired as cmd/order wires it, against a real
// in-process NameServer and broker, MariaDB and Redis, and a fake
// inventory catalog over gRPC.
type stack struct {
	inventory *fakeInventory
	namesrv   string
	acl       topicstest.ACL
	httpBase  string
	grpc      orderv1.OrderClient
	faults    *fault.Set

	mu     sync.Mutex
	events []*mqclient.MessageExt // seen on order-events
}

// stackConfig varies startStack: broker options (ACL) and the
// credentials of the service and of the test's own clients.
type stackConfig struct {
	acl topicstest.ACL
}

type stackOption func(*stackConfig)

// clientOpts are the options of the test's own producers and consumers.
func (s *stack) clientOpts(extra ...mqclient.Option) []mqclient.Option {
	return s.acl.ClientOptions(s.namesrv, extra...)
}

func startStack(t *testing.T, cancelAfter time.Duration, opts ...stackOption) *stack {
	t.Helper()
	var cfg stackConfig
	for _, o := range opts {
		o(&cfg)
	}
	logger := log.NewFilter(log.DefaultLogger, log.FilterLevel(log.LevelWarn))
	if os.Getenv("TIDE_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	sl := slog.Default()
	ns := cfg.acl.Start(t)
	db := testenv.MariaDB(t)
	rdb := testenv.Redis(t)

	d, cleanup, err := data.NewData(&kitconf.Data{Database: &kitconf.Data_Database{Driver: "mysql", Source: db.DSN},
		Redis: &kitconf.Data_Redis{Addr: rdb.Addr()}}, sl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	mq := &conf.MQ{NamesrvAddr: ns, AccessKey: cfg.acl.Creds.AccessKey, SecretKey: cfg.acl.Creds.SecretKey}
	reg := data.NewRegistry()
	faults := data.NewFaults(&conf.Fault{Admin: true}, sl)
	faults.SetExit(func(int) {}) // crash faults are tested in the fault package
	mc, cleanupMQ, err := data.NewMQClient(mq, sl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanupMQ) // after the members' cleanups (LIFO)
	sender, cleanup2, err := data.NewSender(mq, mc, d, faults, reg, sl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup2)
	sch, cleanup3, err := data.NewScheduler(mc, sender, reg, sl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup3)
	inv := &fakeInventory{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	isrv := grpc.NewServer()
	inventoryv1.RegisterInventoryServer(isrv, inv)
	go isrv.Serve(lis)
	t.Cleanup(isrv.Stop)
	catalog, cleanup4, err := data.NewCatalog(&kitconf.Peer{GrpcAddr: lis.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup4)
	oc := &conf.Order{CancelAfter: durationpb.New(cancelAfter), SweepInterval: durationpb.New(time.Second)}
	uc := biz.NewOrderUsecase(data.NewOrderRepo(d, sl), catalog, d, data.NewEventPublisher(d, sender, faults, sl),
		data.NewCancelTimer(sch), oc, sl)
	svc := service.NewOrderService(uc)
	sc := &kitconf.Server{Http: &kitconf.Server_HTTP{Addr: "127.0.0.1:0"}, Grpc: &kitconf.Server_GRPC{Addr: "127.0.0.1:0"}}
	events, err := service.NewEventService(uc, data.NewDedup(d), reg, sl)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := NewConsumer(mc, events, faults, reg, sl)
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHTTPServer(sc, svc, service.NewInput(logger), api.AllReady(d.Ready, api.Started("consumers", cons.Running)), faults, reg)
	gs := NewGRPCServer(sc, svc, service.NewInput(logger))
	sw := NewSweeper(oc, events, sl)

	ctx := context.Background()
	httpBase, grpcAddr := apitest.ServeAPI(t, ctx, hs, gs, cons, sw)
	s := &stack{inventory: inv, namesrv: ns, acl: cfg.acl, httpBase: httpBase, grpc: orderv1.NewOrderClient(apitest.DialGRPC(t, grpcAddr)), faults: faults}
	waitFor(t, "HTTP /readyz", func() bool {
		resp, err := nethttp.Get(s.httpBase + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	// A consumer standing in for inventory and payment: it records
	// order-events.
	c, err := mqclient.NewPushConsumer("test-order-events", s.clientOpts(
		mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst), mqclient.WithOrdered())...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(eventv1.TopicOrderEvents, "*", func(_ context.Context, m *mqclient.MessageExt) error {
		s.mu.Lock()
		s.events = append(s.events, m)
		s.mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Shutdown(ctx)
	})
	return s
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	apitest.WaitFor(t, what, 60*time.Second, cond)
}

// tags returns the tags of the order-events seen for an order.
func (s *stack) tags(orderID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.events {
		if m.ShardingKey == orderID || (len(m.Keys) > 0 && m.Keys[0] == orderID) {
			out = append(out, m.Tag)
		}
	}
	return out
}

func (s *stack) publish(t *testing.T, topic string, ev eventv1.Event) {
	t.Helper()
	p, err := mqclient.NewProducer(s.clientOpts(mqclient.WithProducerGroup("test-producer"))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(ctx)
	body, err := eventv1.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, &mqclient.Message{Topic: topic, Tag: eventv1.Tag(ev), Keys: []string{ev.GetOrderId()},
		ShardingKey: ev.GetOrderId(), Body: body}); err != nil {
		t.Fatal(err)
	}
}

func (s *stack) httpGet(t *testing.T, id string) (*orderv1.GetOrderReply, int) {
	t.Helper()
	resp, err := nethttp.Get(s.httpBase + "/v1/orders/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return nil, resp.StatusCode
	}
	var out orderv1.GetOrderReply
	if err := protojson.Unmarshal(b, &out); err != nil {
		t.Fatalf("GET body %s: %v", b, err)
	}
	return &out, 200
}

func (s *stack) httpCreate(t *testing.T, body string) (*orderv1.CreateOrderReply, int, string) {
	t.Helper()
	resp, err := nethttp.Post(s.httpBase+"/v1/orders", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return nil, resp.StatusCode, string(b)
	}
	var out orderv1.CreateOrderReply
	if err := protojson.Unmarshal(b, &out); err != nil {
		t.Fatalf("POST body %s: %v", b, err)
	}
	return &out, 200, string(b)
}

func TestServerHTTPAndGRPC(t *testing.T) {
	s := startStack(t, time.Hour)
	ctx := context.Background()

	t.Run("health", func(t *testing.T) { apitest.Healthy(t, s.httpBase) })

	t.Run("bad requests", func(t *testing.T) {
		tests := []struct {
			name, body string
			code       int
			reason     string
		}{
			{"no items", `{"user_id":"u1","items":[]}`, 400, api.ReasonInvalidArgument},
			{"no user", `{"items":[{"product_id":"p1","quantity":1}]}`, 400, api.ReasonInvalidArgument},
			{"bad json", `{"user_id":`, 400, api.ReasonMalformedBody},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, code, body := s.httpCreate(t, tt.body)
				if code != tt.code || !strings.Contains(body, tt.reason) {
					t.Fatalf("code %d body %s, want %d %s", code, body, tt.code, tt.reason)
				}
			})
		}
		if _, code := s.httpGet(t, "no-such-order"); code != 404 {
			t.Fatalf("GET unknown: %d", code)
		}
		_, err := s.grpc.GetOrder(ctx, &orderv1.GetOrderRequest{Id: "no-such-order"})
		if kerrors.Reason(err) != biz.ReasonOrderNotFound {
			t.Fatalf("gRPC GET unknown: %v", err)
		}
	})

	t.Run("create, reserve and pay", func(t *testing.T) {
		created, code, body := s.httpCreate(t,
			`{"user_id":"u1","items":[{"product_id":"p1","quantity":2,"unit_price":"150"},{"product_id":"p2","quantity":1,"unit_price":"100"}]}`)
		if code != 200 {
			t.Fatalf("POST: %d %s", code, body)
		}
		o := created.GetOrder()
		if o.GetStatus() != orderv1.OrderStatus_ORDER_STATUS_CREATED || o.GetTotalAmount() != 400 || o.GetSeq() != 1 {
			t.Fatalf("created %v", o)
		}
		waitFor(t, "OrderCreated on order-events", func() bool { return len(s.tags(o.GetId())) == 1 })

		s.publish(t, eventv1.TopicInventoryEvents, &eventv1.StockReserved{OrderId: o.GetId(), Seq: 1})
		waitFor(t, "RESERVED", func() bool {
			got, _ := s.httpGet(t, o.GetId())
			return got.GetOrder().GetStatus() == orderv1.OrderStatus_ORDER_STATUS_RESERVED
		})
		pay := &eventv1.PaymentSucceeded{OrderId: o.GetId(), Seq: 1, PaymentId: "pay-1", UserId: "u1", Amount: 400,
			PaidAt: timestamppb.Now()}
		s.publish(t, eventv1.TopicPaymentEvents, pay)
		s.publish(t, eventv1.TopicPaymentEvents, pay) // a duplicate has no effect
		waitFor(t, "PAID over gRPC", func() bool {
			got, err := s.grpc.GetOrder(ctx, &orderv1.GetOrderRequest{Id: o.GetId()})
			return err == nil && got.GetOrder().GetStatus() == orderv1.OrderStatus_ORDER_STATUS_PAID
		})
		waitFor(t, "OrderPaid on order-events", func() bool { return len(s.tags(o.GetId())) == 2 })
		if tags := s.tags(o.GetId()); tags[0] != eventv1.TagOrderCreated || tags[1] != eventv1.TagOrderPaid {
			t.Fatalf("order-events %v", tags)
		}
		got, _ := s.httpGet(t, o.GetId())
		var events []string
		for _, e := range got.GetTimeline() {
			events = append(events, e.GetEvent())
		}
		want := []string{eventv1.TagOrderCreated, eventv1.TagStockReserved, eventv1.TagPaymentSucceeded, eventv1.TagOrderPaid}
		if strings.Join(events, ",") != strings.Join(want, ",") {
			t.Fatalf("timeline %v, want %v", events, want)
		}
		// The JSON shape of the HTTP API (int64 fields are strings).
		resp, err := nethttp.Get(s.httpBase + "/v1/orders/" + o.GetId())
		if err != nil {
			t.Fatal(err)
		}
		var raw map[string]any
		json.NewDecoder(resp.Body).Decode(&raw)
		resp.Body.Close()
		if order, _ := raw["order"].(map[string]any); order["status"] != "ORDER_STATUS_PAID" || order["totalAmount"] != "400" {
			t.Fatalf("JSON %v", raw)
		}
	})

	t.Run("create over gRPC", func(t *testing.T) {
		reply, err := s.grpc.CreateOrder(ctx, &orderv1.CreateOrderRequest{UserId: "u2",
			Items: []*orderv1.OrderItem{{ProductId: "p1", Quantity: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		if reply.GetOrder().GetId() == "" || reply.GetOrder().GetStatus() != orderv1.OrderStatus_ORDER_STATUS_CREATED {
			t.Fatalf("reply %v", reply)
		}
		_, err = s.grpc.CreateOrder(ctx, &orderv1.CreateOrderRequest{UserId: "u2"})
		if kerrors.Reason(err) != api.ReasonInvalidArgument {
			t.Fatalf("invalid create: %v", err)
		}
	})

	t.Run("list", func(t *testing.T) {
		list := func(query string) (*orderv1.ListOrdersReply, int, string) {
			t.Helper()
			resp, err := nethttp.Get(s.httpBase + "/v1/orders?" + query)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var out orderv1.ListOrdersReply
			if resp.StatusCode == 200 {
				if err := protojson.Unmarshal(b, &out); err != nil {
					t.Fatalf("%s: %v", b, err)
				}
			}
			return &out, resp.StatusCode, string(b)
		}
		var ids []string
		for range 3 {
			created, code, body := s.httpCreate(t, `{"user_id":"u-list","items":[{"product_id":"p1","quantity":1}]}`)
			if code != 200 {
				t.Fatalf("POST: %d %s", code, body)
			}
			ids = append(ids, created.GetOrder().GetId())
		}
		page, code, body := list("user_id=u-list&limit=2")
		if code != 200 || len(page.GetOrders()) != 2 || page.GetNextPageToken() == "" ||
			page.GetOrders()[0].GetId() != ids[2] || page.GetOrders()[1].GetId() != ids[1] {
			t.Fatalf("first page: %d %s", code, body)
		}
		page, code, body = list("user_id=u-list&limit=2&page_token=" + page.GetNextPageToken())
		if code != 200 || len(page.GetOrders()) != 1 || page.GetNextPageToken() != "" || page.GetOrders()[0].GetId() != ids[0] {
			t.Fatalf("last page: %d %s", code, body)
		}
		if page, code, body = list("status=paid&user_id=u1"); code != 200 || len(page.GetOrders()) != 1 ||
			page.GetOrders()[0].GetStatus() != orderv1.OrderStatus_ORDER_STATUS_PAID {
			t.Fatalf("PAID orders of u1: %d %s", code, body)
		}
		if page, code, body = list("status=ORDER_STATUS_CANCELLED&user_id=u-list"); code != 200 || len(page.GetOrders()) != 0 {
			t.Fatalf("no CANCELLED orders of u-list: %d %s", code, body)
		}
		for _, q := range []string{"status=SHIPPED", "limit=101", "limit=-1", "limit=ten", "page_token=not%20an%20id",
			"user_id=" + strings.Repeat("u", 65)} {
			if _, code, body := list(q); code != 400 || !strings.Contains(body, api.ReasonInvalidArgument) {
				t.Errorf("%s: %d %s, want 400 %s", q, code, body, api.ReasonInvalidArgument)
			}
		}
		reply, err := s.grpc.ListOrders(ctx, &orderv1.ListOrdersRequest{UserId: "u-list", Limit: 1})
		if err != nil || len(reply.GetOrders()) != 1 || reply.GetOrders()[0].GetId() != ids[2] {
			t.Fatalf("gRPC ListOrders: %v %v", reply, err)
		}
	})
}

// TestServerCancelsUnpaidOrder: the delayed cancellation timer fires and
// cancels the unpaid order in one transaction with OrderCancelled.
func TestServerCancelsUnpaidOrder(t *testing.T) {
	s := startStack(t, 2*time.Second)
	created, code, body := s.httpCreate(t, `{"user_id":"u1","items":[{"product_id":"p1","quantity":1}]}`)
	if code != 200 {
		t.Fatalf("POST: %d %s", code, body)
	}
	id := created.GetOrder().GetId()
	waitFor(t, "CANCELLED", func() bool {
		got, _ := s.httpGet(t, id)
		return got.GetOrder().GetStatus() == orderv1.OrderStatus_ORDER_STATUS_CANCELLED
	})
	got, _ := s.httpGet(t, id)
	if got.GetOrder().GetCancelReason() != biz.CancelTimeout {
		t.Fatalf("reason %q", got.GetOrder().GetCancelReason())
	}
	if at := got.GetOrder().GetUpdatedAt().AsTime(); at.Before(got.GetOrder().GetCancelAt().AsTime()) {
		t.Fatalf("cancelled at %v, before the deadline %v", at, got.GetOrder().GetCancelAt().AsTime())
	}
	waitFor(t, "OrderCancelled on order-events", func() bool { return len(s.tags(id)) == 2 })
	if tags := s.tags(id); tags[1] != eventv1.TagOrderCancelled {
		t.Fatalf("order-events %v", tags)
	}
	// A late payment is recorded, but the order stays cancelled.
	s.publish(t, eventv1.TopicPaymentEvents, &eventv1.PaymentSucceeded{OrderId: id, Seq: 1, PaymentId: "late"})
	waitFor(t, "late payment in the timeline", func() bool {
		got, _ := s.httpGet(t, id)
		tl := got.GetTimeline()
		return len(tl) == 3 && tl[2].GetEvent() == eventv1.TagPaymentSucceeded
	})
	if got, _ := s.httpGet(t, id); got.GetOrder().GetStatus() != orderv1.OrderStatus_ORDER_STATUS_CANCELLED {
		t.Fatalf("late payment changed status to %v", got.GetOrder().GetStatus())
	}
}

// TestServerFaultsAndMetrics: the runtime fault API, deliver_twice (each
// order event goes out a second time with the same key, version and body
// and the consumers' dedup drops it), and the pattern metrics on /metrics.
func TestServerFaultsAndMetrics(t *testing.T) {
	s := startStack(t, time.Hour)
	put := func(path, body string) int {
		req, _ := nethttp.NewRequest(nethttp.MethodPut, s.httpBase+path, bytes.NewBufferString(body))
		resp, err := nethttp.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := put("/v1/faults/deliver_twice", `{"enabled":true,"count":1}`); code != 200 {
		t.Fatalf("arm: %d", code)
	}
	if code := put("/v1/faults/no_such_fault", `{"enabled":true}`); code != 404 {
		t.Fatalf("unknown fault: %d", code)
	}
	created, code, body := s.httpCreate(t, `{"user_id":"u-twice","items":[{"product_id":"p1","quantity":1,"unit_price":150}]}`)
	if code != 200 {
		t.Fatalf("create: %d %s", code, body)
	}
	id := created.GetOrder().GetId()
	waitFor(t, "OrderCreated twice", func() bool { return len(s.tags(id)) == 2 })
	s.mu.Lock()
	var twins []*mqclient.MessageExt
	for _, m := range s.events {
		if m.ShardingKey == id {
			twins = append(twins, m)
		}
	}
	s.mu.Unlock()
	a, b := twins[0], twins[1]
	if a.MsgID == b.MsgID || !bytes.Equal(a.Body, b.Body) || a.Properties["tideOrderVersion"] != "1" ||
		b.Properties["tideOrderVersion"] != "1" || !slices.Contains(b.Keys, id) {
		t.Fatalf("second delivery is not a twin: %+v / %+v", a, b)
	}
	// The shot is used: the next order's event goes out once.
	if !slices.Equal(statusNames(s.faults.List()), []string{"crash_after_commit=false", "crash_after_effect=false", "deliver_twice=false"}) {
		t.Fatalf("faults after the shot: %v", s.faults.List())
	}

	// A payment delivered twice (new msg ids, same event) pays once.
	ev := &eventv1.PaymentSucceeded{OrderId: id, Seq: 1, PaymentId: "pay-twice", UserId: "u-twice", Amount: 150}
	s.publish(t, eventv1.TopicPaymentEvents, ev)
	s.publish(t, eventv1.TopicPaymentEvents, ev)
	waitFor(t, "PAID", func() bool {
		got, _ := s.httpGet(t, id)
		return got.GetOrder().GetStatus() == orderv1.OrderStatus_ORDER_STATUS_PAID
	})
	waitFor(t, "dedup hit", func() bool { return strings.Contains(s.metrics(t), "idempotent_dedup_hits_total") })
	got, _ := s.httpGet(t, id)
	n := 0
	for _, e := range got.GetTimeline() {
		if e.GetEvent() == eventv1.TagPaymentSucceeded {
			n++
		}
	}
	if n != 1 || len(s.tags(id)) != 3 { // OrderCreated twice, OrderPaid once
		t.Fatalf("payment applied %d times, order-events %v", n, s.tags(id))
	}
	m := s.metrics(t)
	for _, want := range []string{"tide_txmsg_sends_total", "idempotent_effects_applied_total", "go_goroutines"} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func statusNames(st []fault.Status) []string {
	var out []string
	for _, s := range st {
		out = append(out, fmt.Sprintf("%s=%v", s.Name, s.Enabled))
	}
	return out
}

func (s *stack) metrics(t *testing.T) string {
	t.Helper()
	return apitest.Metrics(t, s.httpBase)
}

// TestServerTracePropagation: the W3C trace context of the HTTP request
// that creates an order travels in its OrderCreated message's properties
// (Kratos tracing middleware, then pkg/mqclient/tracing on the send).
func TestServerTracePropagation(t *testing.T) {
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
	s := startStack(t, time.Hour)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := nethttp.NewRequest(nethttp.MethodPost, s.httpBase+"/v1/orders",
		bytes.NewBufferString(`{"user_id":"u-trace","items":[{"product_id":"p1","quantity":1}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out orderv1.CreateOrderReply
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := protojson.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	id := out.GetOrder().GetId()
	waitFor(t, "OrderCreated", func() bool { return len(s.tags(id)) == 1 })
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.events {
		if m.ShardingKey == id && !strings.Contains(m.Properties["traceparent"], traceID) {
			t.Fatalf("OrderCreated properties %v lack trace %s", m.Properties, traceID)
		}
	}
}

// TestServerCrashAfterCommit: the fault fires once, after the order's
// transaction committed and before END_TRANSACTION (here the exit is a
// no-op, so the send then completes and the event is delivered once).
func TestServerCrashAfterCommit(t *testing.T) {
	s := startStack(t, time.Hour)
	crashed := make(chan struct{}, 4)
	s.faults.SetExit(func(code int) {
		if code != fault.ExitCode {
			t.Errorf("exit code %d", code)
		}
		crashed <- struct{}{}
	})
	req, _ := nethttp.NewRequest(nethttp.MethodPut, s.httpBase+"/v1/faults/crash_after_commit", bytes.NewBufferString(`{"enabled":true,"count":1}`))
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("arm: %v %v", resp, err)
	}
	resp.Body.Close()
	created, code, body := s.httpCreate(t, `{"user_id":"u-crash","items":[{"product_id":"p1","quantity":1}]}`)
	if code != 200 {
		t.Fatalf("create: %d %s", code, body)
	}
	if len(crashed) != 1 {
		t.Fatalf("crash_after_commit fired %d times", len(crashed))
	}
	waitFor(t, "OrderCreated", func() bool { return len(s.tags(created.GetOrder().GetId())) == 1 })
	if _, code, _ := s.httpCreate(t, `{"user_id":"u-crash","items":[{"product_id":"p1","quantity":1}]}`); code != 200 || len(crashed) != 1 {
		t.Fatalf("one-shot fault fired again (%d)", len(crashed))
	}
}
