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
	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/middleware/tracing"
	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/go-kratos/kratos/v2/transport/http"

	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/inventory/internal/server"
	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/kit/telemetry"
)

// Name and Version are set with -ldflags "-X main.Version=…".
var (
	Name    = "inventory"
	Version = "dev"
)

func newApp(logger log.Logger, gs *grpc.Server, hs *http.Server, cs *server.ConsumerServer, rc *server.Reconciler, cu *server.Cleanup) *kratos.App {
	id, _ := os.Hostname()
	return kratos.New(
		kratos.ID(id),
		kratos.Name(Name),
		kratos.Version(Version),
		kratos.Logger(logger),
		kratos.Server(gs, hs, cs, rc, cu),
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
	slogger := slog.New(telemetry.TraceHandler{Handler: slog.NewJSONHandler(os.Stdout, nil)}).With("service", Name)
	logger := log.With(log.NewStdLogger(os.Stdout), "ts", log.DefaultTimestamp, "service", Name,
		"trace_id", tracing.TraceID(), "span_id", tracing.SpanID())
	// ${NAME:default} placeholders in the file resolve from the environment.
	var bc conf.Bootstrap
	if err := boot.Load(path, &bc); err != nil {
		return err
	}
	id, _ := os.Hostname()
	stopTracing, err := setupTracing(bc.Observability, id)
	if err != nil {
		return err
	}
	defer stopTracing()
	app, cleanup, err := wireApp(bc.Server, bc.Data, bc.Messaging, bc.Fault, bc.Reconcile, bc.Cleanup, logger, slogger)
	if err != nil {
		return err
	}
	defer cleanup()
	return app.Run()
}

// setupTracing installs the service's tracer provider (exporting over
// OTLP/HTTP when observability.otlp_endpoint is set) and the W3C
// propagators (telemetry.Setup). The returned func flushes queued spans;
// call it once, after the app stopped.
func setupTracing(c *conf.Observability, instance string) (func(), error) {
	return telemetry.Setup(telemetry.Options{Name: Name, Version: Version, Instance: instance, Endpoint: c.GetOtlpEndpoint()})
}
