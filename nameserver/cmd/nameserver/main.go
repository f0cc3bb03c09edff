// Command nameserver runs Tide's RocketMQ-compatible NameServer.
//
//	nameserver [-c namesrv.properties] [-p port] [-b bindAddress]
//
// The optional -c file is a Java properties file with RocketMQ's key names
// (see config.go and README.md); flags override it. The daemon logs to
// stderr and shuts down gracefully on SIGINT or SIGTERM. Any configuration
// or start-up error is printed as one line and exits with status 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/tidemq/tide/pkg/remoting"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/tidemq/tide/nameserver"
)

// shutdownTimeout bounds the graceful stop after a signal.
const shutdownTimeout = 30 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stderr, nil)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nameserver: %v\n", err)
		os.Exit(1)
	}
}

// run is the whole program: it parses args, starts the NameServer, calls
// started (if not nil) with the listen address, blocks until ctx is done
// and shuts down. It returns configuration, start and shutdown errors.
func run(ctx context.Context, args []string, stderr io.Writer, started func(addr string)) error {
	fs := flag.NewFlagSet("nameserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	confFile := fs.String("c", "", "properties `file` with RocketMQ key names (listenPort, bindAddress, kvConfigPath, ...)")
	port := fs.String("p", "", "listen `port` (overrides listenPort; default 9876)")
	bind := fs.String("b", "", "bind `address` (overrides bindAddress; default 0.0.0.0)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus /metrics and /healthz over HTTP on `host:port` (default off)")
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

	cfg := defaultConfig()
	if *confFile != "" {
		if err := cfg.load(*confFile); err != nil {
			return err
		}
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "p":
			cfg.listenPort = *port
		case "b":
			cfg.bindAddress = *bind
		}
	})
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	opts, err := cfg.options(logger)
	if err != nil {
		return err
	}

	opts.MetricsListenAddr = *metricsAddr
	ns, err := nameserver.New(opts)
	if err != nil {
		return err
	}
	if err := ns.Start(ctx); err != nil {
		return err
	}
	// Start has logged "nameserver started addr=...".
	if started != nil {
		started(ns.Addr())
	}
	<-ctx.Done()
	logger.Info("signal received, shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return ns.Shutdown(sctx)
}

// parsePort checks a port number given as text.
func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 65535 {
		return 0, fmt.Errorf("bad listen port %q: want a number in 0..65535", s)
	}
	return n, nil
}
