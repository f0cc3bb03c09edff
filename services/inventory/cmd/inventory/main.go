// Command inventory runs the inventory service: products and stock,
// reservations driven by order events, HTTP and gRPC APIs.
//
//	go run ./services/inventory/cmd/inventory -conf services/inventory/configs
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/go-kratos/kratos/v2"
	"github.com/go-kratos/kratos/v2/config"
	"github.com/go-kratos/kratos/v2/config/env"
	"github.com/go-kratos/kratos/v2/config/file"
	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/middleware/tracing"
	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/go-kratos/kratos/v2/transport/http"

	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/inventory/internal/server"
)

// Name and Version are set with -ldflags "-X main.Version=…".
var (
	Name    = "inventory"
	Version = "dev"
)

func newApp(logger log.Logger, gs *grpc.Server, hs *http.Server, cs *server.ConsumerServer, rc *server.Reconciler) *kratos.App {
	id, _ := os.Hostname()
	return kratos.New(
		kratos.ID(id),
		kratos.Name(Name),
		kratos.Version(Version),
		kratos.Logger(logger),
		kratos.Server(gs, hs, cs, rc),
	)
}

func main() {
	flagconf := flag.String("conf", "configs", "config file or directory, eg: -conf config.yaml")
	flag.Parse()
	if err := run(*flagconf); err != nil {
		fmt.Fprintln(os.Stderr, "inventory:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	slogger := slog.New(server.TraceHandler{Handler: slog.NewJSONHandler(os.Stdout, nil)}).With("service", Name)
	logger := log.With(log.NewStdLogger(os.Stdout), "ts", log.DefaultTimestamp, "service", Name,
		"trace_id", tracing.TraceID(), "span_id", tracing.SpanID())
	c := config.New(config.WithSource(env.NewSource(), file.NewSource(path)), config.WithResolveActualTypes(true))
	defer c.Close()
	if err := c.Load(); err != nil {
		return err
	}
	var bc conf.Bootstrap
	if err := c.Scan(&bc); err != nil {
		return err
	}
	id, _ := os.Hostname()
	stopTracing, err := setupTracing(bc.Observability, id)
	if err != nil {
		return err
	}
	defer stopTracing()
	app, cleanup, err := wireApp(bc.Server, bc.Data, bc.Messaging, bc.Fault, bc.Reconcile, logger, slogger)
	if err != nil {
		return err
	}
	defer cleanup()
	return app.Run()
}
