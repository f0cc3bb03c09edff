package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/services/inventory/internal/biz"
	"github.com/tidemq/tide/services/inventory/internal/data"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
)

// orderProc is the order service running as a process (its packages are
// internal to its module), built from ../order and configured by its
// shipped config file and environment placeholders.
type orderProc struct {
	http string
	grpc string
}

// startOrderService runs the order service with inventory (its catalog
// prices the orders) at inventoryGRPC.
func startOrderService(t *testing.T, ns, inventoryGRPC string, cancelAfter time.Duration) *orderProc {
	t.Helper()
	dir, err := filepath.Abs("../../../order")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "order")
	build := exec.Command("go", "build", "-o", bin, "./cmd/order")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build order service: %v\n%s", err, out)
	}
	db, rd := testenv.MariaDB(t), testenv.Redis(t)
	p := &orderProc{http: testenv.FreeAddr(t), grpc: testenv.FreeAddr(t)}
	cmd := exec.Command(bin, "-conf", filepath.Join(dir, "configs", "config.yaml"))
	cmd.Env = append(os.Environ(), "MYSQL_DSN="+db.DSN, "REDIS_ADDR="+rd.Addr(), "NAMESRV_ADDR="+ns,
		"ORDER_HTTP_ADDR="+p.http, "ORDER_GRPC_ADDR="+p.grpc, "ORDER_INVENTORY_GRPC="+inventoryGRPC, "FAULT_ADMIN=true",
		"ORDER_CANCEL_AFTER="+fmt.Sprintf("%gs", cancelAfter.Seconds()), "ORDER_SWEEP_INTERVAL=1s")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("order service output:\n%s", logs.String())
		}
	})
	waitFor(t, "order service ready", func() bool {
		resp, err := nethttp.Get("http://" + p.http + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

func (p *orderProc) create(t *testing.T, product string, qty int) string {
	t.Helper()
	body := fmt.Sprintf(`{"user_id":"u-flow","items":[{"product_id":%q,"quantity":%d}]}`, product, qty)
	resp, err := nethttp.Post("http://"+p.http+"/v1/orders", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Order struct{ ID string } }
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil || resp.StatusCode != 200 || out.Order.ID == "" {
		t.Fatalf("create order: %d %s %v", resp.StatusCode, b, err)
	}
	return out.Order.ID
}

type orderView struct {
	Order struct {
		Status    string
		CancelAt  time.Time `json:"cancelAt"`
		UpdatedAt time.Time `json:"updatedAt"`
	}
	Timeline []struct{ Event string }
}

func (p *orderProc) get(t *testing.T, id string) orderView {
	t.Helper()
	resp, err := nethttp.Get("http://" + p.http + "/v1/orders/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v orderView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func put(t *testing.T, url, body string) {
	t.Helper()
	req, _ := nethttp.NewRequest(nethttp.MethodPut, url, strings.NewReader(body))
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT %s: %d", url, resp.StatusCode)
	}
}

// TestFlowOrderAndInventory runs the order service (a process) and the
// inventory service (in process) on one in-process broker: an order gets
// its stock reserved; an unpaid order is cancelled after its timeout,
// never before, and its stock released; with deliver_twice on both sides
// every event arrives twice and still takes effect once; an orphan
// reservation is found and released by reconciliation against the order
// service's gRPC API, and a second run changes nothing.
func TestFlowOrderAndInventory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the order service")
	}
	s := startStack(t, false)
	const timeout = 4 * time.Second
	op := startOrderService(t, s.ns, s.grpcAddr, timeout)
	conn, err := kgrpc.DialInsecure(context.Background(), kgrpc.WithEndpoint(op.grpc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s.recon.Orders = data.GRPCOrders{C: orderv1.NewOrderClient(conn)}
	stock := func(id string) string {
		p := getProduct(t, s.httpURL, id)
		return fmt.Sprintf("%v/%v/%v", p["available"], p["reserved"], p["sold"])
	}

	// Both sides publish every event twice.
	put(t, "http://"+op.http+"/v1/faults/deliver_twice", `{"enabled":true}`)
	put(t, s.httpURL+"/v1/faults/deliver_twice", `{"enabled":true}`)

	// Order -> reserved, then unpaid -> cancelled at its deadline, released.
	id := op.create(t, "p-mug", 2)
	waitFor(t, "order RESERVED", func() bool { return op.get(t, id).Order.Status == "ORDER_STATUS_RESERVED" })
	if got := stock("p-mug"); got != "48/2/0" {
		t.Fatalf("p-mug after reserve = %s, want 48/2/0 (reserved once)", got)
	}
	waitFor(t, "order CANCELLED", func() bool { return op.get(t, id).Order.Status == "ORDER_STATUS_CANCELLED" })
	v := op.get(t, id)
	if v.Order.CancelAt.IsZero() || v.Order.UpdatedAt.Before(v.Order.CancelAt) {
		t.Fatalf("cancelled at %v, before its deadline %v", v.Order.UpdatedAt, v.Order.CancelAt)
	}
	waitFor(t, "stock released", func() bool { return stock("p-mug") == "50/0/0" })
	waitFor(t, "StockReleased in the order timeline", func() bool {
		for _, e := range op.get(t, id).Timeline {
			if e.Event == "StockReleased" {
				return true
			}
		}
		return false
	})
	n := 0
	for _, e := range op.get(t, id).Timeline {
		if e.Event == "StockReserved" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("StockReserved applied %d times: %+v", n, op.get(t, id).Timeline)
	}

	// An orphan reservation (its order never existed), then reconciliation.
	s.send(t, orphanCreated("o-ghost"))
	waitFor(t, "orphan reserved", func() bool { return stock("p-rare") == "2/1/0" })
	var run rechttp.RunReport
	if code := postJSON(t, s.httpURL+"/v1/reconcile/reservations", `{"dry_run":false}`, &run); code != 200 || run.Repaired != 1 {
		t.Fatalf("reconcile: %d %+v", code, run)
	}
	if len(run.Discrepancies) != 1 || run.Discrepancies[0].Key != "o-ghost" || run.Discrepancies[0].Class != string(biz.ClassOrphan) {
		t.Fatalf("discrepancies %+v", run.Discrepancies)
	}
	if got := stock("p-rare"); got != "3/0/0" {
		t.Fatalf("p-rare after repair = %s", got)
	}
	if code := postJSON(t, s.httpURL+"/v1/reconcile/reservations", `{}`, &run); code != 200 || run.Repaired != 0 {
		t.Fatalf("second run: %d %+v", code, run)
	}
}

func orphanCreated(id string) *eventv1.OrderCreated {
	return &eventv1.OrderCreated{OrderId: id, Seq: 1, Items: []*eventv1.LineItem{{ProductId: "p-rare", Quantity: 1}}}
}
