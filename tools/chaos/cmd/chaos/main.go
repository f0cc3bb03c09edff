// Command chaos runs a randomized fault campaign against a Tide cluster
// and checks the recorded history (docs/reliability.md).
//
//	chaos [-seed N] [-duration 5m] [-mode masterslave|controller] [-drain 2m] [-dir DIR] [-root REPO]
//	chaos -check history.jsonl [-live 1m]
//	chaos -schedule -seed N -duration D
//
// It needs root (network namespaces, iptables, tc). Exit status: 0 no
// violation, 1 violations, 2 the campaign could not run or be checked,
// 3 skipped (network namespaces unavailable; the reason is printed).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tidemq/tide/tools/chaos"
)

func main() {
	os.Exit(run())
}

func run() int {
	o := chaos.DefaultOptions()
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.Int64Var(&o.Seed, "seed", o.Seed, "seed of the fault schedule and the workload")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "how long faults are injected")
	fs.StringVar(&o.Mode, "mode", o.Mode, "cluster: masterslave (SYNC_MASTER + SLAVE) or controller (3 controllers, automatic failover)")
	fs.DurationVar(&o.Drain, "drain", o.Drain, "how long to wait, after healing, for every acknowledged message")
	fs.StringVar(&o.Dir, "dir", "", "output `directory` (default bin/chaos-runs/seed-N-TIME under the repository)")
	fs.StringVar(&o.Root, "root", "", "repository `root` (default: git rev-parse --show-toplevel)")
	check := fs.String("check", "", "only check the history `file` and print the report")
	schedule := fs.Bool("schedule", false, "only print the fault schedule of -seed and -duration")
	live := fs.Duration("live", -1, "with -check: the campaign is still running; messages acknowledged or due within this `grace` of the history's end are not required yet")
	maxV := fs.Int("max-violations", 50, "print at most this many violations (0: all)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *schedule {
		for _, f := range chaos.Schedule(o.Seed, o.Duration, chaos.ConsumerInstances, o.Mode) {
			fmt.Printf("%8.1fs  %s\n", f.At.Seconds(), f)
		}
		return 0
	}
	if *check != "" {
		events, err := chaos.ReadHistoryFile(*check)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 2
		}
		rep, err := chaos.CheckLive(events, *live)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 2
		}
		rep.Print(os.Stdout, *maxV)
		if !rep.OK() {
			return 1
		}
		return 0
	}
	if o.Root == "" {
		out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos: -root not given and not in a git work tree")
			return 2
		}
		o.Root = strings.TrimSpace(string(out))
	}
	if o.Dir == "" {
		o.Dir = filepath.Join(o.Root, "bin", "chaos-runs", fmt.Sprintf("seed-%d-%s", o.Seed, time.Now().Format("20060102-150405")))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := chaos.Run(ctx, o)
	if errors.Is(err, chaos.ErrNoNetns) {
		fmt.Printf("chaos: SKIPPED: %v\n", err)
		return 3
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	f, err := os.Create(filepath.Join(o.Dir, "report.txt"))
	if err == nil {
		rep.Print(f, 0)
		f.Close()
	}
	rep.Print(os.Stdout, *maxV)
	fmt.Printf("history %s, report %s\n", filepath.Join(o.Dir, "history.jsonl"), filepath.Join(o.Dir, "report.txt"))
	if !rep.OK() {
		fmt.Printf("FAILED: %d violations (reproduce: make chaos SEED=%d DURATION=%v MODE=%s)\n", len(rep.Violations), o.Seed, o.Duration, o.Mode)
		return 1
	}
	fmt.Println("OK: no violations")
	return 0
}
