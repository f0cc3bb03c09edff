package controller

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// metrics are the node's Prometheus metrics, in a registry of its own.
// Elections and requests are counted as they happen; the replicated
// state (epochs, SyncStateSet sizes) is read at scrape time, so every
// node reports it and followers show how far they lag.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	elections *prometheus.CounterVec
	notifies  *prometheus.CounterVec
	isLeader  prometheus.Gauge
}

var (
	descMasterEpoch = prometheus.NewDesc("tide_controller_master_epoch", "Master epoch of a broker group.",
		[]string{"broker_name"}, nil)
	descSSEEpoch = prometheus.NewDesc("tide_controller_sync_state_set_epoch", "SyncStateSet epoch of a broker group.",
		[]string{"broker_name"}, nil)
	descSSSize = prometheus.NewDesc("tide_controller_sync_state_set_size", "Replicas in the SyncStateSet of a broker group.",
		[]string{"broker_name"}, nil)
	descHasMaster = prometheus.NewDesc("tide_controller_group_has_master", "1 if the broker group has a master, else 0.",
		[]string{"broker_name"}, nil)
	descReplicas = prometheus.NewDesc("tide_controller_replicas", "Registered replicas of a broker group.",
		[]string{"broker_name"}, nil)
)

func newMetrics(c *Controller) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tide", Subsystem: "controller",
			Name: "requests_total", Help: "Requests served, by request code and response code."}, []string{"request", "response"}),
		elections: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tide", Subsystem: "controller",
			Name: "elections_total", Help: "Elections applied by this node as leader, by trigger (broker, admin, controller) and outcome (elected, no_master, refused)."},
			[]string{"trigger", "outcome"}),
		notifies: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tide", Subsystem: "controller",
			Name: "role_notifications_total", Help: "NOTIFY_BROKER_ROLE_CHANGED sent to brokers, by the broker's response code (TRANSPORT_ERROR: no answer)."},
			[]string{"response"}),
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tide", Subsystem: "controller",
			Name: "is_leader", Help: "1 while this node is the Raft leader."}),
	}
	m.reg.MustRegister(m.requests, m.elections, m.notifies, m.isLeader, &collector{c: c},
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) election(trigger, outcome string) {
	m.elections.WithLabelValues(trigger, outcome).Inc()
}

// notified counts one role notification by the broker's answer.
func (m *metrics) notified(resp *protocol.Command, err error) {
	outcome := "TRANSPORT_ERROR"
	if err == nil {
		outcome = protocol.CodeName(resp.Code)
	}
	m.notifies.WithLabelValues(outcome).Inc()
}

func (m *metrics) leader(is bool) {
	v := 0.0
	if is {
		v = 1
	}
	m.isLeader.Set(v)
}

func (m *metrics) instrument(code int16, h remoting.HandlerFunc) remoting.HandlerFunc {
	name := strconv.Itoa(int(code))
	return func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		resp := h(ctx, c, req)
		outcome := "NONE"
		if resp != nil {
			outcome = protocol.CodeName(resp.Code)
		}
		m.requests.WithLabelValues(name, outcome).Inc()
		return resp
	}
}

type collector struct{ c *Controller }

func (x *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMasterEpoch, descSSEEpoch, descSSSize, descHasMaster, descReplicas} {
		ch <- d
	}
}

func (x *collector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range x.c.fsm.groups() {
		has := 0.0
		if g.HasMaster() {
			has = 1
		}
		ch <- prometheus.MustNewConstMetric(descMasterEpoch, prometheus.GaugeValue, float64(g.MasterEpoch), g.BrokerName)
		ch <- prometheus.MustNewConstMetric(descSSEEpoch, prometheus.GaugeValue, float64(g.SyncStateSetEpoch), g.BrokerName)
		ch <- prometheus.MustNewConstMetric(descSSSize, prometheus.GaugeValue, float64(len(g.SyncStateSet)), g.BrokerName)
		ch <- prometheus.MustNewConstMetric(descHasMaster, prometheus.GaugeValue, has, g.BrokerName)
		ch <- prometheus.MustNewConstMetric(descReplicas, prometheus.GaugeValue, float64(len(g.Replicas)), g.BrokerName)
	}
}

// serveMetrics serves /metrics and /healthz when MetricsListenAddr is set.
func (c *Controller) serveMetrics(ctx context.Context) error {
	if c.opts.MetricsListenAddr == "" {
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", c.opts.MetricsListenAddr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(c.metrics.reg, promhttp.HandlerOpts{Registry: c.metrics.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	c.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	c.metricsLn = ln
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := c.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.log.Error("controller: metrics server", "err", err)
		}
	}()
	return nil
}

// MetricsAddr is the address /metrics is served on ("" when off).
func (c *Controller) MetricsAddr() string {
	if c.metricsLn == nil {
		return ""
	}
	return c.metricsLn.Addr().String()
}

func millis(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
