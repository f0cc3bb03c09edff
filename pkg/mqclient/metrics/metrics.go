// Package metrics exports Prometheus metrics for package mqclient: a
// consumer Middleware and a producer SendInterceptor. Metric names start
// with "mqclient_"; labels are topic, group and result ("ok" or "error").
package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Metrics holds the collectors. Create one per registry with New; it is
// safe for concurrent use by any number of clients.
type Metrics struct {
	handled     *prometheus.CounterVec
	handleTime  *prometheus.HistogramVec
	reconsumed  *prometheus.CounterVec
	sent        *prometheus.CounterVec
	sendLatency *prometheus.HistogramVec

	mu    sync.Mutex
	start map[*mqclient.Message]time.Time
}

// New registers the collectors with reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mqclient_consumed_total",
			Help: "Messages handled by consumers, by result."}, []string{"topic", "group", "result"}),
		handleTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mqclient_handle_seconds",
			Help: "Handler duration.", Buckets: prometheus.DefBuckets}, []string{"topic", "group"}),
		reconsumed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mqclient_redelivered_total",
			Help: "Deliveries of messages that failed before (ReconsumeTimes > 0)."}, []string{"topic", "group"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mqclient_sent_total",
			Help: "Messages sent by producers, by result."}, []string{"topic", "result"}),
		sendLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mqclient_send_seconds",
			Help: "Send duration, retries included.", Buckets: prometheus.DefBuckets}, []string{"topic"}),
		start: map[*mqclient.Message]time.Time{},
	}
	for _, c := range []prometheus.Collector{m.handled, m.handleTime, m.reconsumed, m.sent, m.sendLatency} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// Middleware records every handler call of group.
func (m *Metrics) Middleware(group string) mqclient.Middleware {
	return func(h mqclient.Handler) mqclient.Handler {
		return func(ctx context.Context, msg *mqclient.MessageExt) error {
			start := time.Now()
			err := h(ctx, msg)
			m.handleTime.WithLabelValues(msg.Topic, group).Observe(time.Since(start).Seconds())
			m.handled.WithLabelValues(msg.Topic, group, result(err)).Inc()
			if msg.ReconsumeTimes > 0 {
				m.reconsumed.WithLabelValues(msg.Topic, group).Inc()
			}
			return err
		}
	}
}

// SendInterceptor returns an interceptor recording sends and their
// latency (from BeforeSend to AfterSend).
func (m *Metrics) SendInterceptor() mqclient.SendInterceptor { return interceptor{m} }

type interceptor struct{ m *Metrics }

func (i interceptor) BeforeSend(_ context.Context, msg *mqclient.Message) error {
	i.m.mu.Lock()
	i.m.start[msg] = time.Now()
	i.m.mu.Unlock()
	return nil
}

func (i interceptor) AfterSend(_ context.Context, msg *mqclient.Message, _ *mqclient.SendResult, err error) {
	i.m.mu.Lock()
	start, ok := i.m.start[msg]
	delete(i.m.start, msg)
	i.m.mu.Unlock()
	if ok {
		i.m.sendLatency.WithLabelValues(msg.Topic).Observe(time.Since(start).Seconds())
	}
	i.m.sent.WithLabelValues(msg.Topic, result(err)).Inc()
}
