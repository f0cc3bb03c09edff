package nameserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// metrics are the NameServer's Prometheus metrics, in a registry of its
// own (no globals). Requests are observed inline; the route table is read
// at scrape time by the collector.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.HistogramVec // by request code name and response code name
	expired  prometheus.Counter
}

func newMetrics(ns *NameServer) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "tide", Subsystem: "nameserver", Name: "request_duration_seconds",
			Help:    "Time to answer a request, by request code and response code.",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25},
		}, []string{"request", "response"}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tide", Subsystem: "nameserver", Name: "brokers_expired_total",
			Help: "Broker addresses removed by the expiry scan after going silent."}),
	}
	m.reg.MustRegister(m.requests, m.expired, &collector{ns: ns},
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// requestNames maps the NameServer's request codes to label values.
var requestNames = map[int16]string{
	protocol.RegisterBroker: "REGISTER_BROKER", protocol.UnregisterBroker: "UNREGISTER_BROKER",
	protocol.QueryDataVersion: "QUERY_DATA_VERSION", protocol.GetRouteInfoByTopic: "GET_ROUTEINFO_BY_TOPIC",
	protocol.GetBrokerClusterInfo: "GET_BROKER_CLUSTER_INFO", protocol.GetAllTopicListFromNameServer: "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
	protocol.GetTopicsByCluster: "GET_TOPICS_BY_CLUSTER", protocol.DeleteTopicInNameServer: "DELETE_TOPIC_IN_NAMESRV",
	protocol.PutKVConfig: "PUT_KV_CONFIG", protocol.GetKVConfig: "GET_KV_CONFIG", protocol.DeleteKVConfig: "DELETE_KV_CONFIG",
	protocol.GetKVListByNamespace: "GET_KVLIST_BY_NAMESPACE",
}

// instrument wraps a handler with the request duration metric.
func (m *metrics) instrument(code int16, h remoting.HandlerFunc) remoting.HandlerFunc {
	name, ok := requestNames[code]
	if !ok {
		name = "OTHER"
	}
	return func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		start := time.Now()
		resp := h(ctx, c, req)
		outcome := "NONE"
		if resp != nil {
			outcome = protocol.CodeName(resp.Code)
		}
		m.requests.WithLabelValues(name, outcome).Observe(time.Since(start).Seconds())
		return resp
	}
}

var (
	descBrokers = prometheus.NewDesc("tide_nameserver_brokers", "Registered broker processes, by cluster and role (master, slave).",
		[]string{"cluster", "role"}, nil)
	descTopics      = prometheus.NewDesc("tide_nameserver_topics", "Topics with a route.", nil, nil)
	descConns       = prometheus.NewDesc("tide_nameserver_connections", "Open client and broker connections.", nil, nil)
	descLastRegAge  = prometheus.NewDesc("tide_nameserver_broker_last_register_age_seconds", "Time since a broker address last registered.", []string{"addr"}, nil)
	descBrokerNames = prometheus.NewDesc("tide_nameserver_broker_names_without_master", "Broker names (replica sets) that have no registered master.", nil, nil)
)

// collector reads the route table at scrape time.
type collector struct{ ns *NameServer }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBrokers, descTopics, descConns, descLastRegAge, descBrokerNames} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ns := c.ns
	ci := ns.routes.ClusterInfo()
	type key struct{ cluster, role string }
	counts := map[key]int{}
	noMaster := 0
	for _, bd := range ci.BrokerAddrTable {
		if _, ok := bd.BrokerAddrs[protocol.MasterID]; !ok {
			noMaster++
		}
		for id := range bd.BrokerAddrs {
			role := "slave"
			if id == protocol.MasterID {
				role = "master"
			}
			counts[key{bd.Cluster, role}]++
		}
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(descBrokers, prometheus.GaugeValue, float64(n), k.cluster, k.role)
	}
	ch <- prometheus.MustNewConstMetric(descBrokerNames, prometheus.GaugeValue, float64(noMaster))
	ch <- prometheus.MustNewConstMetric(descTopics, prometheus.GaugeValue, float64(len(ns.routes.Topics())))
	ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(len(ns.srv.Conns())))
	now := ns.opts.Now()
	for _, lb := range ns.routes.LiveBrokers() {
		ch <- prometheus.MustNewConstMetric(descLastRegAge, prometheus.GaugeValue, now.Sub(lb.LastUpdate).Seconds(), lb.Addr)
	}
}

// serveMetrics serves /metrics and /healthz on Options.MetricsListenAddr
// when it is set. Called by Start with ns.mu held.
func (ns *NameServer) serveMetrics(ctx context.Context) error {
	if ns.opts.MetricsListenAddr == "" {
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", ns.opts.MetricsListenAddr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(ns.metrics.reg, promhttp.HandlerOpts{Registry: ns.metrics.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	ns.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ns.metricsLn = ln
	ns.wg.Add(1)
	go func() {
		defer ns.wg.Done()
		if err := ns.metricsSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			ns.log.Error("nameserver: metrics server", "err", err)
		}
	}()
	ns.log.Info("metrics served", "addr", ln.Addr().String())
	return nil
}

// MetricsAddr returns the address /metrics is served on ("" when off or
// before Start).
func (ns *NameServer) MetricsAddr() string {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.metricsLn == nil {
		return ""
	}
	return ns.metricsLn.Addr().String()
}
