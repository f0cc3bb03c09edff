package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Options configure a campaign. DefaultOptions holds the defaults.
type Options struct {
	Seed     int64
	Duration time.Duration // how long faults are injected
	// Drain bounds the wait, after healing, for every acknowledged message
	// to reach every group.
	Drain time.Duration
	Dir   string // output: history.jsonl, schedule.txt, report.txt, process logs
	Root  string // repository root (to build the daemons)
	Out   io.Writer
	Mode  string // ModeMasterSlave or ModeController
}

// DefaultOptions returns the defaults (Root and Dir must still be set).
func DefaultOptions() Options {
	return Options{Seed: 1, Duration: 5 * time.Minute, Drain: 120 * time.Second, Out: os.Stdout, Mode: ModeMasterSlave}
}

// Validate reports bad options.
func (o Options) Validate() error {
	var errs []error
	if o.Duration <= 0 {
		errs = append(errs, errors.New("duration must be positive"))
	}
	if o.Drain <= 0 {
		errs = append(errs, errors.New("drain must be positive"))
	}
	if o.Dir == "" || o.Root == "" {
		errs = append(errs, errors.New("dir and root must be set"))
	}
	if o.Out == nil {
		errs = append(errs, errors.New("out must be set"))
	}
	if o.Mode != ModeMasterSlave && o.Mode != ModeController {
		errs = append(errs, fmt.Errorf("mode %q: want %s or %s", o.Mode, ModeMasterSlave, ModeController))
	}
	return errors.Join(errs...)
}

// Run runs one campaign: build, start the cluster on a private network,
// run the workload while the seed's faults are injected, heal, drain,
// check the recorded history. It returns the checker's report; an error
// means the campaign could not run or could not be checked (ErrNoNetns
// when network namespaces are unavailable).
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := CheckNetns(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	say := func(format string, args ...any) {
		fmt.Fprintf(o.Out, "%s chaos: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	say("seed %d, %s cluster, faults for %v, output %s", o.Seed, o.Mode, o.Duration, o.Dir)
	bins, err := Build(o.Root, filepath.Join(o.Dir, "bin"))
	if err != nil {
		return nil, err
	}
	net, err := NewNetwork()
	if err != nil {
		return nil, err
	}
	defer net.Close()
	say("network 10.21.%d.0/24 (namespaces chaos-%d-*)", net.ID, net.ID)
	// the stores live in RAM: room for the commit log of the whole run
	// (about 60 KB/s of workload) well below the 90 % write limit
	storeMiB := 512 + int(o.Duration.Hours()*600)
	cl, err := StartCluster(net, bins, o.Dir, storeMiB, o.Mode)
	defer cl.Stop()
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	clientLog, err := os.Create(filepath.Join(o.Dir, "clients.log"))
	if err != nil {
		return nil, err
	}
	defer clientLog.Close()
	logger := slog.New(slog.NewTextHandler(clientLog, &slog.HandlerOptions{Level: slog.LevelWarn}))
	admin, err := mqclient.NewAdmin(mqclient.WithNameServers(cl.NameServerAddrs()...), mqclient.WithLogger(logger),
		mqclient.WithRequestTimeout(3*time.Second))
	if err != nil {
		return nil, err
	}
	if err := admin.Start(ctx); err != nil {
		return nil, err
	}
	defer admin.Shutdown(context.Background())
	rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	err = cl.WaitReady(rctx, admin, Topics, queuesPerTopic)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("cluster not ready: %w", err)
	}
	m, sl := cl.Roles(ctx)
	say("cluster ready: nameservers %s, master %s, slave %s", strings.Join(cl.NameServerAddrs(), ","), m.Addr, sl.Addr)

	histPath := filepath.Join(o.Dir, "history.jsonl")
	rec, err := NewRecorder(histPath)
	if err != nil {
		return nil, err
	}
	defer rec.Close()
	cfg := map[string]string{"seed": strconv.FormatInt(o.Seed, 10), "duration": o.Duration.String()}
	for k, v := range BrokerConfig(o.Mode) {
		cfg[k] = v
	}
	rec.Record(Event{Process: "runner", Type: OK, Op: OpSetup, Groups: Groups, Ordered: []string{GroupOrdered}, Config: cfg})
	for _, p := range cl.Procs() {
		p.SetOnCrash(func(p *Process, state string) {
			rec.Record(Event{Process: p.Name, Type: Info, Op: OpCrash, Detail: state})
			say("CRASH: %s %s (log %s)", p.Name, state, p.LogPath)
		})
	}

	sched := Schedule(o.Seed, o.Duration, ConsumerInstances, o.Mode)
	if err := writeSchedule(filepath.Join(o.Dir, "schedule.txt"), o.Seed, sched); err != nil {
		return nil, err
	}
	wl := NewWorkload(rec, o.Dir, cl.NameServerAddrs(), cl.BrokerName,
		func() string { return cl.MasterAddr(context.Background()) }, admin, o.Seed, logger)
	wl.Durable = cfg[ConfigDurable]
	defer wl.Close(context.Background())
	if err := wl.Start(ctx); err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	inj := &injector{net: net, cl: cl, wl: wl, rec: rec, say: say}
	start := time.Now()
	for i, f := range sched {
		if d := time.Until(start.Add(f.At)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		say("fault %d/%d: %s", i+1, len(sched), f)
		inj.apply(ctx, f)
		rec.Flush()
	}
	if d := time.Until(start.Add(o.Duration)); d > 0 && ctx.Err() == nil {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	wl.StopProducers()
	healErr := inj.healAll(context.Background())
	rec.Record(Event{Process: "runner", Type: OK, Op: OpHeal, Error: errString(healErr)})
	if healErr != nil {
		say("heal: %v", healErr)
	}
	say("healed; draining (up to %v, %d deliveries missing)", o.Drain, wl.Missing())
	deadline := time.Now().Add(o.Drain)
	for wl.Missing() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
	}
	missing := wl.Missing()
	if missing == 0 {
		rec.Record(Event{Process: "runner", Type: OK, Op: OpDrain})
	} else {
		rec.Record(Event{Process: "runner", Type: Info, Op: OpDrain, Detail: fmt.Sprintf("%d deliveries missing at the deadline", missing)})
	}
	wl.Close(context.Background())
	if _, err := recordOffsetMoves(rec, o.Dir); err != nil {
		say("reading the brokers' offset moves: %v", err)
	}
	if err := rec.Close(); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	events, err := ReadHistoryFile(histPath)
	if err != nil {
		return nil, err
	}
	rep, err := Check(events)
	if err != nil {
		return nil, err
	}
	return rep, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func writeSchedule(path string, seed int64, sched []Fault) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# seed %d: %d faults\n", seed, len(sched))
	for _, f := range sched {
		fmt.Fprintf(&b, "%8.1fs  %s\n", f.At.Seconds(), f)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// injector applies faults and heals them, recording each.
type injector struct {
	net *Network
	cl  *Cluster
	wl  *Workload
	rec *Recorder
	say func(string, ...any)

	slowPid int // the broker a slow-disk fault throttles
}

func (in *injector) apply(ctx context.Context, f Fault) {
	e := Event{Process: "nemesis", Op: OpFault, Fault: f.Kind, Target: f.Target, Detail: f.String()}
	if f.Kind == FClockJump {
		e.SkewMS = int64(f.SkewSec) * 1000
	}
	if f.Peer != "" {
		e.Target += "->" + f.Peer
	}
	// "master" and "slave" name the brokers holding those roles now
	f.Target, f.Peer = in.resolve(ctx, f.Target), in.resolve(ctx, f.Peer)
	if in.cl.Mode == ModeController {
		e.Detail += " (hosts " + f.Target
		if f.Peer != "" {
			e.Detail += "->" + f.Peer
		}
		e.Detail += ")"
	}
	inv := e
	inv.Type = Invoke
	err := in.start(ctx, f)
	if err != nil {
		inv.Error = err.Error()
	}
	in.rec.Record(inv)
	if err == nil {
		select {
		case <-time.After(f.Dur):
		case <-ctx.Done():
		}
	}
	herr := in.heal(ctx, f)
	done := e
	done.Type = OK
	if herr != nil {
		done.Type, done.Error = Info, herr.Error()
		in.say("heal %s: %v", f, herr)
	}
	in.rec.Record(done)
}

func (in *injector) start(ctx context.Context, f Fault) error {
	switch f.Kind {
	case FKill:
		return in.cl.Proc(f.Target).Kill()
	case FPause:
		return in.cl.Proc(f.Target).Pause()
	case FIsolate:
		var errs []error
		for _, peer := range append(in.net.Hosts(), "client") {
			if peer != f.Target {
				errs = append(errs, in.net.Cut(f.Target, peer), in.net.Cut(peer, f.Target))
			}
		}
		return errors.Join(errs...)
	case FPartition:
		return errors.Join(in.net.Cut(f.Target, f.Peer), in.net.Cut(f.Peer, f.Target))
	case FOneWay:
		return in.net.Cut(f.Target, f.Peer)
	case FBridge:
		var errs []error
		for _, a := range strings.Split(f.Target, "+") {
			for _, b := range strings.Split(f.Peer, "+") {
				errs = append(errs, in.net.Cut(a, b), in.net.Cut(b, a))
			}
		}
		return errors.Join(errs...)
	case FSlowLink:
		return in.net.SlowLink(f.Target, f.RateKbit, f.LatencyMS, f.LossPct)
	case FConsumerRestart:
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return in.wl.StopConsumer(sctx, f.Target)
	case FDiskFull:
		_, err := FillDisk(in.cl.StoreDir(f.Target), DiskFullPct)
		return err
	case FDiskFull100:
		_, err := FillDisk(in.cl.StoreDir(f.Target), 100)
		return err
	case FSlowDisk:
		p := in.cl.Proc(f.Target)
		if p == nil || p.Pid() == 0 {
			return fmt.Errorf("slow-disk: %s is not running", f.Target)
		}
		in.slowPid = p.Pid()
		return SlowDisk(in.cgroup(f.Target), p.Pid(), in.cl.StoreDir(f.Target), f.WriteKBps<<10, f.WriteIOPS)
	case FOffsetReset:
		sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		return in.wl.ResetOffsets(sctx, f.Target, time.Now().Add(-time.Duration(f.BackSec)*time.Second))
	case FClockJump:
		return in.cl.SetClock(f.Target, time.Duration(f.SkewSec)*time.Second)
	}
	return fmt.Errorf("unknown fault %q", f.Kind)
}

func (in *injector) heal(ctx context.Context, f Fault) error {
	switch f.Kind {
	case FKill, FPause:
		return in.cl.Heal()
	case FIsolate, FPartition, FOneWay, FSlowLink, FBridge:
		return in.net.Heal()
	case FConsumerRestart:
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return in.wl.StartConsumer(sctx, f.Target)
	case FDiskFull, FDiskFull100:
		return FreeDisk(in.cl.StoreDir(f.Target))
	case FSlowDisk:
		pid := in.slowPid
		in.slowPid = 0
		return FastDisk(in.cgroup(f.Target), pid)
	case FOffsetReset:
		sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		return in.wl.StartGroup(sctx, f.Target)
	case FClockJump:
		return in.cl.SetClock(f.Target, 0)
	}
	return nil
}

// cgroup names the blkio cgroup of a slow-disk fault on broker host.
func (in *injector) cgroup(host string) string { return fmt.Sprintf("chaos-%d-%s", in.net.ID, host) }

// resolve maps the host names of a fault ("+"-joined for bridges) to
// the cluster's hosts.
func (in *injector) resolve(ctx context.Context, names string) string {
	if names == "" {
		return ""
	}
	parts := strings.Split(names, "+")
	for i, p := range parts {
		parts[i] = in.cl.Host(ctx, p)
	}
	return strings.Join(parts, "+")
}

// healAll ends every fault: network, processes, consumers.
func (in *injector) healAll(ctx context.Context) error {
	errs := []error{in.net.Heal()}
	for _, b := range in.cl.Brokers {
		errs = append(errs, FreeDisk(in.cl.StoreDir(b.Host)), FastDisk(in.cgroup(b.Host), b.Pid()), in.cl.SetClock(b.Host, 0))
	}
	errs = append(errs, in.cl.Heal())
	for _, name := range ConsumerInstances {
		if !in.wl.ConsumerRunning(name) {
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			errs = append(errs, in.wl.StartConsumer(sctx, name))
			cancel()
		}
	}
	return errors.Join(errs...)
}
