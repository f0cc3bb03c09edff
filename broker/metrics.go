package broker

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/tidemq/tide/broker/internal/timer"
	"github.com/tidemq/tide/broker/internal/topic"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// metrics are the broker's Prometheus metrics. Request and message
// metrics are observed inline; everything read from the store and the
// services is collected at scrape time by collector, so a scrape costs
// nothing between scrapes. Each broker has its own registry (no globals).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.HistogramVec // by request code name and response code name
	msgsIn   *prometheus.CounterVec   // by topic
	msgsOut  *prometheus.CounterVec   // by topic (messages returned by pulls)
	bytesIn  *prometheus.CounterVec
	// appendTime is the store append latency by topic (commit log write
	// plus, for SYNC_FLUSH, the wait for the flush), observed by send.go.
	appendTime *prometheus.HistogramVec
	// notifications counts NOTIFY_CONSUMER_IDS_CHANGED by result: sent,
	// dropped (the member took nothing in time) or failed (connection gone).
	notifications *prometheus.CounterVec
	boot          time.Time
	// The children in use of the vectors above (metrics_cache.go).
	byTopic  topicMetrics
	reqCache *childCache[uint64, prometheus.Observer] // by requestKey
}

// observeAppend records one store append of topic that began at start.
func (m *metrics) observeAppend(topic string, start time.Time) {
	m.byTopic.appendTime.get(topic).Observe(time.Since(start).Seconds())
}

func newMetrics(b *Broker) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "tide", Subsystem: "broker", Name: "request_duration_seconds",
			Help:    "Time to answer a request, by request code and response code (held pulls are measured until they are parked).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"request", "response"}),
		msgsIn: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tide", Subsystem: "broker", Name: "messages_in_total",
			Help: "Messages stored from producers, by topic."}, []string{"topic"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tide", Subsystem: "broker", Name: "bytes_in_total",
			Help: "Message body bytes stored from producers, by topic."}, []string{"topic"}),
		msgsOut: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tide", Subsystem: "broker", Name: "messages_out_total",
			Help: "Messages returned to consumers by pulls, by topic."}, []string{"topic"}),
		appendTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "tide", Subsystem: "broker", Name: "store_append_seconds",
			Help:    "Time to append a send's messages to the store (including the flush wait under SYNC_FLUSH), by topic.",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"topic"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tide", Subsystem: "broker", Name: "consumer_notifications_total",
			Help: "NOTIFY_CONSUMER_IDS_CHANGED sent to group members, by result (sent, dropped: the member took nothing within the notify timeout, failed: its connection is gone)."},
			[]string{"result"}),
		boot: time.Now(),
	}
	m.byTopic = newTopicMetrics(m)
	m.reqCache = newRequestCache(m.requests)
	m.reg.MustRegister(m.requests, m.msgsIn, m.msgsOut, m.bytesIn, m.appendTime, m.notifications, &collector{b: b},
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// requestNames maps request codes to metric label values.
var requestNames = map[int16]string{
	protocol.SendMessage: "SEND_MESSAGE", protocol.SendMessageV2: "SEND_MESSAGE_V2", protocol.SendBatchMessage: "SEND_BATCH_MESSAGE",
	protocol.SendReplyMessage: "SEND_REPLY_MESSAGE", protocol.SendReplyMessageV2: "SEND_REPLY_MESSAGE_V2", protocol.PullMessage: "PULL_MESSAGE",
	protocol.HeartBeat: "HEART_BEAT", protocol.QueryConsumerOffset: "QUERY_CONSUMER_OFFSET", protocol.UpdateConsumerOffset: "UPDATE_CONSUMER_OFFSET",
	protocol.ConsumerSendMsgBack: "CONSUMER_SEND_MSG_BACK", protocol.EndTransaction: "END_TRANSACTION", protocol.LockBatchMQ: "LOCK_BATCH_MQ",
	protocol.UnlockBatchMQ: "UNLOCK_BATCH_MQ", protocol.GetConsumerListByGroup: "GET_CONSUMER_LIST_BY_GROUP",
}

func requestName(code int16) string {
	if n, ok := requestNames[code]; ok {
		return n
	}
	return "OTHER"
}

// instrument wraps a handler with the request duration metric.
func (b *Broker) instrument(h remoting.HandlerFunc) remoting.HandlerFunc {
	return func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		start := time.Now()
		resp := h(ctx, c, req)
		b.metrics.request(req.Code, resp).Observe(time.Since(start).Seconds())
		return resp
	}
}

// instrumentInline is instrument for an inline attempt: a declined
// request is observed by the handler that serves it.
func (b *Broker) instrumentInline(h remoting.InlineFunc) remoting.InlineFunc {
	return func(ctx context.Context, c *remoting.Conn, req *protocol.Command) (*protocol.Command, bool) {
		start := time.Now()
		resp, served := h(ctx, c, req)
		if !served {
			return nil, false
		}
		b.metrics.request(req.Code, resp).Observe(time.Since(start).Seconds())
		return resp, true
	}
}

// serveMetrics serves /metrics and /healthz on metricsPromExporterPort
// (RocketMQ 5's key) when it is set.
func (b *Broker) serveMetrics() error {
	if b.opts.MetricsPromExporterPort <= 0 && b.opts.MetricsListenAddr == "" {
		return nil
	}
	addr := b.opts.MetricsListenAddr
	if addr == "" {
		addr = net.JoinHostPort(b.opts.ListenAddr, strconv.Itoa(b.opts.MetricsPromExporterPort))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(b.metrics.reg, promhttp.HandlerOpts{Registry: b.metrics.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if b.store.DiskFull() {
			http.Error(w, "disk nearly full: writes refused", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	if b.opts.PprofEnable {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	}
	b.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	b.metricsAddr = ln.Addr().String()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := b.metricsSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.log.Error("metrics server", "err", err)
		}
	}()
	b.log.Info("metrics served", "addr", b.metricsAddr)
	return nil
}

// MetricsAddr returns the address /metrics is served on ("" when off).
func (b *Broker) MetricsAddr() string { return b.metricsAddr }

// collector reads the store and services at scrape time.
type collector struct{ b *Broker }

var (
	descStoreAppends      = desc("store_appends_total", "Commit log append calls (a batch counts once).")
	descStoreMessages     = desc("store_messages_total", "Messages appended to the commit log.")
	descStoreFlushes      = desc("store_flushes_total", "Commit log fdatasync rounds.")
	descStoreFlushSeconds = desc("store_flush_seconds_total", "Time spent in commit log fdatasync.")
	descStoreCorrupt      = desc("store_corrupt_records_total", "Records or consume-queue units found invalid on read and skipped.")
	descStoreMaxOffset    = desc("store_commitlog_max_offset_bytes", "End of the commit log.")
	descStoreMinOffset    = desc("store_commitlog_min_offset_bytes", "Start of the commit log still on disk.")
	descDiskFull          = desc("store_disk_full", "1 when writes are refused because the disk is nearly full.")
	descDiskTotal         = desc("disk_total_bytes", "Size of the file system holding the store (storePathRootDir).")
	descDiskFree          = desc("disk_free_bytes", "Bytes available to the broker on the file system holding the store.")
	descDiskUsed          = desc("disk_used_ratio", "Used fraction of the file system holding the store, as df counts it (0..1).")
	descHeld              = desc("longpoll_held_requests", "Pull requests held waiting for messages.")
	descHeldRefused       = desc("longpoll_refused_total", "Long-polling pulls answered SYSTEM_BUSY at once because maxHeldPullRequests (limit=broker) or maxHeldPullRequestsPerConn (limit=connection) was reached.", "limit")
	descConns             = desc("connections", "Open client connections.")
	descLag               = desc("consumer_lag_messages", "Messages not yet consumed by a group (broker max offset minus committed offset).", "group", "topic")
	descDLQ               = desc("dlq_messages", "Messages in a group's dead letter queue.", "group")
	descHalfPending       = desc("transaction_half_pending", "Half messages waiting for a decision.")
	descHalfParked        = desc("transaction_half_parked", "Half messages parked after the maximum number of checks.")
	descHalfOldest        = desc("transaction_half_oldest_age_seconds", "Age of the oldest pending half message.")
	descHalfByAge         = desc("transaction_half_by_age", "Pending half messages by age bucket (lt_1m, 1m_10m, 10m_1h, gt_1h).", "age")
	descChecks            = desc("transaction_checks_sent_total", "Check-back requests sent to producers.")
	descTxDecisions       = desc("transaction_decisions_total", "Transaction decisions, by outcome.", "outcome")
	descTimersPending     = desc("timers_pending", "Timer messages waiting for their delivery time.")
	descTimersDelivered   = desc("timers_delivered_total", "Timer messages delivered.")
	descTimersRecalled    = desc("timers_recalled_total", "Timer messages recalled before delivery.")
	descTimerLateness     = desc("timer_lateness_seconds", "Delivery lateness of timer messages (never negative: timers never fire early).")
	descDelayPending      = desc("delay_level_pending", "Messages waiting in a delay level.", "level")
	descDelayLateness     = desc("delay_level_max_lateness_seconds", "Largest delivery lateness seen on a delay level.", "level")
	descReplLag           = desc("replication_lag_bytes", "Bytes a slave has not acknowledged yet.", "slave")
	descReplLagTime       = desc("replication_lag_seconds", "Age of the oldest message a slave lacks.", "slave")
	descCtlMaster         = desc("controller_mode_master", "Controller mode: 1 while this broker runs as its group's master.")
	descCtlEpoch          = desc("controller_mode_master_epoch", "Controller mode: the master epoch the controller last named.")
	descCtlSyncSet        = desc("controller_mode_sync_state_set_size", "Controller mode: members of the SyncStateSet the controller committed (master's view), the master included.")
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("tide_broker_"+name, help, labels, nil)
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStoreAppends, descStoreMessages, descStoreFlushes, descStoreFlushSeconds, descStoreCorrupt,
		descStoreMaxOffset, descStoreMinOffset, descDiskFull, descDiskTotal, descDiskFree, descDiskUsed, descHalfByAge, descHeld, descHeldRefused, descConns, descLag, descDLQ, descHalfPending, descHalfParked,
		descHalfOldest, descChecks, descTxDecisions, descTimersPending, descTimersDelivered, descTimersRecalled, descTimerLateness,
		descDelayPending, descDelayLateness, descReplLag, descReplLagTime, descCtlMaster, descCtlEpoch, descCtlSyncSet} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	b := c.b
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	st := b.store.Stats()
	counter(descStoreAppends, float64(st.Appends))
	counter(descStoreMessages, float64(st.Messages))
	counter(descStoreFlushes, float64(st.Flushes))
	counter(descStoreFlushSeconds, st.FlushTime.Seconds())
	counter(descStoreCorrupt, float64(st.CorruptRecords))
	gauge(descStoreMaxOffset, float64(b.store.MaxPhyOffset()))
	gauge(descStoreMinOffset, float64(b.store.MinPhyOffset()))
	full := 0.0
	if b.store.DiskFull() {
		full = 1
	}
	gauge(descDiskFull, full)
	if d, err := diskSpace(b.opts.Store.StorePathRootDir); err == nil {
		gauge(descDiskTotal, float64(d.total))
		gauge(descDiskFree, float64(d.avail))
		gauge(descDiskUsed, d.usedRatio())
	}
	gauge(descHeld, float64(b.polls.Held()))
	refusedTotal, refusedConn := b.polls.Refused()
	counter(descHeldRefused, float64(refusedTotal), "broker")
	counter(descHeldRefused, float64(refusedConn), "connection")
	if b.server != nil {
		gauge(descConns, float64(len(b.server.Conns())))
	}
	// Lag per group and topic from committed offsets.
	for _, t := range b.topics.Names() {
		if strings.HasPrefix(t, topic.DLQPrefix) {
			tc, _ := b.topics.Get(t)
			var n int64
			for q := int32(0); q < tc.ReadQueueNums; q++ {
				n += b.store.MaxOffset(t, q) - b.store.MinOffset(t, q)
			}
			gauge(descDLQ, float64(n), strings.TrimPrefix(t, topic.DLQPrefix))
			continue
		}
		for _, g := range b.offsets.Groups(t) {
			var lag int64
			for q, off := range b.offsets.QueueOffsets(g, t) {
				if d := b.store.MaxOffset(t, q) - off; d > 0 {
					lag += d
				}
			}
			gauge(descLag, float64(lag), g, t)
		}
	}
	if tx := b.tx(); tx != nil {
		ts := tx.Stats()
		gauge(descHalfPending, float64(ts.Pending))
		gauge(descHalfParked, float64(ts.Parked))
		counter(descChecks, float64(ts.ChecksSent))
		counter(descTxDecisions, float64(ts.Commits), "commit")
		counter(descTxDecisions, float64(ts.Rollbacks), "rollback")
		counter(descTxDecisions, float64(ts.Duplicates), "duplicate")
		counter(descTxDecisions, float64(ts.Conflicts), "conflict")
		var oldest time.Duration
		var byAge [len(halfAgeBuckets)]int
		for _, h := range tx.List() {
			age := time.Since(h.StoreTime)
			oldest = max(oldest, age)
			i := 0
			for i < len(halfAgeBuckets)-1 && age >= halfAgeBuckets[i].below {
				i++
			}
			byAge[i]++
		}
		gauge(descHalfOldest, oldest.Seconds())
		for i, bk := range halfAgeBuckets {
			gauge(descHalfByAge, float64(byAge[i]), bk.label)
		}
	}
	if t := b.timers(); t != nil {
		ts := t.Stats()
		gauge(descTimersPending, float64(ts.Pending))
		counter(descTimersDelivered, float64(ts.Delivered))
		counter(descTimersRecalled, float64(ts.Recalled))
		buckets := map[float64]uint64{}
		for _, bk := range ts.Lateness.Buckets {
			if bk.Le != timer.Inf {
				buckets[bk.Le.Seconds()] = uint64(bk.Count)
			}
		}
		ch <- prometheus.MustNewConstHistogram(descTimerLateness, uint64(ts.Lateness.Count), ts.Lateness.Sum.Seconds(), buckets)
	}
	if s := b.sched(); s != nil {
		for _, l := range s.Stats() {
			lv := strconv.Itoa(l.Level)
			gauge(descDelayPending, float64(l.Pending), lv)
			gauge(descDelayLateness, l.MaxLateness.Seconds(), lv)
		}
	}
	if srv := b.haServer(); srv != nil {
		for _, s := range srv.Status().Slaves {
			gauge(descReplLag, float64(s.LagBytes), s.Addr)
			gauge(descReplLagTime, s.LagTime.Seconds(), s.Addr)
		}
	}
	if cm := b.ctl; cm != nil {
		cm.mu.Lock()
		master, epoch, size := cm.running == "master", cm.master.MasterEpoch, len(cm.syncSet)
		cm.mu.Unlock()
		gauge(descCtlMaster, map[bool]float64{true: 1}[master])
		gauge(descCtlEpoch, float64(epoch))
		if master {
			gauge(descCtlSyncSet, float64(size))
		}
	}
}

// halfAgeBuckets are the age classes of tide_broker_transaction_half_by_age;
// the last one takes every older message.
var halfAgeBuckets = [...]struct {
	label string
	below time.Duration
}{{"lt_1m", time.Minute}, {"1m_10m", 10 * time.Minute}, {"10m_1h", time.Hour}, {"gt_1h", 0}}

// disk is a statfs result in bytes.
type disk struct{ total, free, avail uint64 }

// usedRatio counts blocks reserved for root as used, as df does.
func (d disk) usedRatio() float64 {
	size := d.total - d.free + d.avail
	if size == 0 {
		return 0
	}
	return float64(d.total-d.free) / float64(size)
}

func diskSpace(dir string) (disk, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return disk{}, err
	}
	bs := uint64(st.Bsize)
	return disk{total: st.Blocks * bs, free: st.Bfree * bs, avail: st.Bavail * bs}, nil
}

// handleRuntimeInfo serves GET_BROKER_RUNTIME_INFO: a KV table with the
// keys of RocketMQ's answer that Tide can fill (commit log offsets, disk
// ratio, boot time, version) plus Tide's own totals and disk sizes, which
// consoles turn into rates by sampling (msgPutTotal, msgGetTotal).
func (b *Broker) handleRuntimeInfo(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	kv := map[string]string{
		protocol.RuntimeVersionDesc: "V4_9_7", // RocketMQ 4.9.7's answer: what Tide speaks
		protocol.RuntimeVersion:     strconv.Itoa(int(protocol.Version)),
		"brokerRole":                b.brokerRole(),
		"bootTimestamp":             strconv.FormatInt(b.metrics.boot.UnixMilli(), 10),
		"commitLogMaxOffset":        strconv.FormatInt(b.store.MaxPhyOffset(), 10),
		"commitLogMinOffset":        strconv.FormatInt(b.store.MinPhyOffset(), 10),
		"msgPutTotal":               strconv.FormatInt(b.store.Stats().Messages, 10),
		"msgGetTotal":               strconv.FormatInt(int64(sumCounter(b.metrics.msgsOut)), 10),
		"longPollHeld":              strconv.FormatInt(b.polls.Held(), 10),
		"diskFull":                  strconv.FormatBool(b.store.DiskFull()),
	}
	if b.opts.TideExtensions {
		kv[protocol.RuntimeVersionDesc] = "Tide (RocketMQ 4.x protocol)"
		kv[protocol.RuntimeTideExtensions] = strings.Join(protocol.TideExtensions(), ",")
	}
	if d, err := diskSpace(b.opts.Store.StorePathRootDir); err == nil {
		kv["commitLogDiskRatio"] = strconv.FormatFloat(d.usedRatio(), 'f', 4, 64)
		kv["diskTotalBytes"] = strconv.FormatUint(d.total, 10)
		kv["diskFreeBytes"] = strconv.FormatUint(d.avail, 10)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	t := protocol.KVTable{Table: kv}
	resp.Body = t.Encode()
	return resp
}

// sumCounter adds up every series of a counter vector.
func sumCounter(cv *prometheus.CounterVec) float64 {
	ch := make(chan prometheus.Metric, 16)
	go func() {
		cv.Collect(ch)
		close(ch)
	}()
	var sum float64
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) == nil && d.Counter != nil {
			sum += d.Counter.GetValue()
		}
	}
	return sum
}
