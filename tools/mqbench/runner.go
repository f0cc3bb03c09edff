package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	rtrace "runtime/trace"
	"sync"
	"sync/atomic"
	"time"
)

// Body layout: bytes 0..7 the send time (Unix ns, little endian), byte 8 is
// 1 when the message belongs to the measured part of the run; the rest is
// filler.
const (
	flagWarmup   = 0
	flagMeasured = 1
)

func stamp(b []byte, now time.Time, measured bool) {
	binary.LittleEndian.PutUint64(b, uint64(now.UnixNano()))
	if measured {
		b[8] = flagMeasured
	} else {
		b[8] = flagWarmup
	}
}

func parseStamp(b []byte) (time.Time, bool) {
	if len(b) < 9 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.LittleEndian.Uint64(b))), b[8] == flagMeasured
}

// run is one benchmark run: the counters, histograms and progress output
// shared by its producers and consumer.
type run struct {
	cfg      Config
	drv      Driver
	topics   []string
	progress io.Writer // nil = quiet
	filler   []byte

	c       counters
	sendLat *recorder
	e2eLat  *recorder
	// lag is how late paced sends start (-rate): due time -> start, 0
	// when on time. Send and e2e latency start at the send, so a sender
	// that falls behind its schedule hides its queue from them; lag shows it.
	lag *recorder

	measuring atomic.Bool  // messages sent now are measured
	measured  atomic.Int64 // measured messages acknowledged
	mStart    atomic.Int64 // Unix ns when measuring began
	recvMeas  atomic.Int64 // measured messages consumed
	firstRecv atomic.Int64 // Unix ns of the first and last delivery
	lastRecv  atomic.Int64
	lastAck   atomic.Int64
	errOnce   sync.Once
	firstErr  error
}

func newRun(cfg Config, drv Driver, progress io.Writer) *run {
	f := make([]byte, cfg.Size)
	for i := range f {
		f[i] = byte('a' + i%26)
	}
	return &run{cfg: cfg, drv: drv, topics: cfg.topicNames(), progress: progress, filler: f,
		sendLat: newRecorder(), e2eLat: newRecorder(), lag: newRecorder()}
}

func (r *run) fail(err error) {
	r.c.errors.Add(1)
	r.errOnce.Do(func() { r.firstErr = err })
}

func (r *run) body(now time.Time) []byte {
	b := make([]byte, r.cfg.Size)
	copy(b, r.filler)
	stamp(b, now, r.measuring.Load())
	return b
}

func (r *run) startMeasuring() {
	if r.measuring.CompareAndSwap(false, true) {
		r.mStart.Store(time.Now().UnixNano())
		if r.cfg.TraceOut != "" {
			go r.trace(r.cfg.TraceOut, r.cfg.TraceFor)
		}
	}
}

// trace writes a runtime/trace of this process to file for d (-trace):
// what the scheduler, the GC and the network poller did to the sends and
// deliveries of the measured part.
func (r *run) trace(file string, d time.Duration) {
	f, err := os.Create(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mqbench: -trace:", err)
		return
	}
	defer f.Close()
	if err := rtrace.Start(f); err != nil {
		fmt.Fprintln(os.Stderr, "mqbench: -trace:", err)
		return
	}
	time.Sleep(d) // the traced window
	rtrace.Stop()
}

// acked records n acknowledged messages of one send call started at t0.
func (r *run) acked(t0 time.Time, n int, measured bool) {
	now := time.Now()
	r.c.sent.Add(int64(n))
	if measured {
		r.sendLat.Record(now.Sub(t0))
		r.measured.Add(int64(n))
		r.lastAck.Store(now.UnixNano())
	}
}

// deliver is the consumer callback.
func (r *run) deliver(bodies [][]byte) {
	now := time.Now()
	var meas int64
	var bytes int64
	for _, b := range bodies {
		bytes += int64(len(b))
		if ts, ok := parseStamp(b); ok {
			meas++
			if r.cfg.Mode == "e2e" {
				r.e2eLat.Record(now.Sub(ts))
			}
		}
	}
	r.firstRecv.CompareAndSwap(0, now.UnixNano())
	r.lastRecv.Store(now.UnixNano())
	r.c.received.Add(int64(len(bodies)))
	r.c.recvB.Add(bytes)
	r.recvMeas.Add(meas)
}

// produce runs the producers until the duration or count is reached and
// every send has been answered.
func (r *run) produce(ctx context.Context) error {
	cfg := r.cfg
	prods := make([]Producer, cfg.Producers)
	for i := range prods {
		p, err := r.drv.Producer(ctx, cfg)
		if err != nil {
			for _, q := range prods[:i] {
				_ = q.Close()
			}
			return fmt.Errorf("producer: %w", err)
		}
		prods[i] = p
	}
	defer func() {
		for _, p := range prods {
			_ = p.Close()
		}
	}()

	var issued atomic.Int64 // messages claimed by senders
	start := time.Now()
	var deadline time.Time
	if cfg.Count <= 0 {
		deadline = start.Add(cfg.Duration + r.warmup())
	}
	// claim reserves n messages and paces them; it returns how many may be
	// sent (0 = stop).
	claim := func(n int) int {
		if ctx.Err() != nil || (!deadline.IsZero() && time.Now().After(deadline)) {
			return 0
		}
		end := issued.Add(int64(n))
		first := end - int64(n)
		if cfg.Count > 0 {
			if first >= cfg.Count {
				return 0
			}
			if end > cfg.Count {
				n = int(cfg.Count - first)
			}
		}
		if cfg.Rate > 0 {
			due := start.Add(time.Duration(float64(first) / cfg.Rate * float64(time.Second)))
			if d := time.Until(due); d > 100*time.Microsecond {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return 0
				}
			}
			if r.measuring.Load() {
				r.lag.Record(max(0, time.Since(due)))
			}
		}
		return n
	}
	var topicSeq atomic.Uint64
	topic := func() string { return r.topics[topicSeq.Add(1)%uint64(len(r.topics))] }

	var wg sync.WaitGroup
	for _, p := range prods {
		switch cfg.Send {
		case "sync", "oneway":
			for range cfg.Inflight {
				wg.Go(func() {
					for claim(1) == 1 {
						t0 := time.Now()
						meas := r.measuring.Load()
						var err error
						if cfg.Send == "sync" {
							err = p.Send(ctx, topic(), r.body(t0))
						} else {
							err = p.SendOneway(ctx, topic(), r.body(t0))
						}
						if err != nil {
							r.fail(err)
							continue
						}
						r.acked(t0, 1, meas)
					}
				})
			}
		case "batch":
			for range cfg.Inflight {
				wg.Go(func() {
					for {
						n := claim(cfg.Batch)
						if n == 0 {
							return
						}
						t0 := time.Now()
						meas := r.measuring.Load()
						bodies := make([][]byte, n)
						for i := range bodies {
							bodies[i] = r.body(t0)
						}
						if err := p.SendBatch(ctx, topic(), bodies); err != nil {
							r.fail(err)
							continue
						}
						r.acked(t0, n, meas)
					}
				})
			}
		case "async":
			wg.Go(func() {
				window := make(chan struct{}, cfg.Inflight)
				var pending sync.WaitGroup
				for claim(1) == 1 {
					select {
					case window <- struct{}{}:
					case <-ctx.Done():
					}
					if ctx.Err() != nil {
						break
					}
					t0 := time.Now()
					meas := r.measuring.Load()
					pending.Add(1)
					err := p.SendAsync(ctx, topic(), r.body(t0), func(err error) {
						if err != nil {
							r.fail(err)
						} else {
							r.acked(t0, 1, meas)
						}
						<-window
						pending.Done()
					})
					if err != nil {
						r.fail(err)
						<-window
						pending.Done()
					}
				}
				pending.Wait()
			})
		}
	}
	wg.Wait()
	return nil
}

func (r *run) warmup() time.Duration {
	if r.cfg.Count > 0 {
		return 0
	}
	return r.cfg.Warmup
}

// progressLoop prints one line per second until ctx is done.
func (r *run) progressLoop(ctx context.Context) {
	if r.progress == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	start := time.Now()
	var lastSent, lastRecv int64
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			sent, recv := r.c.sent.Load(), r.c.received.Load()
			line := fmt.Sprintf("%5.0fs", now.Sub(start).Seconds())
			if sent > 0 || r.cfg.Mode != "consume" {
				ds := float64(sent - lastSent)
				line += fmt.Sprintf(" | send %8.0f msg/s %7.1f MB/s %s", ds, ds*float64(r.cfg.Size)/1e6, r.sendLat.Interval())
			}
			if r.cfg.Mode != "produce" {
				dr := float64(recv - lastRecv)
				line += fmt.Sprintf(" | recv %8.0f msg/s", dr)
				if r.cfg.Mode == "e2e" {
					line += " e2e " + r.e2eLat.Interval().String()
				}
			}
			if e := r.c.errors.Load(); e > 0 {
				line += fmt.Sprintf(" | errors %d", e)
			}
			if !r.measuring.Load() {
				line += " (warm-up)"
			}
			fmt.Fprintln(r.progress, line)
			lastSent, lastRecv = sent, recv
		}
	}
}

func (r *run) phaseFromSends(name string) Phase {
	start := time.Unix(0, r.mStart.Load())
	end := time.Unix(0, r.lastAck.Load())
	secs := end.Sub(start).Seconds()
	n := r.measured.Load()
	p := Phase{Name: name, Seconds: secs, Messages: n, Errors: r.c.errors.Load()}
	if secs > 0 {
		p.MsgsPerSec = float64(n) / secs
		p.MBPerSec = p.MsgsPerSec * float64(r.cfg.Size) / 1e6
	}
	l := r.sendLat.Total()
	p.Latency = &l
	if r.cfg.Rate > 0 {
		lag := r.lag.Total()
		p.Lag = &lag
	}
	return p
}

// Execute runs the configured workload and returns its result.
func Execute(ctx context.Context, cfg Config, drv Driver, progress io.Writer) (*Result, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	res := &Result{Target: cfg.Target, Label: cfg.Label, Start: time.Now().UTC(), Config: cfg}
	res.ServerVersion, res.ClientVersion = drv.Versions(ctx)
	r := newRun(cfg, drv, progress)
	pids, _ := parsePids(cfg.ServerPids)
	cpu0, srv0 := selfCPU(), 0.0
	if len(pids) > 0 {
		srv0, _ = procCPU(pids)
	}
	defer func() {
		res.ClientCPU = selfCPU() - cpu0
		if len(pids) > 0 {
			if s, err := procCPU(pids); err == nil {
				res.ServerCPU = s - srv0
			}
		}
		res.SentTotal = r.c.sent.Load()
	}()
	if cfg.Mode != "consume" {
		if err := drv.Prepare(ctx, r.topics, cfg.Queues); err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
	}
	if !cfg.Keep && cfg.Mode != "consume" {
		defer func() {
			cctx, cc := context.WithTimeout(context.Background(), 30*time.Second)
			defer cc()
			_ = drv.Cleanup(cctx, r.topics)
		}()
	}
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	go r.progressLoop(pctx)

	switch cfg.Mode {
	case "produce":
		if r.warmup() <= 0 {
			r.startMeasuring()
		} else {
			go r.measureAfter(ctx, r.warmup(), nil)
		}
		if err := r.produce(ctx); err != nil {
			return nil, err
		}
		res.Phases = append(res.Phases, r.phaseFromSends("produce"))
	case "backlog":
		r.startMeasuring()
		bcfg := r.cfg
		r.cfg.Send, r.cfg.Mode = "batch", "produce"
		if err := r.produce(ctx); err != nil {
			return nil, err
		}
		r.cfg = bcfg
		res.Phases = append(res.Phases, r.phaseFromSends("preload"))
		if progress != nil {
			fmt.Fprintf(progress, "preloaded %d messages; draining\n", r.measured.Load())
		}
		ph, err := r.drain(ctx, r.measured.Load())
		if err != nil {
			return nil, err
		}
		res.Phases = append(res.Phases, ph)
	case "consume":
		ph, err := r.drain(ctx, cfg.Count)
		if err != nil {
			return nil, err
		}
		res.Phases = append(res.Phases, ph)
	case "e2e":
		stop, err := drv.Consume(ctx, cfg, r.topics, cfg.Group, r.deliver)
		if err != nil {
			return nil, fmt.Errorf("consumer: %w", err)
		}
		// Measure once the consumer is receiving and the warm-up is over.
		go r.measureAfter(ctx, r.warmup(), func() bool { return r.c.received.Load() > 0 })
		if err := r.produce(ctx); err != nil {
			stop()
			return nil, err
		}
		// Wait until every measured message arrived (or 30 s).
		wctx, wc := context.WithTimeout(ctx, 30*time.Second)
		for r.recvMeas.Load() < r.measured.Load() && wctx.Err() == nil {
			time.Sleep(5 * time.Millisecond) // polling a counter; the wait itself is bounded by wctx
		}
		wc()
		stop()
		ph := r.phaseFromSends("e2e")
		e := r.e2eLat.Total()
		ph.E2E = &e
		if lost := r.measured.Load() - r.recvMeas.Load(); lost > 0 {
			ph.Errors += lost
			r.fail(fmt.Errorf("%d measured messages not consumed within 30 s", lost))
		}
		res.Phases = append(res.Phases, ph)
	}
	if r.firstErr != nil && progress != nil {
		fmt.Fprintf(progress, "first error (%d errors): %v\n", r.c.errors.Load(), r.firstErr)
	}
	if r.measured.Load() == 0 && r.c.received.Load() == 0 {
		if r.firstErr != nil {
			return res, fmt.Errorf("nothing succeeded: %w", r.firstErr)
		}
		return res, errors.New("nothing was sent or received")
	}
	return res, nil
}

// measureAfter starts the measured part after d, once ready (if set)
// reports true.
func (r *run) measureAfter(ctx context.Context, d time.Duration, ready func() bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return
	}
	for ready != nil && !ready() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Millisecond):
		}
	}
	r.startMeasuring()
}

// drain consumes n messages from the topics and times it from the first
// delivery to the last.
func (r *run) drain(ctx context.Context, n int64) (Phase, error) {
	r.c.received.Store(0)
	r.c.recvB.Store(0)
	r.firstRecv.Store(0)
	done := make(chan struct{})
	var once sync.Once
	deliver := func(bodies [][]byte) {
		r.deliver(bodies)
		if r.c.received.Load() >= n {
			once.Do(func() { close(done) })
		}
	}
	t0 := time.Now()
	stop, err := r.drv.Consume(ctx, r.cfg, r.topics, r.cfg.Group, deliver)
	if err != nil {
		return Phase{}, fmt.Errorf("consumer: %w", err)
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	stop()
	got := r.c.received.Load()
	first, last := time.Unix(0, r.firstRecv.Load()), time.Unix(0, r.lastRecv.Load())
	secs := last.Sub(first).Seconds()
	p := Phase{Name: "consume", Seconds: secs, Messages: got}
	if got < n {
		p.Errors = n - got
		r.fail(fmt.Errorf("consumed %d of %d messages before the timeout", got, n))
	}
	if secs > 0 {
		p.MsgsPerSec = float64(got) / secs
		p.MBPerSec = float64(r.c.recvB.Load()) / secs / 1e6
	}
	if r.progress != nil {
		fmt.Fprintf(r.progress, "consumer start to first message: %v\n", first.Sub(t0).Round(time.Millisecond))
	}
	return p, nil
}
