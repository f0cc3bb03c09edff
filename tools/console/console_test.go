package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/tools/console"
)

func TestPagesAndAPI(t *testing.T) {
	f := newFixture(t)

	t.Run("cluster", func(t *testing.T) {
		var v console.ClusterView
		if code := f.getJSON(t, "/api/cluster", &v); code != 200 || len(v.Brokers) != 2 {
			t.Fatalf("cluster: %d %+v", code, v)
		}
		b, s := v.Brokers[0], v.Brokers[1]
		if s.Role != "SLAVE" || s.MasterAddr == "" || !s.MasterConn || len(b.Slaves) != 1 || b.Slaves[0].LagBytes != 0 {
			t.Fatalf("replication: master %+v, slave %+v", b, s)
		}
		if b.Role != "ASYNC_MASTER" || b.Addr != f.broker || b.DiskRatio == nil || b.DiskTotal == 0 || b.MaxPhyOffset == 0 || b.Error != "" {
			t.Fatalf("broker: %+v", b)
		}
		// the sampler has two samples by now: rates are known
		waitFor(t, "put TPS sampled", func() bool {
			f.getJSON(t, "/api/cluster", &v)
			return v.Brokers[0].PutTPS != nil
		})
		code, body := f.get(t, "/cluster")
		if code != 200 || !strings.Contains(body, "broker-a") || !strings.Contains(body, "ASYNC_MASTER") || !strings.Contains(body, "1 slave(s)") {
			t.Fatalf("cluster page: %d\n%s", code, body)
		}
	})

	t.Run("topics", func(t *testing.T) {
		var v console.TopicsView
		f.getJSON(t, "/api/topics", &v)
		got := map[string]console.TopicSummary{}
		for _, ts := range v.Topics {
			got[ts.Topic] = ts
		}
		if ts := got["order-events"]; ts.Queues != 4 || ts.Messages != 5 || ts.Kind != "normal" {
			t.Fatalf("order-events: %+v", ts)
		}
		if _, ok := got["TBW102"]; ok {
			t.Fatal("system topic listed without all=1")
		}
		f.getJSON(t, "/api/topics?all=1", &v)
		if len(v.Topics) <= len(got) {
			t.Fatalf("all=1 lists %d topics, without %d", len(v.Topics), len(got))
		}
		var tv console.TopicView
		if code := f.getJSON(t, "/api/topics/order-events", &tv); code != 200 || len(tv.Queues) != 4 || len(tv.Route) != 1 || tv.Route[0].Perm != "RW-" {
			t.Fatalf("topic: %d %+v", code, tv)
		}
		groups := map[string]int64{}
		for _, g := range tv.Groups {
			groups[g.Group] = g.Lag
		}
		if lag, ok := groups["inventory-service"]; !ok || lag != 0 {
			t.Fatalf("groups of order-events: %+v", tv.Groups)
		}
		if lag := groups["payment-service"]; lag != 4 {
			t.Fatalf("payment-service lag %d, want 4 (5 messages, one queue committed past 1)", lag)
		}
		code, body := f.get(t, "/topics/order-events")
		if code != 200 || !strings.Contains(body, "inventory-service") || !strings.Contains(body, "Max offset") {
			t.Fatalf("topic page: %d\n%s", code, body)
		}
		if code, _ := f.get(t, "/topics/no-such-topic"); code != http.StatusNotFound {
			t.Fatalf("unknown topic: %d", code)
		}
		// a DLQ topic name has '%' characters: escaped in the path
		if code, body := f.get(t, "/topics/"+url.PathEscape("%DLQ%payment-service")); code != 200 || !strings.Contains(body, "dlq") {
			t.Fatalf("DLQ topic page: %d\n%s", code, body)
		}
	})

	t.Run("groups", func(t *testing.T) {
		var v console.GroupsView
		f.getJSON(t, "/api/groups", &v)
		got := map[string]console.GroupSummary{}
		for _, g := range v.Groups {
			got[g.Group] = g
		}
		if g := got["inventory-service"]; g.Members != 1 || g.Lag != 0 {
			t.Fatalf("inventory-service: %+v", g)
		}
		if g := got["payment-service"]; g.Members != 0 || g.Lag != 4 || !g.DLQ {
			t.Fatalf("payment-service: %+v", g)
		}
		var gv console.GroupView
		f.getJSON(t, "/api/groups/payment-service", &gv)
		if gv.TotalLag != 4 || gv.DLQ != 1 || len(gv.Queues) != 4 || gv.Members.Online {
			t.Fatalf("payment-service: %+v", gv)
		}
		code, body := f.get(t, "/groups/inventory-service")
		if code != 200 || !strings.Contains(body, "CONSUME_PASSIVELY") || !strings.Contains(body, "Reset offsets") {
			t.Fatalf("group page: %d\n%s", code, body)
		}
		if code, _ := f.get(t, "/groups/nobody"); code != http.StatusNotFound {
			t.Fatalf("unknown group: %d", code)
		}
	})

	t.Run("reset offset", func(t *testing.T) {
		post := func(group string, form url.Values) (int, string) {
			t.Helper()
			resp, err := f.client.PostForm(f.base+"/groups/"+group+"/reset", form)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b := new(strings.Builder)
			_, _ = readAll(b, resp)
			return resp.StatusCode, b.String()
		}
		form := url.Values{"topic": {"order-events"}, "time": {"0"}}
		// an online group is refused unless forced
		if code, body := post("inventory-service", form); code != http.StatusConflict || !strings.Contains(body, "online consumer") {
			t.Fatalf("reset of online group: %d\n%s", code, body)
		}
		// the operator is the signed-in user, never a form field
		withOp := url.Values{"topic": {"order-events"}, "time": {"0"}, "operator": {"mallory"}}
		if code, body := post("payment-service", withOp); code != http.StatusBadRequest || !strings.Contains(body, "unknown field") {
			t.Fatalf("reset with an operator field: %d\n%s", code, body)
		}
		code, body := post("payment-service", form)
		if code != 200 || !strings.Contains(body, "reset to") || !strings.Contains(body, "reset-result") {
			t.Fatalf("reset: %d\n%s", code, body)
		}
		var gv console.GroupView
		f.getJSON(t, "/api/groups/payment-service", &gv)
		if gv.TotalLag != 5 {
			t.Fatalf("lag after reset to the beginning: %d, want 5", gv.TotalLag)
		}
	})

	t.Run("message search", func(t *testing.T) {
		var v console.SearchView
		f.getJSON(t, "/api/messages?topic=order-events&key="+f.order, &v)
		if len(v.Messages) != 2 || v.Messages[0].Tag != "OrderCreated" || v.Messages[1].Tag != "OrderPaid" {
			t.Fatalf("by key: %+v", v.Messages)
		}
		f.getJSON(t, "/api/messages?id="+f.created.OffsetMsgID, &v)
		if len(v.Messages) != 1 || v.Messages[0].MsgID != f.created.MsgID || v.Messages[0].Properties["traceparent"] == "" {
			t.Fatalf("by offset id: %+v", v.Messages)
		}
		f.getJSON(t, "/api/messages?topic=order-events&id="+f.paid.MsgID, &v)
		if len(v.Messages) != 1 || v.Messages[0].Tag != "OrderPaid" {
			t.Fatalf("by unique id: %+v", v.Messages)
		}
		f.getJSON(t, "/api/messages?topic=inventory-events&begin=0", &v)
		if len(v.Messages) != 4 {
			t.Fatalf("by time: %d messages", len(v.Messages))
		}
		if code, _ := f.get(t, "/api/messages?key=x"); code != http.StatusBadRequest {
			t.Fatalf("key without topic: %d", code)
		}
		code, body := f.get(t, "/messages?topic=order-events&key="+f.order)
		if code != 200 || !strings.Contains(body, f.created.MsgID) {
			t.Fatalf("search page: %d\n%s", code, body)
		}
	})

	t.Run("message delivery", func(t *testing.T) {
		var d console.MessageDetail
		f.getJSON(t, "/api/message?id="+f.created.OffsetMsgID, &d)
		states := map[string]console.Delivery{}
		for _, x := range d.Deliveries {
			states[x.Group] = x
		}
		if states["inventory-service"].State != "consumed" || states["payment-service"].State != "dead-lettered" ||
			states["payment-service"].DLQ == "" {
			t.Fatalf("deliveries of OrderCreated: %+v", d.Deliveries)
		}
		f.getJSON(t, "/api/message?id="+f.paid.OffsetMsgID, &d)
		for _, x := range d.Deliveries {
			if x.Group == "inventory-service" && (x.State != "retried" || x.Retries != 1) {
				t.Fatalf("deliveries of OrderPaid: %+v", d.Deliveries)
			}
		}
		code, body := f.get(t, "/message?id="+f.created.OffsetMsgID)
		if code != 200 || !strings.Contains(body, "traceparent") || !strings.Contains(body, "dead-lettered") || !strings.Contains(body, "amountCents") {
			t.Fatalf("message page: %d\n%s", code, body)
		}
	})

	t.Run("order", func(t *testing.T) {
		var v console.OrderView
		f.getJSON(t, "/api/orders/"+f.order, &v)
		var tags []string
		for _, e := range v.Events {
			tags = append(tags, e.Message.Tag)
		}
		// order-events sorts before the others only by store time
		if strings.Join(tags, ",") != "OrderCreated,StockReserved,PaymentSucceeded,OrderPaid" {
			t.Fatalf("timeline: %v", tags)
		}
		code, body := f.get(t, "/orders/"+f.order)
		if code != 200 || !strings.Contains(body, "timeline") || !strings.Contains(body, "payment-service: dead-lettered") {
			t.Fatalf("order page: %d\n%s", code, body)
		}
		resp, err := f.client.Get(f.base + "/orders?id=" + f.order)
		if err != nil || resp.Request.URL.Path != "/orders/"+f.order {
			t.Fatalf("order form redirect: %v %v", err, resp.Request.URL)
		}
		resp.Body.Close()
	})

	t.Run("half messages", func(t *testing.T) {
		var v console.HalfView
		f.getJSON(t, "/api/half", &v)
		if len(v.Messages) != 1 || v.Messages[0].ProducerGroup != "payment-producer" || v.Messages[0].Broker != f.broker {
			t.Fatalf("half: %+v", v)
		}
		h := v.Messages[0]
		resp, err := f.client.PostForm(f.base+"/half/action", url.Values{"broker": {h.Broker}, "offset": {itoa(h.QueueOffset)},
			"action": {"rollback"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("rollback: %d", resp.StatusCode)
		}
		waitFor(t, "half message gone", func() bool {
			f.getJSON(t, "/api/half", &v)
			return len(v.Messages) == 0
		})
		resp, _ = f.client.PostForm(f.base+"/half/action", url.Values{"broker": {"10.9.9.9:1"}, "offset": {"0"}, "action": {"commit"}})
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("action on an unknown broker: %d", resp.StatusCode)
		}
	})

	t.Run("dlq resend", func(t *testing.T) {
		code, body := f.get(t, "/dlq?group=payment-service")
		if code != 200 || !strings.Contains(body, f.dlq) || !strings.Contains(body, "order-events") {
			t.Fatalf("dlq page: %d\n%s", code, body)
		}
		resp, err := f.client.PostForm(f.base+"/api/dlq/resend", url.Values{"group": {"payment-service"}, "id": {f.dlq, "00000000000000000000000000000000"}})
		if err != nil {
			t.Fatal(err)
		}
		var v console.DLQView
		decode(t, resp, &v)
		if len(v.Results) != 2 || !v.Results[0].OK || v.Results[0].Target != "%RETRY%payment-service" || v.Results[1].OK {
			t.Fatalf("resend: %+v", v.Results)
		}
	})

	t.Run("cross origin post refused", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, f.base+"/dlq/resend", strings.NewReader("group=payment-service"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-site POST: %d", resp.StatusCode)
		}
	})

	t.Run("health", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/readyz", "/static/console.css"} {
			if code, _ := f.get(t, p); code != 200 {
				t.Fatalf("%s: %d", p, code)
			}
		}
	})
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*console.Options)
		ok   bool
	}{
		{"defaults with a NameServer", func(o *console.Options) {}, true},
		{"no NameServer", func(o *console.Options) { o.NameServers = nil }, false},
		{"bad NameServer", func(o *console.Options) { o.NameServers = []string{"nohostport"} }, false},
		{"bad listen", func(o *console.Options) { o.ListenAddr = "x" }, false},
		{"bad reconcile URL", func(o *console.Options) { o.ReconcileURLs = []string{"order:8000"} }, false},
		{"named reconcile URL", func(o *console.Options) { o.ReconcileURLs = []string{"payment=http://payment:8003"} }, true},
		{"bad named reconcile URL", func(o *console.Options) { o.ReconcileURLs = []string{"payment=payment:8003"} }, false},
		{"bad order URL", func(o *console.Options) { o.OrderURL = "order:8000" }, false},
		{"controllers", func(o *console.Options) { o.ControllerAddrs = []string{"c1:9878", "c2:9878"} }, true},
		{"bad controller", func(o *console.Options) { o.ControllerAddrs = []string{"c1"} }, false},
		{"bad rate", func(o *console.Options) { o.ResendRate = -1 }, false},
		{"access key without secret", func(o *console.Options) { o.Credentials.AccessKey = "consoleAdmin" }, false},
		{"secret without access key", func(o *console.Options) { o.Credentials.SecretKey = "consoleSecret" }, false},
		{"credentials", func(o *console.Options) {
			o.Credentials.AccessKey, o.Credentials.SecretKey = "consoleAdmin", "consoleSecret"
		}, true},
		{"no sign-in", func(o *console.Options) { o.Auth.UsersFile = "" }, false},
		{"proxy without trusted addresses", func(o *console.Options) { o.Auth.UsersFile, o.Auth.ProxyHeader = "", "X-Forwarded-User" }, false},
		{"proxy only", func(o *console.Options) {
			o.Auth.UsersFile, o.Auth.ProxyHeader = "", "X-Forwarded-User"
			o.Auth.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
		}, true},
		{"trusted addresses without a header", func(o *console.Options) {
			o.Auth.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
		}, false},
		{"bad header name", func(o *console.Options) {
			o.Auth.ProxyHeader, o.Auth.TrustedProxies = "X User", []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}
		}, false},
		{"absolute shorter than idle", func(o *console.Options) { o.Auth.IdleTimeout, o.Auth.MaxSession = time.Hour, time.Minute }, false},
		{"certificate without key", func(o *console.Options) { o.CertFile = "c.pem" }, false},
	} {
		o := console.DefaultOptions()
		o.NameServers = []string{"127.0.0.1:9876"}
		o.Auth.UsersFile = "users"
		tc.mod(&o)
		if err := o.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func readAll(b *strings.Builder, resp *http.Response) (int64, error) { return io.Copy(b, resp.Body) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func decode(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// TestOrderReconcile: the order view shows the runs a service reports at
// GET /v1/reconcile/runs (here a stand-in serving the payment service's
// answer shape), and the error of a service that fails.
func TestOrderReconcile(t *testing.T) {
	ns := nameservertest.Start(t)
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/reconcile/runs" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"audit":[{"action":"refund"}],"runs":[{"id":7,"job":"payments","status":"done","discrepancies":{"missing_refund":1}}]}`))
	}))
	defer svc.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "database down", http.StatusServiceUnavailable)
	}))
	defer broken.Close()
	o := console.DefaultOptions()
	o.ListenAddr, o.NameServers, o.Logger, o.SampleInterval = "127.0.0.1:0", []string{ns}, quiet(), -1
	o.ReconcileURLs = []string{"payment=" + svc.URL, broken.URL}
	authOptions(t, &o)
	s := startServer(t, o)
	f := &fixture{base: "http://" + s.Addr()}
	f.client = signIn(t, f.base, "viewer")
	var v console.OrderView
	if code := f.getJSON(t, "/api/orders/ord-9", &v); code != 200 || len(v.Reconcile) != 2 {
		t.Fatalf("order: %d %+v", code, v)
	}
	if r := v.Reconcile[0]; len(r.Runs) != 1 || r.Runs[0]["status"] != "done" || r.Error != "" {
		t.Fatalf("runs: %+v", r)
	}
	if r := v.Reconcile[0]; r.Service != "payment service" {
		t.Fatalf("service name: %+v", r)
	}
	if r := v.Reconcile[1]; r.Service != "service 2" || !strings.Contains(r.Error, "503") || !strings.Contains(r.Error, "database down") {
		t.Fatalf("broken service: %+v", r)
	}
	code, body := f.get(t, "/orders/ord-9")
	if code != 200 || !strings.Contains(body, "missing_refund") || !strings.Contains(body, "database down") ||
		!strings.Contains(body, "<th>Run</th><th>Job</th><th>Status</th><th>Discrepancies by class</th>") || !strings.Contains(body, "payment service") {
		t.Fatalf("order page: %d\n%s", code, body)
	}
	// The page names services; it never shows their addresses.
	for _, u := range []string{svc.URL, broken.URL, strings.TrimPrefix(svc.URL, "http://"), strings.TrimPrefix(broken.URL, "http://")} {
		if strings.Contains(body, u) {
			t.Fatalf("order page shows the address %s:\n%s", u, body)
		}
	}
}

// TestOrdersList: the Orders page lists what the order service's GET
// /v1/orders answers (here a stand-in with its JSON shape), passes the
// filters on, refuses bad ones with 400, and reports a failing service.
func TestOrdersList(t *testing.T) {
	ns := nameservertest.Start(t)
	var got []string
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.RawQuery)
		if r.URL.Query().Get("user_id") == "u-broken" {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"code":503,"reason":"ORDER_UNAVAILABLE","message":"order service unavailable"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"orders":[{"id":"01a23265-fa26-7226-91a4-67bb24b74b5a","userId":"u-alice","status":"ORDER_STATUS_PAID",` +
			`"totalAmount":"240","seq":"2","createdAt":"2026-12-01T16:17:53.702Z"}],"nextPageToken":"01a23265-fa26-7226-91a4-67bb24b74b5a"}`))
	}))
	defer svc.Close()
	o := console.DefaultOptions()
	o.ListenAddr, o.NameServers, o.Logger, o.SampleInterval, o.OrderURL = "127.0.0.1:0", []string{ns}, quiet(), -1, svc.URL
	authOptions(t, &o)
	s := startServer(t, o)
	f := &fixture{base: "http://" + s.Addr()}
	f.client = signIn(t, f.base, "viewer")
	var v console.OrdersView
	if code := f.getJSON(t, "/api/orders?status=paid&user=u-alice", &v); code != 200 || len(v.Orders) != 1 ||
		v.Orders[0].Status != "PAID" || v.Orders[0].Total != 240 || v.Next == "" || v.Orders[0].CreatedAt.IsZero() {
		t.Fatalf("orders: %d %+v", code, v)
	}
	if len(got) != 1 || got[0] != "limit=20&status=PAID&user_id=u-alice" {
		t.Fatalf("order service asked %q", got)
	}
	code, body := f.get(t, "/orders")
	if code != 200 || !strings.Contains(body, `href="/orders/01a23265-fa26-7226-91a4-67bb24b74b5a"`) ||
		!strings.Contains(body, "2026-12-01 16:17:53") || !strings.Contains(body, "Older orders") {
		t.Fatalf("orders page: %d\n%s", code, body)
	}
	for _, q := range []string{"status=SHIPPED", "user=" + strings.Repeat("u", 65)} {
		if code, body := f.get(t, "/api/orders?"+q); code != 400 {
			t.Errorf("%s: %d %s, want 400", q, code, body)
		}
	}
	if code, body := f.get(t, "/orders?user=u-broken"); code != 502 || !strings.Contains(body, "ORDER_UNAVAILABLE") ||
		strings.Contains(body, strings.TrimPrefix(svc.URL, "http://")) {
		t.Fatalf("failing order service: %d\n%s", code, body)
	}
}
