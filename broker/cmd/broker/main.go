// Command broker runs Tide's RocketMQ-compatible broker.
//
//	broker -c broker.conf [-n namesrvAddr]
//
// broker.conf is a Java properties file with RocketMQ's key names
// (brokerClusterName, brokerName, brokerId, brokerRole, listenPort,
// namesrvAddr, brokerIP1, storePathRootDir, flushDiskType, ...). Keys the
// broker does not know are logged as warnings; a value that does not parse
// or validate stops start-up with a one-line message and exit status 1.
// -n overrides namesrvAddr (';'-separated). SIGINT/SIGTERM shut the broker
// down gracefully: stop accepting, drain, flush, persist.
//
// The garbage collector runs at GOGC=400 unless the GOGC environment
// variable says otherwise (see defaultGCPercent).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/props"
	"github.com/tidemq/tide/pkg/remoting"
)

// Version is set at build time (-ldflags "-X main.Version=...").
var Version = "dev"

const shutdownTimeout = 30 * time.Second

// defaultGCPercent is the broker's GOGC when the environment sets none.
// The broker's live heap is small (message data lives in the mapped commit
// log, not on the heap) while every request allocates, so at Go's default
// of 100 the collector ran several times a second under load and, with it,
// scanned every connection goroutine's stack: 400 doubled the in-process
// send benchmark's async throughput (docs/benchmarks/analysis.md). The
// heap may grow to five times the live data, typically tens of MiB.
const defaultGCPercent = 400

// tuneGC applies defaultGCPercent unless GOGC is set (the runtime has
// read it already) and returns the percent in effect.
func tuneGC(getenv func(string) string) int {
	if v := getenv("GOGC"); v != "" {
		p := debug.SetGCPercent(100) // read the runtime's value back
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(defaultGCPercent)
	return defaultGCPercent
}

func main() {
	tuneGC(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stderr, nil)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "broker: %v\n", err)
		os.Exit(1)
	}
}

// run is the whole program; started (if not nil) gets the broker's address
// once it serves.
func run(ctx context.Context, args []string, stderr io.Writer, started func(addr string)) error {
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	confFile := fs.String("c", "", "broker.conf `file` (Java properties with RocketMQ key names)")
	namesrv := fs.String("n", "", "NameServer `addresses`, ';'-separated (overrides namesrvAddr)")
	level := fs.String("loglevel", "info", "log `level`: debug, info, warn or error")
	healthcheck := fs.String("healthcheck", "", "probe the daemon at `host:port` and exit 0 if it answers (container healthchecks)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *healthcheck != "" {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		return remoting.Probe(ctx, *healthcheck)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("-loglevel: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))

	opts := broker.DefaultOptions()
	if *confFile != "" {
		entries, err := props.ParseFile(*confFile)
		if err != nil {
			return err
		}
		kv := make(map[string]string, len(entries))
		for _, e := range entries {
			kv[e.Key] = e.Value
		}
		unknown, err := opts.Apply(kv)
		if err != nil {
			return fmt.Errorf("%s: %w", *confFile, err)
		}
		for _, k := range unknown {
			logger.Warn("unknown broker.conf key ignored", "key", k, "file", *confFile)
		}
	}
	if *namesrv != "" {
		opts.NamesrvAddr = *namesrv
	}
	b, err := broker.New(opts, logger)
	if err != nil {
		return err
	}
	if err := b.Start(ctx); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = b.Shutdown(sctx)
		return err
	}
	logger.Info("tide broker ready", "version", Version, "addr", b.Addr())
	if started != nil {
		started(b.Addr())
	}
	<-ctx.Done()
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return b.Shutdown(sctx)
}
