package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
)

// TestSmoke runs every mode against an in-process broker with a few
// hundred messages, driven by pkg/mqclient and by the official client: it
// checks that mqbench works, not how fast.
func TestSmoke(t *testing.T) {
	ns := nameservertest.Start(t)
	brokertest.Start(t, ns)
	tests := []struct {
		name string
		args []string
		want []string // phases
	}{
		{"sync", []string{"-mode", "produce", "-send", "sync", "-count", "200", "-inflight", "2"}, []string{"produce"}},
		{"async", []string{"-mode", "produce", "-send", "async", "-count", "300", "-inflight", "32", "-topics", "2"}, []string{"produce"}},
		{"oneway", []string{"-mode", "produce", "-send", "oneway", "-count", "100"}, []string{"produce"}},
		{"plain", []string{"-mode", "produce", "-send", "async", "-count", "100", "-no-idempotence"}, []string{"produce"}},
		{"batch", []string{"-mode", "produce", "-send", "batch", "-batch", "16", "-count", "320", "-size", "100"}, []string{"produce"}},
		{"rate", []string{"-mode", "produce", "-send", "sync", "-rate", "400", "-duration", "500ms", "-warmup", "100ms"}, []string{"produce"}},
		{"backlog", []string{"-mode", "backlog", "-count", "500", "-batch", "50", "-queues", "4"}, []string{"preload", "consume"}},
		{"e2e", []string{"-mode", "e2e", "-send", "async", "-inflight", "8", "-rate", "300", "-duration", "1s", "-warmup", "0s"}, []string{"e2e"}},
		// smoke adds -cpuprofile and -memprofile files and checks them.
		{"profiles", []string{"-mode", "produce", "-send", "sync", "-count", "100"}, []string{"produce"}},
	}
	for _, target := range []string{"tide", "tide-official"} {
		for _, tc := range tests {
			t.Run(target+"/"+tc.name, func(t *testing.T) { smoke(t, target, ns, tc.name, tc.args, tc.want) })
		}
	}
}

func smoke(t *testing.T, target, ns, mode string, extra, want []string) {
	out := filepath.Join(t.TempDir(), "r.json")
	args := append([]string{"-target", target, "-addr", ns, "-q", "-json", out, "-timeout", "60s"}, extra...)
	cpuProf, memProf := filepath.Join(t.TempDir(), "cpu.pprof"), filepath.Join(t.TempDir(), "mem.pprof")
	if mode == "profiles" {
		args = append(args, "-cpuprofile", cpuProf, "-memprofile", memProf)
	}
	var stdout, stderr bytes.Buffer
	if err := runMain(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("mqbench %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	r, err := readResult(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Phases) != len(want) {
		t.Fatalf("phases %+v, want %v", r.Phases, want)
	}
	for i, name := range want {
		p := r.Phases[i]
		if p.Name != name || p.Messages <= 0 || p.MsgsPerSec <= 0 || p.Errors != 0 {
			t.Errorf("phase %d = %+v, want %s with messages and no errors", i, p, name)
		}
	}
	if c := r.Config.Count; c > 0 && mode != "backlog" && r.Phases[0].Messages != c {
		t.Errorf("%d messages measured, want %d", r.Phases[0].Messages, c)
	}
	if mode == "e2e" && (r.Phases[0].E2E == nil || r.Phases[0].E2E.Count == 0) {
		t.Errorf("no end-to-end latency: %+v", r.Phases[0])
	}
	if mode == "profiles" {
		for _, f := range []string{cpuProf, memProf} {
			if st, err := os.Stat(f); err != nil || st.Size() == 0 {
				t.Errorf("profile %s not written: %v", f, err)
			}
		}
	}
	if !strings.Contains(stdout.String(), "msgs/s") {
		t.Errorf("text summary missing: %q", stdout.String())
	}
}

func TestConfigErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-mode", "nope"},
		{"-send", "nope"},
		{"-size", "8"},
		{"-mode", "backlog"},
		{"-inflight", "0"},
		{"-rate", "-1"},
		{"extra"},
	} {
		if _, err := parseConfig(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func TestStamp(t *testing.T) {
	b := make([]byte, 16)
	now := time.Now()
	stamp(b, now, true)
	ts, meas := parseStamp(b)
	if !ts.Equal(time.Unix(0, now.UnixNano())) || !meas {
		t.Fatalf("got %v %v", ts, meas)
	}
	stamp(b, now, false)
	if _, meas := parseStamp(b); meas {
		t.Fatal("warm-up message parsed as measured")
	}
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "results")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, v any) {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(in, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lat := &Latency{Count: 10, P50: 100, P99: 900, P999: 2000, Max: 3000}
	for _, tg := range []struct{ target, class string }{{"tide", "async"}, {"tide-official", "async"}, {"nats", "async"}, {"tide", "sync"}} {
		for _, wl := range []string{"a", "b"} {
			write(tg.target+"-"+tg.class+"-"+wl+".json", Result{Target: tg.target, ServerVersion: "v1", ClientVersion: "c1",
				Phases:    []Phase{{Name: "produce", Messages: 100, Seconds: 1, MsgsPerSec: 1000, MBPerSec: 1, Latency: lat}},
				ClientCPU: 0.002, ServerCPU: 0.001, SentTotal: 100})
		}
	}
	write("limits.json", Limits{SeqWriteMBps: 500, FsyncPerSec: 3000, LoopbackMBps: 1400, LimitMsgsPerSe: 488000})
	var out bytes.Buffer
	if err := runReport([]string{"-in", in, "-out", dir, "-machine", "test box", "-no-chart"}, &out, &out); err != nil {
		t.Fatalf("report: %v\n%s", err, out.String())
	}
	md, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"test box", "| (a)", "ours / best peer", "1.00 (nats)", "20x", "Tide (official client) msgs/s",
		"broker CPU per message with Tide (official client) <= the NATS server's | 10.0 vs 10.0 us | met"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
