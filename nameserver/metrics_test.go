package nameserver_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/nameserver"
)

func TestMetricsEndpoint(t *testing.T) {
	o := nameserver.DefaultOptions()
	o.ListenAddr = "127.0.0.1:0"
	o.MetricsListenAddr = "127.0.0.1:0"
	o.Logger = quietLogger()
	ns, err := nameserver.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ns.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	cl := newClient(t)
	register(t, cl, ns.Addr(), broker{cluster: "c1", name: "broker-a", addr: "10.0.0.1:10911"}, false, topicConf("orders", 4))
	register(t, cl, ns.Addr(), broker{cluster: "c1", name: "broker-a", addr: "10.0.0.2:10911", id: 1}, false)
	route(t, cl, ns.Addr(), "orders")

	resp, err := http.Get("http://" + ns.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`tide_nameserver_brokers{cluster="c1",role="master"} 1`,
		`tide_nameserver_brokers{cluster="c1",role="slave"} 1`,
		`tide_nameserver_topics 1`,
		`tide_nameserver_connections 1`,
		`tide_nameserver_broker_names_without_master 0`,
		`tide_nameserver_request_duration_seconds_count{request="REGISTER_BROKER",response="SUCCESS"} 2`,
		`tide_nameserver_request_duration_seconds_count{request="GET_ROUTEINFO_BY_TOPIC",response="SUCCESS"} 1`,
		`tide_nameserver_broker_last_register_age_seconds{addr="10.0.0.1:10911"}`,
		`tide_nameserver_brokers_expired_total 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
	resp, err = http.Get("http://" + ns.MetricsAddr() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", err, resp)
	}
	resp.Body.Close()
}
