package broker_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func TestMetricsEndpoint(t *testing.T) {
	ns := nameservertest.Start(t)
	b := brokertest.Start(t, ns, func(o *broker.Options) { o.MetricsListenAddr = "127.0.0.1:0" })
	if err := createTopic(b.Addr(), "MetricsTopic", 1); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ns, "MetricsTopic")
	p := newProducer(t, ns, "metricspg")
	for i := 0; i < 3; i++ {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage("MetricsTopic", []byte("m"))); err != nil {
			t.Fatal(err)
		}
	}
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	uh := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "metricscg", Topic: "MetricsTopic", QueueID: 0, CommitOffset: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := cl.Invoke(ctx, b.Addr(), protocol.NewRequest(protocol.UpdateConsumerOffset, uh.Encode(), nil)); err != nil {
		t.Fatal(err)
	}
	scrape := func() string {
		resp, err := http.Get("http://" + b.MetricsAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	waitFor(t, "lag visible", 5*time.Second, func() bool {
		return strings.Contains(scrape(), `tide_broker_consumer_lag_messages{group="metricscg",topic="MetricsTopic"} 2`)
	})
	body := scrape()
	for _, want := range []string{
		`tide_broker_messages_in_total{topic="MetricsTopic"} 3`,
		`tide_broker_request_duration_seconds_count{request="SEND_MESSAGE",response="SUCCESS"} 3`,
		`tide_broker_store_messages_total`,
		`tide_broker_transaction_half_pending 0`,
		`tide_broker_timer_lateness_seconds_bucket`,
		`tide_broker_delay_level_pending{level="1"}`,
		`tide_broker_store_append_seconds_count{topic="MetricsTopic"} 3`,
		`tide_broker_disk_total_bytes`,
		`tide_broker_disk_used_ratio`,
		`tide_broker_transaction_half_by_age{age="lt_1m"} 0`,
		`tide_broker_longpoll_held_requests`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// GET_BROKER_RUNTIME_INFO (28) answers the totals consoles sample.
	rt, err := cl.Invoke(ctx, b.Addr(), protocol.NewRequest(28, nil, nil))
	if err != nil || rt.Code != protocol.Success {
		t.Fatalf("runtime info: %v %+v", err, rt)
	}
	kv, err := protocol.DecodeKVTable(rt.Body)
	if err != nil || kv.Table["msgPutTotal"] != "3" || kv.Table["brokerRole"] != "ASYNC_MASTER" || kv.Table["commitLogDiskRatio"] == "" {
		t.Fatalf("runtime info: %v %+v", err, kv)
	}
	resp, err := http.Get("http://" + b.MetricsAddr() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", err, resp)
	}
	resp.Body.Close()
}

// TestPprofOnlyWhenEnabled: /debug/pprof is served on the metrics port
// with pprofEnable and not without it.
func TestPprofOnlyWhenEnabled(t *testing.T) {
	ns := nameservertest.Start(t)
	for _, on := range []bool{false, true} {
		b := brokertest.Start(t, ns, func(o *broker.Options) { o.MetricsListenAddr, o.PprofEnable = "127.0.0.1:0", on })
		resp, err := http.Get("http://" + b.MetricsAddr() + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		served := resp.StatusCode == http.StatusOK && strings.Contains(string(body), "goroutine profile")
		if served != on {
			t.Errorf("pprofEnable=%v: status %d, profile served %v", on, resp.StatusCode, served)
		}
	}
}
