package controller_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/controllerclient"
)

// scrape returns the /metrics text of a broker.
func scrape(t *testing.T, b *broker.Broker) string {
	t.Helper()
	resp, err := http.Get("http://" + b.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// TestBrokerControllerModeMetrics: the brokers' Prometheus metrics of
// controller mode (issue 19's Operations line; the controller's own are
// TestMetrics): the master reports itself master with the epoch and the
// SyncStateSet size the controller committed, and its slave's replication
// lag; the slave reports 0; after the master stops, the elected slave
// reports master, the new epoch and a SyncStateSet of itself.
func TestBrokerControllerModeMetrics(t *testing.T) {
	ctl := startController(t)
	ns := nameservertest.Start(t)
	opts := func(o *broker.Options) {
		syncMaster(ctl, "bm", t.TempDir(), 30000, 3000)(o)
		o.MetricsListenAddr = "127.0.0.1:0"
	}
	a := brokertest.Start(t, ns, opts)
	b := brokertest.Start(t, ns, opts)
	rc := remoting.NewClient(remoting.ClientOptions{})
	defer rc.Close()
	cli := controllerclient.New(rc, []string{ctl})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitUntil(t, 20*time.Second, "B in the SyncStateSet", func() bool {
		_, set := syncStateSet(ctx, cli, "bm")
		return slices.Equal(set, []int64{1, 2})
	})
	for range 10 {
		if _, err := sendRaw(rc, a.Addr(), "bm-topic"); err != nil {
			t.Fatal(err)
		}
	}
	has := func(body string, want ...string) bool {
		for _, w := range want {
			if !strings.Contains(body, w+"\n") {
				return false
			}
		}
		return true
	}
	var body string
	waitUntil(t, 10*time.Second, "the master's controller-mode metrics", func() bool {
		body = scrape(t, a)
		return has(body, "tide_broker_controller_mode_master 1", "tide_broker_controller_mode_master_epoch 1",
			"tide_broker_controller_mode_sync_state_set_size 2") && strings.Contains(body, "tide_broker_replication_lag_bytes{slave=")
	})
	if body = scrape(t, b); !has(body, "tide_broker_controller_mode_master 0", "tide_broker_controller_mode_master_epoch 1") {
		t.Fatalf("the slave's metrics:\n%s", grepMetrics(body))
	}

	if err := a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "the elected slave's metrics", func() bool {
		body = scrape(t, b)
		return has(body, "tide_broker_controller_mode_master 1", "tide_broker_controller_mode_master_epoch 2",
			"tide_broker_controller_mode_sync_state_set_size 1")
	})
}

// grepMetrics keeps the controller-mode and replication lines of a scrape.
func grepMetrics(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "tide_broker_controller_mode") || strings.HasPrefix(l, "tide_broker_replication") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
