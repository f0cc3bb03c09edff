package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Meta describes a bench-compare run (written by scripts/bench-compare.sh).
type Meta struct {
	Date       string `json:"date"`
	Command    string `json:"command"`
	Quick      bool   `json:"quick"`
	Machine    string `json:"machine"`
	Kernel     string `json:"kernel"`
	Go         string `json:"go"`
	Commit     string `json:"commit"`
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
	Seconds    int    `json:"seconds"`
	Note       string `json:"note"`
}

// workload names the five comparison workloads.
var workloads = []struct{ key, title, phase string }{
	{"a", "(a) 1 producer, sync send", "produce"},
	{"b", "(b) async, 64 in flight", "produce"},
	{"c", "(c) batched (64 x 1 KiB, 4 in flight)", "produce"},
	{"d", "(d) consume a backlog", "consume"},
	{"e", "(e) e2e at 50% of (b): 64 sync senders", "e2e"},
}

var classes = []struct{ key, title string }{
	{"async", "Ack before fsync (Tide ASYNC_FLUSH, NATS default sync every 2 min, Redis appendfsync everysec)"},
	{"sync", "Ack after fsync (Tide SYNC_FLUSH, NATS sync_interval: always, Redis appendfsync always)"},
}

// columns are the report's targets in column order: Tide driven by
// pkg/mqclient, Tide driven by the official Go client (the broker's cost
// with a client Tide does not control), and the peers.
var columns = []string{"tide", "tide-official", "nats", "redis"}

// peers are the other systems Tide is compared with.
var peers = []string{"nats", "redis"}

// columnTitle names a column in the report's tables.
var columnTitle = map[string]string{"tide": "Tide", "tide-official": "Tide (official client)", "nats": "NATS", "redis": "Redis"}

type results map[string]*Result // "<target>-<class>-<workload>"

func (rs results) get(target, class, wl string) *Result { return rs[target+"-"+class+"-"+wl] }

func (rs results) rate(target, class, wl, phase string) float64 {
	r := rs.get(target, class, wl)
	if r == nil {
		return 0
	}
	if p := r.Phase(phase); p != nil {
		return p.MsgsPerSec
	}
	return 0
}

func (rs results) phase(target, class, wl, phase string) *Phase {
	r := rs.get(target, class, wl)
	if r == nil {
		return nil
	}
	return r.Phase(phase)
}

func runReport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "`directory` with the run's JSON results (<target>-<class>-<workload>.json, limits.json, meta.json)")
	out := fs.String("out", "docs/benchmarks", "output `directory` for README.md, chart.png, results/")
	machine := fs.String("machine", "", "machine description (overrides meta.json)")
	noChart := fs.Bool("no-chart", false, "do not run gnuplot")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *in == "" {
		return fmt.Errorf("report: -in is required")
	}
	rs := results{}
	files, _ := filepath.Glob(filepath.Join(*in, "*.json"))
	var lim Limits
	var meta Meta
	var scale *Scale
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".json")
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		switch base {
		case "limits":
			err = json.Unmarshal(b, &lim)
		case "meta":
			err = json.Unmarshal(b, &meta)
		case "scale":
			scale = &Scale{}
			err = json.Unmarshal(b, scale)
		default:
			var r Result
			if err = json.Unmarshal(b, &r); err == nil {
				rs[base] = &r
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	if *machine != "" {
		meta.Machine = *machine
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	var md strings.Builder
	writeReport(&md, rs, lim, meta)
	writeScale(&md, rs, scale)
	if !*noChart {
		if err := writeChart(rs, *out); err != nil {
			fmt.Fprintf(stderr, "chart: %v (README written without it)\n", err)
		} else {
			md.WriteString("\n![msgs/s per workload](chart.png)\n")
		}
	}
	if err := os.WriteFile(filepath.Join(*out, "README.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprint(stdout, ratiosText(rs))
	return nil
}

func fmtRate(v float64) string {
	switch {
	case v <= 0:
		return "-"
	case v >= 100_000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 10_000:
		return fmt.Sprintf("%.1fk", v/1000)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func fmtLat(l *Latency) string {
	if l == nil || l.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("%s / %s / %s", us(l.P50), us(l.P99), us(l.P999))
}

// lagNote is "; lag p50 / p99 / p99.9" of a paced run's schedule lag,
// empty for results written before mqbench measured it.
func lagNote(l *Latency) string {
	if l == nil || l.Count == 0 {
		return ""
	}
	return "; lag " + fmtLat(l)
}

// best returns the best peer (not tide) and its rate.
func (rs results) best(class, wl, phase string) (string, float64) {
	name, v := "", 0.0
	for _, p := range peers {
		if r := rs.rate(p, class, wl, phase); r > v {
			name, v = p, r
		}
	}
	return name, v
}

func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func ratiosText(rs results) string {
	var b strings.Builder
	b.WriteString("ratios ours / best peer (msgs/s):\n")
	for _, c := range classes {
		for _, w := range workloads {
			ours := rs.rate("tide", c.key, w.key, w.phase)
			peer, v := rs.best(c.key, w.key, w.phase)
			if ours == 0 && v == 0 {
				continue
			}
			fmt.Fprintf(&b, "  %-5s %-45s tide %8s  best peer %-5s %8s  ratio %s\n", c.key, w.title, fmtRate(ours), peer, fmtRate(v), ratio(ours, v))
		}
	}
	return b.String()
}

func versions(rs results) []string {
	seen := map[string]bool{}
	var vs []string
	for _, r := range rs {
		for _, v := range []string{r.ServerVersion, r.ClientVersion} {
			if v != "" && !seen[v] {
				seen[v] = true
				vs = append(vs, v)
			}
		}
	}
	sort.Strings(vs)
	return vs
}

func writeReport(w *strings.Builder, rs results, lim Limits, meta Meta) {
	mode := "full"
	if meta.Quick {
		mode = "quick (shorter runs, smaller backlog: development numbers)"
	}
	fmt.Fprintf(w, "# Benchmarks: Tide vs NATS JetStream vs Redis Streams\n\n")
	fmt.Fprintf(w, "Generated by `%s` (%s mode) on %s; the run took %d s. Do not edit by hand: rerun the command.\n", meta.Command, mode, meta.Date, meta.Seconds)
	fmt.Fprintf(w, "Analysis, scale and recovery measurements, profiles and what limits each missed target: [analysis.md](analysis.md).\n\n")
	fmt.Fprintf(w, "| | |\n|---|---|\n")
	fmt.Fprintf(w, "| machine | %s |\n| kernel | %s |\n| Go | %s |\n| Tide commit | %s |\n", meta.Machine, meta.Kernel, meta.Go, meta.Commit)
	fmt.Fprintf(w, "| load average (1/5/15 min) before / after | %s / %s |\n", meta.LoadBefore, meta.LoadAfter)
	fmt.Fprintf(w, "| versions | %s |\n", strings.Join(versions(rs), ", "))
	if meta.Note != "" {
		fmt.Fprintf(w, "| note | %s |\n", meta.Note)
	}
	w.WriteString("\nEverything on 127.0.0.1, client and servers sharing the machine's CPUs, 1 KiB bodies, one producer connection " +
		"(sync and batch: one connection shared by the sending goroutines), one consumer. Each peer is driven by its official Go client " +
		"through `tools/mqbench` (`-target tide|tide-official|nats|redis`); Tide twice, with pkg/mqclient and with the official RocketMQ " +
		"Go client (rocketmq-client-go v2.1.2, which most RocketMQ users bring); the same code paces, times and counts for all of them.\n\n")

	w.WriteString("## Machine limits (same run)\n\n| probe | result |\n|---|---|\n")
	fmt.Fprintf(w, "| sequential write, 1 MiB writes + fdatasync | %.0f MB/s |\n", lim.SeqWriteMBps)
	fmt.Fprintf(w, "| 1 KiB pwrite + fdatasync, one writer, preallocated file | %.0f/s (p50 / p99 / p99.9 %s) |\n", lim.FsyncPerSec, fmtLat(&lim.Fsync))
	fmt.Fprintf(w, "| loopback TCP bulk | %.0f MB/s |\n", lim.LoopbackMBps)
	fmt.Fprintf(w, "| loopback 1 KiB request/response, one connection | %.0f/s (p50 / p99 / p99.9 %s) |\n", lim.LoopbackRTTps, fmtLat(&lim.LoopbackRTT))
	fmt.Fprintf(w, "| 1 KiB ingestion limit = min(disk, loopback) / 1 KiB | %s msgs/s |\n\n", fmtRate(lim.LimitMsgsPerSe))

	for _, c := range classes {
		fmt.Fprintf(w, "## %s\n\n", c.title)
		var rates, lats []string
		for _, p := range columns {
			rates = append(rates, columnTitle[p]+" msgs/s")
			lats = append(lats, columnTitle[p]+" latency p50 / p99 / p99.9")
		}
		fmt.Fprintf(w, "| workload | %s | ours / best peer | %s |\n|---%s|\n", strings.Join(rates, " | "), strings.Join(lats, " | "),
			strings.Repeat("|---", 2*len(columns)+1))
		for _, wl := range workloads {
			if c.key == "sync" && wl.key == "d" {
				continue // reading does not depend on the flush policy; measured once, in the async class
			}
			row := []string{wl.title}
			for _, p := range columns {
				row = append(row, fmtRate(rs.rate(p, c.key, wl.key, wl.phase)))
			}
			peer, v := rs.best(c.key, wl.key, wl.phase)
			ours := rs.rate("tide", c.key, wl.key, wl.phase)
			r := ratio(ours, v)
			if r != "-" {
				r += " (" + peer + ")"
			}
			row = append(row, r)
			for _, p := range columns {
				ph := rs.phase(p, c.key, wl.key, wl.phase)
				switch {
				case ph == nil:
					row = append(row, "-")
				case wl.key == "e":
					row = append(row, "send "+fmtLat(ph.Latency)+"; e2e "+fmtLat(ph.E2E)+lagNote(ph.Lag))
				default:
					row = append(row, fmtLat(ph.Latency))
				}
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
		w.WriteString("\n")
	}
	writeCPUTable(w, rs, "CPU time per message sent, client + server processes (user + system, whole run including set-up; "+
		"on a shared machine this drifts far less than msgs/s)", "%.0f", (*Result).CPUPerMsg)
	w.WriteString("Latency is per call (a batch counts once) from the call to its acknowledgement; e2e is from the send to the consumer's " +
		"callback (HdrHistogram, microsecond resolution); lag, in (e), is from a message's due time on the paced schedule to the start of its send " +
		"(a queue in front of the send that neither latency counts). (d) is timed from the first to the last delivered message of the backlog.\n\n")

	writeServerCPU(w, rs)
	w.WriteString("## Targets (issue 21; the SYNC class keeps issue 11's)\n\n| target | measured | verdict |\n|---|---|---|\n")
	for _, t := range targetChecks(rs, lim) {
		fmt.Fprintf(w, "| %s | %s | %s |\n", t[0], t[1], t[2])
	}
}

// writeChart writes chart.dat and chart.gp and runs gnuplot: msgs/s per
// workload, one bar per target and durability class, log scale.
func writeChart(rs results, dir string) error {
	gp, err := exec.LookPath("gnuplot")
	if err != nil {
		return fmt.Errorf("gnuplot not installed")
	}
	type col struct{ target, class string }
	var cols []col
	for _, c := range classes {
		for _, p := range columns {
			for _, wl := range workloads[:4] {
				if rs.rate(p, c.key, wl.key, wl.phase) > 0 {
					cols = append(cols, col{p, c.key})
					break
				}
			}
		}
	}
	if len(cols) == 0 {
		return fmt.Errorf("no results to plot")
	}
	var dat strings.Builder
	dat.WriteString("workload")
	for _, c := range cols {
		dat.WriteString(" " + c.target + "-" + c.class)
	}
	dat.WriteString("\n")
	for _, wl := range workloads[:4] {
		fmt.Fprintf(&dat, "%q", "("+wl.key+")")
		for _, c := range cols {
			if v := rs.rate(c.target, c.class, wl.key, wl.phase); v > 0 {
				fmt.Fprintf(&dat, " %.0f", v)
			} else {
				dat.WriteString(" 0")
			}
		}
		dat.WriteString("\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "chart.dat"), []byte(dat.String()), 0o644); err != nil {
		return err
	}
	script := `set terminal pngcairo size 1100,520 font "sans,10"
set output "chart.png"
set title "msgs/s, 1 KiB messages, loopback (higher is better; log scale)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y
set yrange [100:*]
set datafile missing "0"
set grid ytics
set key outside right top
set xtics ("(a) sync send" 0, "(b) async x64" 1, "(c) batched" 2, "(d) consume backlog" 3)
plot for [i=2:%d] "chart.dat" using i title columnheader(i)
`
	script = fmt.Sprintf(script, len(cols)+1)
	if err := os.WriteFile(filepath.Join(dir, "chart.gp"), []byte(script), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(gp, "chart.gp")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("gnuplot: %v: %s", err, out)
	}
	return nil
}

// Scale is written by the script's scale section: the broker's resident
// anonymous memory (RssAnon, KiB: heap and stacks, not the mapped store
// files) at each step.
type Scale struct {
	TopicsSmall    int    `json:"topics_small"`
	TopicsLarge    int    `json:"topics_large"`
	QueuesPerTopic int    `json:"queues_per_topic"`
	IdleConns      int    `json:"idle_conns"`
	RSSStart       int64  `json:"rss_kib_start"`
	RSSAfterSmall  int64  `json:"rss_kib_after_small"`
	RSSAfterLarge  int64  `json:"rss_kib_after_large"`
	RSSWithIdle    int64  `json:"rss_kib_with_idle"`
	IdleOpen       string `json:"idle_open"`
}

func writeScale(w *strings.Builder, rs results, sc *Scale) {
	if sc == nil {
		return
	}
	rate := func(name string) float64 {
		if r := rs[name]; r != nil {
			if p := r.Phase("produce"); p != nil {
				return p.MsgsPerSec
			}
		}
		return 0
	}
	small := rate(fmt.Sprintf("scale-topics-%d", sc.TopicsSmall))
	large := rate(fmt.Sprintf("scale-topics-%d", sc.TopicsLarge))
	idle := rate(fmt.Sprintf("scale-conns-%d", sc.IdleConns))
	fmt.Fprintf(w, "\n## Scale (Tide ASYNC_FLUSH, async 64 in flight, one broker process)\n\n")
	w.WriteString("| run | msgs/s | vs 8 topics, no idle connections | target | broker RssAnon after |\n|---|---|---|---|---|\n")
	row := func(name string, v float64, rss int64) {
		x := "-"
		v10 := "-"
		if small > 0 && v > 0 {
			x = fmt.Sprintf("%.2f", v/small)
			v10 = verdict(v/small >= 0.9, fmt.Sprintf("(%.0f%% slower)", (1-v/small)*100))
		}
		fmt.Fprintf(w, "| %s | %s | %s | within 10%%: %s | %.0f MiB |\n", name, fmtRate(v), x, v10, float64(rss)/1024)
	}
	fmt.Fprintf(w, "| %d topics x %d queues | %s | 1.00 | | %.0f MiB |\n", sc.TopicsSmall, sc.QueuesPerTopic, fmtRate(small), float64(sc.RSSAfterSmall)/1024)
	row(fmt.Sprintf("%d topics x %d queues", sc.TopicsLarge, sc.QueuesPerTopic), large, sc.RSSAfterLarge)
	row(fmt.Sprintf("8 topics + %d idle client connections", sc.IdleConns), idle, sc.RSSWithIdle)
	queues := (sc.TopicsLarge - sc.TopicsSmall) * sc.QueuesPerTopic
	if queues > 0 {
		fmt.Fprintf(w, "\nMemory per queue (RssAnon growth from %d to %d topics, each queue written; the queue's mapped file adds its touched pages, 4 KiB for the first 204 messages): %.1f KiB. ",
			sc.TopicsSmall, sc.TopicsLarge, float64(sc.RSSAfterLarge-sc.RSSAfterSmall)/float64(queues))
	}
	if sc.IdleConns > 0 {
		fmt.Fprintf(w, "Memory per idle connection (RssAnon growth while %d connections, each registered with one heartbeat, are open): %.1f KiB (%s).\n",
			sc.IdleConns, float64(sc.RSSWithIdle-sc.RSSAfterLarge)/float64(sc.IdleConns), sc.IdleOpen)
	}
}

func cpuCols() []string {
	var cols []string
	for _, c := range classes {
		for _, p := range columns {
			cols = append(cols, p+" "+c.key+" us")
		}
	}
	return cols
}
