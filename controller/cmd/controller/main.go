// Command controller runs one node of Tide's broker-group controller
// (RocketMQ 5's controller mode on Raft; docs/controller.md).
//
//	controller -c controller.properties [-metrics host:port]
//
// The -c file is a Java properties file with RocketMQ's key names where
// they exist (config.go). The daemon logs to stderr and shuts down
// gracefully on SIGINT or SIGTERM; configuration and start-up errors are
// printed as one line and exit with status 1.
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
	"syscall"
	"time"

	"github.com/tidemq/tide/controller"
	"github.com/tidemq/tide/pkg/remoting"
)

// Version is set at build time (-ldflags -X main.Version=...).
var Version = "dev"

const shutdownTimeout = 30 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stderr, nil)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "controller: %v\n", err)
		os.Exit(1)
	}
}

// run is the whole program: parse, start, call started (if not nil) with
// the remoting address, wait for ctx, shut down.
func run(ctx context.Context, args []string, stderr io.Writer, started func(addr string)) error {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	confFile := fs.String("c", "", "properties `file` (required): controllerDLegerPeers, controllerDLegerSelfId, controllerRPCPeers, controllerStorePath, ...")
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
	if *confFile == "" {
		return errors.New("-c config file is required (the peers cannot be defaulted)")
	}
	cfg := defaultConfig()
	if err := cfg.load(*confFile); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	opts, err := cfg.options(logger)
	if err != nil {
		return err
	}
	opts.MetricsListenAddr = *metricsAddr
	c, err := controller.New(opts)
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	logger.Info("controller running", "version", Version)
	if started != nil {
		started(c.Addr())
	}
	<-ctx.Done()
	logger.Info("signal received, shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return c.Shutdown(sctx)
}
