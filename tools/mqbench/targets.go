package main

import (
	"fmt"
	"strings"
)

// The targets the report checks: issue 21 for the ack-before-fsync class,
// CPU and tail latency; issue 11's for the SYNC class, which issue 21
// requires not to regress.

func verdict(ok bool, by string) string {
	if ok {
		return "met"
	}
	return "**missed** " + by
}

// check is one row of the targets table.
type check [3]string

func ratioCheck(name string, ours, base, need float64) check {
	x := ours / base
	return check{name, fmt.Sprintf("%s vs %s = %.2fx", fmtRate(ours), fmtRate(base), x),
		verdict(x >= need, fmt.Sprintf("(%.0f%% short)", (1-x/need)*100))}
}

// atMost checks that ours (a cost) is at most base's.
func atMost(name, unit string, ours, base float64) check {
	return check{name, fmt.Sprintf("%.1f vs %.1f %s", ours, base, unit),
		verdict(ours <= base, fmt.Sprintf("(%.2fx)", ours/base))}
}

func targetChecks(rs results, lim Limits) [][3]string {
	var out []check
	for _, c := range classes {
		for _, wl := range workloads {
			if wl.key == "d" {
				continue // consume: no issue 21 target, issue 11's was met
			}
			ours := rs.rate("tide", c.key, wl.key, wl.phase)
			if ours == 0 {
				continue
			}
			need := 1.0
			if wl.key == "b" || wl.key == "c" {
				need = 1.5
			}
			if nats := rs.rate("nats", c.key, wl.key, wl.phase); nats > 0 && (c.key == "sync" || need > 1) {
				out = append(out, ratioCheck(fmt.Sprintf("%s %s: >= %.1fx NATS", c.key, wl.title, need), ours, nats, need))
			}
			if peer, v := rs.best(c.key, wl.key, wl.phase); c.key == "async" && v > 0 {
				out = append(out, ratioCheck(fmt.Sprintf("async %s: >= 1.0x the best peer (%s)", wl.title, peer), ours, v, 1))
			}
		}
	}
	out = append(out, cpuChecks(rs)...)
	for _, c := range classes {
		if ph := rs.phase("tide", c.key, "e", "e2e"); ph != nil && ph.Latency != nil && ph.E2E != nil {
			out = append(out, check{c.key + ": sync send p99 < 1 ms at 50% load", us(ph.Latency.P99),
				verdict(ph.Latency.P99 < 1000, fmt.Sprintf("(%.1fx)", float64(ph.Latency.P99)/1000))})
			out = append(out, check{c.key + ": end-to-end p99 < 5 ms at 50% load", us(ph.E2E.P99),
				verdict(ph.E2E.P99 < 5000, fmt.Sprintf("(%.1fx)", float64(ph.E2E.P99)/5000))})
		}
	}
	if lim.LimitMsgsPerSe > 0 {
		best := max(rs.rate("tide", "async", "b", "produce"), rs.rate("tide", "async", "c", "produce"))
		x := best / lim.LimitMsgsPerSe
		out = append(out, check{"async 1 KiB ingestion >= 25% of min(loopback, disk)",
			fmt.Sprintf("%s of %s = %.0f%%", fmtRate(best), fmtRate(lim.LimitMsgsPerSe), x*100),
			verdict(x >= 0.25, fmt.Sprintf("(%.0f%% short)", (1-x/0.25)*100))})
	}
	if lim.FsyncPerSec > 0 {
		v := rs.rate("tide", "sync", "b", "produce")
		x := v / lim.FsyncPerSec
		out = append(out, check{"SYNC_FLUSH, 64 in flight >= 20x the single-writer fsync rate",
			fmt.Sprintf("%s / %.0f fsync/s = %.1fx", fmtRate(v), lim.FsyncPerSec, x),
			verdict(x >= 20, fmt.Sprintf("(%.0f%% short)", (1-x/20)*100))})
	}
	rows := make([][3]string, len(out))
	for i, c := range out {
		rows[i] = c
	}
	return rows
}

// cpuChecks: client + server CPU per message at most NATS's on (a)-(e) of
// the async class, and the broker's own CPU per message on (b) at most the
// NATS server's, with pkg/mqclient and with the official client.
func cpuChecks(rs results) []check {
	var out []check
	for _, wl := range workloads {
		t, n := rs.get("tide", "async", wl.key), rs.get("nats", "async", wl.key)
		if t == nil || n == nil || t.CPUPerMsg() == 0 || n.CPUPerMsg() == 0 {
			continue
		}
		out = append(out, atMost("async "+wl.title+": client + server CPU per message <= NATS's", "us", t.CPUPerMsg(), n.CPUPerMsg()))
	}
	n := rs.get("nats", "async", "b")
	if n == nil || n.ServerCPUPerMsg() == 0 {
		return out
	}
	for _, target := range []string{"tide", "tide-official"} {
		if t := rs.get(target, "async", "b"); t != nil && t.ServerCPUPerMsg() > 0 {
			out = append(out, atMost(fmt.Sprintf("async (b): broker CPU per message with %s <= the NATS server's", columnTitle[target]),
				"us", t.ServerCPUPerMsg(), n.ServerCPUPerMsg()))
		}
	}
	return out
}

// writeServerCPU writes the servers' own CPU per message: what the broker
// costs whatever the client spends.
func writeServerCPU(w *strings.Builder, rs results) {
	writeCPUTable(w, rs, "Server CPU time per message sent (the broker's or server's own processes only; "+
		"the Tide columns differ only in the client driving the same broker)", "%.1f", (*Result).ServerCPUPerMsg)
}

// writeCPUTable writes one row per workload that has a value, one column
// per class and target, values in microseconds per message from perMsg
// (0 = none); nothing when no workload has one.
func writeCPUTable(w *strings.Builder, rs results, title, format string, perMsg func(*Result) float64) {
	var rows []string
	for _, wl := range workloads {
		row := []string{wl.title}
		any := false
		for _, c := range classes {
			for _, p := range columns {
				v := 0.0
				if r := rs.get(p, c.key, wl.key); r != nil {
					v = perMsg(r)
				}
				if v > 0 {
					any = true
					row = append(row, fmt.Sprintf(format, v))
				} else {
					row = append(row, "-")
				}
			}
		}
		if any {
			rows = append(rows, "| "+strings.Join(row, " | ")+" |\n")
		}
	}
	if len(rows) == 0 {
		return
	}
	cols := cpuCols()
	w.WriteString(title + ":\n\n| workload | " + strings.Join(cols, " | ") + " |\n|---" + strings.Repeat("|---", len(cols)) + "|\n")
	for _, r := range rows {
		w.WriteString(r)
	}
	w.WriteString("\n")
}
