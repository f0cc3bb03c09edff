package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: 1 us .. 120 s, 3 significant digits.
const (
	histMin = 1
	histMax = 120_000_000
	histSig = 3
)

// recorder is an HdrHistogram of latencies in microseconds that keeps a
// total and a per-interval histogram. Safe for concurrent use; Record takes
// a mutex (tens of ns uncontended), which is cheap next to a send.
type recorder struct {
	mu       sync.Mutex
	total    *hdrhistogram.Histogram
	interval *hdrhistogram.Histogram
}

func newRecorder() *recorder {
	return &recorder{
		total:    hdrhistogram.New(histMin, histMax, histSig),
		interval: hdrhistogram.New(histMin, histMax, histSig),
	}
}

// Record adds one latency; values outside the range are clamped so that
// nothing is silently dropped.
func (r *recorder) Record(d time.Duration) {
	us := d.Microseconds()
	if us < histMin {
		us = histMin
	}
	if us > histMax {
		us = histMax
	}
	r.mu.Lock()
	_ = r.total.RecordValue(us)
	_ = r.interval.RecordValue(us)
	r.mu.Unlock()
}

// Interval returns the percentiles since the last call and resets them.
func (r *recorder) Interval() Latency {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := latencyOf(r.interval)
	r.interval.Reset()
	return l
}

// Total returns the percentiles of everything recorded.
func (r *recorder) Total() Latency {
	r.mu.Lock()
	defer r.mu.Unlock()
	return latencyOf(r.total)
}

// Latency holds percentiles in microseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_us"`
	P50   int64   `json:"p50_us"`
	P99   int64   `json:"p99_us"`
	P999  int64   `json:"p999_us"`
	Max   int64   `json:"max_us"`
}

func latencyOf(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		Count: h.TotalCount(),
		Mean:  h.Mean(),
		P50:   h.ValueAtQuantile(50),
		P99:   h.ValueAtQuantile(99),
		P999:  h.ValueAtQuantile(99.9),
		Max:   h.Max(),
	}
}

func (l Latency) String() string {
	if l.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("p50 %s p99 %s p99.9 %s max %s", us(l.P50), us(l.P99), us(l.P999), us(l.Max))
}

func us(v int64) string {
	switch {
	case v >= 10_000:
		return fmt.Sprintf("%.1fms", float64(v)/1000)
	case v >= 1000:
		return fmt.Sprintf("%.2fms", float64(v)/1000)
	default:
		return fmt.Sprintf("%dus", v)
	}
}

// counters are the run's message counts, updated by senders and consumers.
type counters struct {
	sent     atomic.Int64 // acknowledged (or written, oneway) messages
	errors   atomic.Int64
	received atomic.Int64
	recvB    atomic.Int64
}

// Phase is the result of one timed phase (a produce run, a drain).
type Phase struct {
	Name       string   `json:"name"`
	Seconds    float64  `json:"seconds"`
	Messages   int64    `json:"messages"`
	Errors     int64    `json:"errors,omitempty"`
	MsgsPerSec float64  `json:"msgs_per_s"`
	MBPerSec   float64  `json:"mb_per_s"`
	Latency    *Latency `json:"latency,omitempty"`     // send -> ack (per call: a batch counts once)
	E2E        *Latency `json:"e2e_latency,omitempty"` // send -> consume
	// Lag is, for paced runs (-rate), each message's due time -> the start
	// of its send: the queue before the send that Latency and E2E, which
	// start at the send, do not see (0 when on schedule).
	Lag *Latency `json:"schedule_lag,omitempty"`
}

// Result is what one mqbench run prints as JSON.
type Result struct {
	Target        string    `json:"target"`
	Label         string    `json:"label,omitempty"`
	ServerVersion string    `json:"server_version"`
	ClientVersion string    `json:"client_version"`
	Start         time.Time `json:"start"`
	Config        Config    `json:"config"`
	Phases        []Phase   `json:"phases"`
	// CPU seconds over the whole run (set-up and warm-up included) of
	// mqbench and of the -server-pids, and the messages sent in it.
	ClientCPU float64 `json:"client_cpu_s"`
	ServerCPU float64 `json:"server_cpu_s,omitempty"`
	SentTotal int64   `json:"sent_total"`
}

// CPUPerMsg returns client + server CPU microseconds per message sent, or 0.
func (r *Result) CPUPerMsg() float64 {
	if r.SentTotal == 0 || r.ServerCPU == 0 {
		return 0
	}
	return (r.ClientCPU + r.ServerCPU) / float64(r.SentTotal) * 1e6
}

// ServerCPUPerMsg returns the server processes' CPU microseconds per
// message sent, or 0.
func (r *Result) ServerCPUPerMsg() float64 {
	if r.SentTotal == 0 {
		return 0
	}
	return r.ServerCPU / float64(r.SentTotal) * 1e6
}

// Phase returns the named phase, or nil.
func (r *Result) Phase(name string) *Phase {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	return nil
}

func (r *Result) writeText(w io.Writer) {
	fmt.Fprintf(w, "== %s %s (server %s, client %s) mode=%s send=%s size=%d producers=%d inflight=%d batch=%d topics=%d queues=%d rate=%g\n",
		r.Target, r.Label, r.ServerVersion, r.ClientVersion, r.Config.Mode, r.Config.Send, r.Config.Size,
		r.Config.Producers, r.Config.Inflight, r.Config.Batch, r.Config.Topics, r.Config.Queues, r.Config.Rate)
	for _, p := range r.Phases {
		fmt.Fprintf(w, "%-8s %9d msgs in %6.2fs: %10.0f msgs/s %8.1f MB/s", p.Name, p.Messages, p.Seconds, p.MsgsPerSec, p.MBPerSec)
		if p.Errors > 0 {
			fmt.Fprintf(w, " errors %d", p.Errors)
		}
		fmt.Fprintln(w)
		if p.Latency != nil {
			fmt.Fprintf(w, "         send latency %s (mean %.0fus, %d calls)\n", p.Latency, p.Latency.Mean, p.Latency.Count)
		}
		if p.E2E != nil {
			fmt.Fprintf(w, "         e2e  latency %s (mean %.0fus, %d msgs)\n", p.E2E, p.E2E.Mean, p.E2E.Count)
		}
		if p.Lag != nil {
			fmt.Fprintf(w, "         lag behind the -rate schedule %s (mean %.0fus)\n", p.Lag, p.Lag.Mean)
		}
	}
	if r.SentTotal > 0 {
		fmt.Fprintf(w, "cpu      client %.2fs server %.2fs for %d messages sent: %.1f us/msg\n", r.ClientCPU, r.ServerCPU, r.SentTotal, r.CPUPerMsg())
	}
}

func (r *Result) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
