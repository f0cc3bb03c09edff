package broker

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestMetricCacheSameSeries: the cached children are the vectors' own
// series (same names and labels), created on first use only.
func TestMetricCacheSameSeries(t *testing.T) {
	m := newMetrics(&Broker{})
	hdr := strings.Repeat("x", 8) + "orders"
	topic := hdr[8:] // a slice of a larger string, as a header's topic is
	m.byTopic.msgsIn.get(topic).Add(2)
	m.byTopic.msgsIn.get("orders").Add(3)
	if got := testutil.ToFloat64(m.msgsIn.WithLabelValues("orders")); got != 5 {
		t.Fatalf("messages_in_total{topic=orders} = %v, want 5", got)
	}
	if n := testutil.CollectAndCount(m.msgsOut); n != 0 {
		t.Fatalf("messages_out_total has %d series before any pull, want 0", n)
	}
	req := &protocol.Command{Code: protocol.SendMessageV2}
	ok := protocol.NewResponse(req, protocol.Success, "")
	busy := protocol.NewResponse(req, protocol.SystemBusy, "")
	m.request(req.Code, ok).Observe(0.001)
	m.request(req.Code, ok).Observe(0.001)
	m.request(req.Code, busy).Observe(0.001)
	m.request(req.Code, nil).Observe(0.001)
	m.request(protocol.PullMessage, nil).Observe(0.001)
	m.request(-7, &protocol.Command{Code: -1}).Observe(0.001) // neither code known: OTHER, UNKNOWN
	for _, want := range []struct {
		request, outcome string
		n                uint64
	}{
		{"SEND_MESSAGE_V2", protocol.CodeName(protocol.Success), 2}, {"SEND_MESSAGE_V2", protocol.CodeName(protocol.SystemBusy), 1},
		{"SEND_MESSAGE_V2", "HELD", 1}, {"PULL_MESSAGE", "HELD", 1}, {"OTHER", protocol.CodeName(-1), 1},
	} {
		h := m.requests.WithLabelValues(want.request, want.outcome).(prometheus.Histogram)
		if got := histogramCount(t, h); got != want.n {
			t.Errorf("request_duration_seconds{%s,%s} count %d, want %d", want.request, want.outcome, got, want.n)
		}
	}
	if n := testutil.CollectAndCount(m.requests); n != 5 {
		t.Errorf("request_duration_seconds has %d series, want 5", n)
	}
}

func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var d dto.Metric
	if err := h.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetHistogram().GetSampleCount()
}
