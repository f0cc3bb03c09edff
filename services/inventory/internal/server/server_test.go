package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	nethttp "net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-kratos/kratos/v2/log"
	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	v1 "github.com/tidemq/tide/api/inventory/v1"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/services/inventory/internal/biz"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/inventory/internal/data"
	"github.com/tidemq/tide/services/inventory/internal/service"
)

type stack struct {
	httpURL  string
	grpcAddr string
	ns       string
	producer *mqclient.Producer
}

// startStack runs the service's servers against a real MariaDB, Redis,
// NameServer and broker, all in process or on loopback.
func startStack(t *testing.T, duplicate bool) *stack {
	t.Helper()
	ctx := context.Background()
	ns := nameservertest.Start(t)
	brokertest.Start(t, ns)
	db, rd := testenv.MariaDB(t), testenv.Redis(t)
	l := slog.New(slog.NewTextHandler(io.Discard, nil))
	mc := &conf.Messaging{NameServers: ns, ProducerGroup: eventv1.GroupInventoryProducer, DuplicateDelivery: duplicate}
	d, cleanup, err := data.NewData(&conf.Data{Database: &conf.Data_Database{Source: db.DSN, Migrate: true},
		Redis: &conf.Data_Redis{Addr: rd.Addr()}}, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	p, pclean, err := data.NewProducer(mc, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pclean)
	ob := data.NewOutbox(d, p, mc, l)
	uc := biz.NewStockUsecase(data.NewProductRepo(d), data.NewReservationRepo(d), d, ob, data.NewDedupCache(d, &conf.Data{}), l)
	svc := service.NewInventoryService(uc, l)
	sc := &conf.Server{Http: &conf.Server_HTTP{Addr: "127.0.0.1:0"}, Grpc: &conf.Server_GRPC{Addr: "127.0.0.1:0"}}
	hs := NewHTTPServer(sc, svc, d, log.DefaultLogger)
	gs := NewGRPCServer(sc, svc, log.DefaultLogger)
	cs, err := NewConsumerServer(mc, svc, ob, l)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // runs after the Stop cleanups below (LIFO)
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
	return &stack{httpURL: "http://" + he.Host, grpcAddr: ge.Host, ns: ns, producer: op}
}

func (s *stack) send(t *testing.T, ev eventv1.Event) {
	t.Helper()
	body, err := eventv1.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	m := &mqclient.Message{Topic: eventv1.TopicOrderEvents, Tag: eventv1.Tag(ev), Body: body, ShardingKey: ev.GetOrderId(), Keys: []string{ev.GetOrderId()}}
	if _, err := s.producer.Send(context.Background(), m); err != nil {
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
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The flow through the broker: OrderCreated reserves, OrderPaid sells,
// OrderCreated+OrderCancelled releases, a short order is rejected, every
// message delivered twice (Duplicate mode); the inventory events come out
// in seq order per order.
func TestServerOrderEventsFlow(t *testing.T) {
	s := startStack(t, true)
	ctx := context.Background()

	var mu sync.Mutex
	got := map[string][]string{}
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
		got[e.GetOrderId()] = append(got[e.GetOrderId()], fmt.Sprintf("%s/%d", m.Tag, e.GetSeq()))
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
	s.send(t, &eventv1.OrderCreated{OrderId: "o-paid", Seq: 1, Items: line("p-mug", 2)})
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
		return len(got["o-paid"]) >= 1 && len(got["o-cancel"]) >= 2 && len(got["o-short"]) >= 1
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
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := nethttp.Get(s.httpURL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
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
