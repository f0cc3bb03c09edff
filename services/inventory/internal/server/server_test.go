package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	nethttp "net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kratos/kratos/v2/log"
	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	v1 "github.com/tidemq/tide/api/inventory/v1"
	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/pkg/mqclient/tracing"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/services/inventory/internal/biz"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/inventory/internal/data"
	"github.com/tidemq/tide/services/inventory/internal/service"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/api/apitest"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/fault"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
	"github.com/tidemq/tide/services/kit/topics/topicstest"
)

type stack struct {
	httpURL  string
	grpcAddr string
	ns       string
	acl      topicstest.ACL
	producer *mqclient.Producer
	faults   *fault.Set
	recon    *biz.ReservationsJob
	data     *data.Data
}

// startStack runs the service's servers against a real MariaDB, Redis,
// NameServer and broker, all in process or on loopback.
// stackConfig varies startStack: broker options (ACL) and the
// credentials of the service and of the test's own clients.
type stackConfig struct {
	acl topicstest.ACL
}

// clientOpts are the options of the test's own producers and consumers.
func (s *stack) clientOpts(extra ...mqclient.Option) []mqclient.Option {
	return s.acl.ClientOptions(s.ns, extra...)
}

func startStack(t *testing.T, duplicate bool, opts ...func(*stackConfig)) *stack {
	t.Helper()
	var cfg stackConfig
	for _, o := range opts {
		o(&cfg)
	}
	ctx := context.Background()
	ns := cfg.acl.Start(t)
	db, rd := testenv.MariaDB(t), testenv.Redis(t)
	l := slog.New(slog.NewTextHandler(io.Discard, nil))
	mc := &conf.Messaging{NameServers: ns, ProducerGroup: eventv1.GroupInventoryProducer, DuplicateDelivery: duplicate,
		AccessKey: cfg.acl.Creds.AccessKey, SecretKey: cfg.acl.Creds.SecretKey}
	d, cleanup, err := data.NewData(&kitconf.Data{Database: &kitconf.Data_Database{Source: db.DSN, Migrate: proto.Bool(true)},
		Redis: &kitconf.Data_Redis{Addr: rd.Addr()}}, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	mcl, mqclean, err := data.NewMQClient(mc, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mqclean) // after the members' cleanups (LIFO)
	p, pclean, err := data.NewProducer(mc, mcl, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pclean)
	reg := data.NewRegistry()
	dedup, err := data.NewDedup(d, mc, reg, l)
	if err != nil {
		t.Fatal(err)
	}
	faults := data.NewFaults(&conf.Fault{Admin: true}, mc, l)
	ob := data.NewOutbox(d, p, faults, mc, l)
	uc := biz.NewStockUsecase(data.NewProductRepo(d), data.NewReservationRepo(d), d, ob, l)
	svc := service.NewInventoryService(uc, dedup, l)
	orders, rclean, err := data.NewOrderLookup(&conf.Reconcile{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rclean)
	repairs, err := data.NewRepairLog(d)
	if err != nil {
		t.Fatal(err)
	}
	runner, err := data.NewRunner(d, reg, l)
	if err != nil {
		t.Fatal(err)
	}
	recon := biz.NewReservationsJob(&conf.Reconcile{MinAge: durationpb.New(0)}, d, orders, uc, repairs)
	sc := &kitconf.Server{Http: &kitconf.Server_HTTP{Addr: "127.0.0.1:0"}, Grpc: &kitconf.Server_GRPC{Addr: "127.0.0.1:0"}}
	cs, err := NewConsumerServer(mc, mcl, svc, ob, faults, reg, l)
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHTTPServer(sc, svc, service.NewInput(log.DefaultLogger), api.AllReady(d.Ping, api.Started("consumer", cs.Running)), faults, reg, service.NewReconcileJobs(runner, recon, l))
	gs := NewGRPCServer(sc, svc, service.NewInput(log.DefaultLogger))
	httpURL, grpcAddr := apitest.ServeAPI(t, ctx, hs, gs)
	apitest.Start(t, ctx, 20*time.Second, cs)
	s := &stack{ns: ns, acl: cfg.acl}
	op, err := mqclient.NewProducer(s.clientOpts(mqclient.WithProducerGroup("test-order-producer"),
		mqclient.WithSendInterceptors(tracing.SendInterceptor(tracing.Options{})))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = op.Shutdown(context.Background()) })
	s.httpURL, s.grpcAddr, s.producer, s.faults, s.recon, s.data = httpURL, grpcAddr, op, faults, recon, d
	return s
}

func (s *stack) send(t *testing.T, ev eventv1.Event) {
	t.Helper()
	s.sendCtx(t, context.Background(), ev)
}

// sendCtx sends ev with ctx's trace context.
func (s *stack) sendCtx(t *testing.T, ctx context.Context, ev eventv1.Event) {
	t.Helper()
	body, err := eventv1.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	// Stamped as the order service stamps its events: key = order id,
	// version = the order's event seq.
	m := ordered.Stamp(&mqclient.Message{Topic: eventv1.TopicOrderEvents, Tag: eventv1.Tag(ev), Body: body}, ev.GetOrderId(), ev.GetSeq())
	if _, err := s.producer.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
}

func getProduct(t *testing.T, url, id string) map[string]any {
	t.Helper()
	resp, err := nethttp.Get(url + "/v1/products/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", id, resp.StatusCode, out)
	}
	return out["product"].(map[string]any)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	apitest.WaitFor(t, what, 30*time.Second, cond)
}

// The flow through the broker: OrderCreated reserves, OrderPaid sells,
// OrderCreated+OrderCancelled releases, a short order is rejected, every
// message delivered twice (Duplicate mode); the inventory events come out
// in seq order per order.
func TestServerOrderEventsFlow(t *testing.T) {
	s := startStack(t, true)
	ctx := context.Background()

	var mu sync.Mutex
	got := map[string][]string{} // distinct, in order
	all := map[string][]string{} // every delivery
	c, err := mqclient.NewPushConsumer("test-order-service", mqclient.WithNameServers(s.ns), mqclient.WithOrdered())
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(eventv1.TopicInventoryEvents, "*", func(_ context.Context, m *mqclient.MessageExt) error {
		ev, err := eventv1.Decode(m.Tag, m.Body)
		if err != nil {
			return err
		}
		e := ev.(eventv1.Event)
		mu.Lock()
		all[e.GetOrderId()] = append(all[e.GetOrderId()], fmt.Sprintf("%s/%d", m.Tag, e.GetSeq()))
		if g := got[e.GetOrderId()]; len(g) == 0 || g[len(g)-1] != fmt.Sprintf("%s/%d", m.Tag, e.GetSeq()) {
			got[e.GetOrderId()] = append(g, fmt.Sprintf("%s/%d", m.Tag, e.GetSeq()))
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Shutdown(context.Background()) })

	line := func(id string, q int32) []*eventv1.LineItem {
		return []*eventv1.LineItem{{ProductId: id, Quantity: q}}
	}
	// Every order event twice (the order service's deliver_twice): the
	// second copy is a new message with the same key, version and body.
	s.send(t, &eventv1.OrderCreated{OrderId: "o-paid", Seq: 1, Items: line("p-mug", 2)})
	s.send(t, &eventv1.OrderCreated{OrderId: "o-paid", Seq: 1, Items: line("p-mug", 2)})
	s.send(t, &eventv1.OrderPaid{OrderId: "o-paid", Seq: 2})
	s.send(t, &eventv1.OrderPaid{OrderId: "o-paid", Seq: 2})
	s.send(t, &eventv1.OrderCreated{OrderId: "o-cancel", Seq: 1, Items: line("p-mug", 3)})
	s.send(t, &eventv1.OrderCancelled{OrderId: "o-cancel", Seq: 2, Reason: "timeout"})
	s.send(t, &eventv1.OrderCreated{OrderId: "o-short", Seq: 1, Items: line("p-rare", 4)})

	waitFor(t, "mug sold and released", func() bool {
		p := getProduct(t, s.httpURL, "p-mug")
		// protojson renders int64 as strings.
		return p["sold"] == "2" && p["reserved"] == "0" && p["available"] == "48"
	})
	waitFor(t, "inventory events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(all["o-paid"]) >= 2 && len(all["o-cancel"]) >= 4 && len(all["o-short"]) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	want := map[string][]string{
		"o-paid":   {"StockReserved/1"},
		"o-cancel": {"StockReserved/1", "StockReleased/2"},
		"o-short":  {"StockRejected/1"},
	}
	for id, w := range want {
		if fmt.Sprint(got[id]) != fmt.Sprint(w) {
			t.Errorf("%s events = %v, want %v", id, got[id], w)
		}
	}
	if p := getProduct(t, s.httpURL, "p-rare"); p["available"] != "3" {
		t.Errorf("p-rare = %v", p)
	}
}

func TestServerHTTPAndGRPC(t *testing.T) {
	s := startStack(t, false)
	apitest.Healthy(t, s.httpURL)
	resp, err := nethttp.Get(s.httpURL + "/v1/products/nope")
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Code   int    `json:"code"`
		Reason string `json:"reason"`
	}
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 404 || e.Reason != biz.ReasonProductNotFound {
		t.Fatalf("unknown product: %d %+v", resp.StatusCode, e)
	}
	resp, err = nethttp.Get(s.httpURL + "/v1/products?page_size=2")
	if err != nil {
		t.Fatal(err)
	}
	var list v1ListJSON
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Products) != 2 || list.NextPageToken != "p-coffee" {
		t.Fatalf("list page = %+v", list)
	}

	conn, err := kgrpc.DialInsecure(context.Background(), kgrpc.WithEndpoint(s.grpcAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reply, err := v1.NewInventoryClient(conn).GetProduct(context.Background(), &v1.GetProductRequest{Id: "p-rare"})
	if err != nil {
		t.Fatal(err)
	}
	if reply.GetProduct().GetAvailable() != 3 || reply.GetProduct().GetPrice() != 99900 {
		t.Fatalf("gRPC GetProduct = %v", reply)
	}
}

type v1ListJSON struct {
	Products []struct {
		ID string `json:"id"`
	} `json:"products"`
	NextPageToken string `json:"nextPageToken"`
}

// fakeOrders is the order service as the reconciliation job sees it.
type fakeOrders map[string]orderv1.OrderStatus

func (f fakeOrders) OrderStatus(_ context.Context, id string) (orderv1.OrderStatus, bool, error) {
	st, ok := f[id]
	return st, ok, nil
}

func postJSON(t *testing.T, url, body string, out any) int {
	t.Helper()
	resp, err := nethttp.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// TestServerReconcileReservations: reservations whose order is gone or
// cancelled are found (dry run changes nothing), released by a real run
// through the idempotent Release, and a second run repairs nothing.
func TestServerReconcileReservations(t *testing.T) {
	s := startStack(t, false)
	line := func(q int32) []*eventv1.LineItem { return []*eventv1.LineItem{{ProductId: "p-coffee", Quantity: q}} }
	for _, id := range []string{"o-live", "o-orphan", "o-cancelled", "o-paid"} {
		s.send(t, &eventv1.OrderCreated{OrderId: id, Seq: 1, Items: line(1)})
	}
	waitFor(t, "4 coffees reserved", func() bool { return getProduct(t, s.httpURL, "p-coffee")["reserved"] == "4" })
	before := getProduct(t, s.httpURL, "p-coffee")
	// o-orphan's order never committed; o-cancelled's OrderCancelled was lost.
	s.recon.Orders = fakeOrders{"o-live": orderv1.OrderStatus_ORDER_STATUS_RESERVED,
		"o-cancelled": orderv1.OrderStatus_ORDER_STATUS_CANCELLED, "o-paid": orderv1.OrderStatus_ORDER_STATUS_PAID}

	var dry rechttp.RunReport
	if code := postJSON(t, s.httpURL+"/v1/reconcile/reservations", `{"dry_run":true}`, &dry); code != 200 {
		t.Fatalf("dry run: %d %+v", code, dry)
	}
	classes := map[string]string{}
	for _, d := range dry.Discrepancies {
		classes[d.Key] = d.Class
	}
	want := map[string]string{"o-orphan": string(biz.ClassOrphan), "o-cancelled": string(biz.ClassCancelled), "o-paid": string(biz.ClassPaid)}
	if fmt.Sprint(classes) != fmt.Sprint(want) || dry.WouldRepair != 2 || dry.RunID != 0 {
		t.Fatalf("dry run = %+v", dry)
	}
	if p := getProduct(t, s.httpURL, "p-coffee"); fmt.Sprint(p) != fmt.Sprint(before) {
		t.Fatalf("dry run changed stock: %v -> %v", before, p)
	}

	var run rechttp.RunReport
	if code := postJSON(t, s.httpURL+"/v1/reconcile/reservations", `{"dry_run":false}`, &run); code != 200 {
		t.Fatalf("run: %d", code)
	}
	if run.Repaired != 2 || run.RunID == 0 || len(run.Discrepancies) != 3 {
		t.Fatalf("run = %+v", run)
	}
	p := getProduct(t, s.httpURL, "p-coffee")
	if p["reserved"] != "2" || p["available"] != fmt.Sprint(mustInt(t, before["available"])+2) {
		t.Fatalf("after repair p-coffee = %v (before %v)", p, before)
	}
	var again rechttp.RunReport
	if code := postJSON(t, s.httpURL+"/v1/reconcile/reservations", `{}`, &again); code != 200 || again.Repaired != 0 {
		t.Fatalf("second run: %d %+v", code, again)
	}
	if p2 := getProduct(t, s.httpURL, "p-coffee"); fmt.Sprint(p2) != fmt.Sprint(p) {
		t.Fatalf("second run changed stock: %v -> %v", p, p2)
	}
	if code := postJSON(t, s.httpURL+"/v1/reconcile/nope", `{}`, nil); code != 404 {
		t.Fatalf("unknown job: %d", code)
	}
	resp, err := nethttp.Get(s.httpURL + "/v1/reconcile/runs?job=reservations")
	if err != nil {
		t.Fatal(err)
	}
	var runs struct{ Runs []map[string]any }
	json.NewDecoder(resp.Body).Decode(&runs)
	resp.Body.Close()
	if len(runs.Runs) != 2 || runs.Runs[0]["status"] != "done" {
		t.Fatalf("runs = %+v", runs)
	}
	// Filtered by order: o-orphan was found and repaired by the first run
	// only; an order no run flagged has none.
	for q, want := range map[string]int{"o-orphan": 1, "nope": 0} {
		resp, err := nethttp.Get(s.httpURL + "/v1/reconcile/runs?order_id=" + q)
		if err != nil {
			t.Fatal(err)
		}
		var rs struct{ Runs []map[string]any }
		json.NewDecoder(resp.Body).Decode(&rs)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(rs.Runs) != want || (want == 1 && fmt.Sprint(rs.Runs[0]["id"]) != fmt.Sprint(run.RunID)) {
			t.Fatalf("runs of %s: %d %+v, want %d (run %d)", q, resp.StatusCode, rs, want, run.RunID)
		}
	}
	if m := metricsText(t, s.httpURL); !strings.Contains(m, `mqclient_reconcile_discrepancies_total{class="reservation_without_order",job="reservations"}`) {
		t.Fatalf("metrics lack the discrepancy count")
	}
}

func mustInt(t *testing.T, v any) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(fmt.Sprint(v), &n); err != nil {
		t.Fatalf("%v: %v", v, err)
	}
	return n
}

func metricsText(t *testing.T, url string) string {
	t.Helper()
	return apitest.Metrics(t, url)
}

// TestServerCrashAfterEffect: the fault fires once, after the effect
// committed (stock already reserved) and before the ack; the redelivery
// of the same event is then a duplicate.
func TestServerCrashAfterEffect(t *testing.T) {
	s := startStack(t, false)
	crashed := make(chan string, 4)
	s.faults.SetExit(func(int) { crashed <- getProduct(t, s.httpURL, "p-mug")["reserved"].(string) })
	req, _ := nethttp.NewRequest(nethttp.MethodPut, s.httpURL+"/v1/faults/crash_after_effect", strings.NewReader(`{"enabled":true,"count":1}`))
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("arm: %v %v", resp, err)
	}
	resp.Body.Close()
	s.send(t, &eventv1.OrderCreated{OrderId: "o-crash", Seq: 1, Items: []*eventv1.LineItem{{ProductId: "p-mug", Quantity: 5}}})
	select {
	case reserved := <-crashed:
		if reserved != "5" {
			t.Fatalf("crashed with reserved = %s: the effect must commit first", reserved)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("crash_after_effect never fired")
	}
	// Same event again (as the redelivery after the crash): no effect.
	s.send(t, &eventv1.OrderCreated{OrderId: "o-crash", Seq: 1, Items: []*eventv1.LineItem{{ProductId: "p-mug", Quantity: 5}}})
	waitFor(t, "dedup hit", func() bool { return strings.Contains(metricsText(t, s.httpURL), "idempotent_dedup_hits_total") })
	if p := getProduct(t, s.httpURL, "p-mug"); p["reserved"] != "5" {
		t.Fatalf("duplicate applied: %v", p)
	}
	if len(crashed) != 0 {
		t.Fatal("a one-shot fault fired twice")
	}
}
