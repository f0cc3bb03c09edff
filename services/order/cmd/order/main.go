// Command order runs the order service: the Order API over HTTP and gRPC,
// the consumers of inventory and payment events and of the delayed
// cancellation timers, and the overdue-order sweeper.
//
//	go run ./services/order/cmd/order -conf services/order/configs
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

	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/kit/telemetry"
	"github.com/tidemq/tide/services/order/internal/conf"
	"github.com/tidemq/tide/services/order/internal/server"
)

var (
	// Name is the service name.
	Name = "order"
	// Version is set by the build (-ldflags "-X main.Version=...").
	Version = "dev"

	flagconf string
	id, _    = os.Hostname()
)

func init() {
	flag.StringVar(&flagconf, "conf", "../../configs", "config path (a file or a directory), e.g. -conf config.yaml")
}

func newApp(logger log.Logger, gs *grpc.Server, hs *http.Server, cs *server.Consumer, sw *server.Sweeper, cu *server.Cleanup) *kratos.App {
	return kratos.New(
		kratos.ID(id),
		kratos.Name(Name),
		kratos.Version(Version),
		kratos.Metadata(map[string]string{}),
		kratos.Logger(logger),
		kratos.Server(gs, hs, cs, sw, cu),
	)
}

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "order:", err)
		os.Exit(1)
	}
}

func run() error {
	// pkg/mqclient and the pattern packages log through slog.Default():
	// JSON with trace_id/span_id when the call carries a span.
	slog.SetDefault(slog.New(telemetry.TraceHandler{Handler: slog.NewJSONHandler(os.Stdout, nil)}).With("service", Name))
	logger := log.With(log.NewStdLogger(os.Stdout),
		"ts", log.DefaultTimestamp,
		"caller", log.DefaultCaller,
		"service.id", id,
		"service.name", Name,
		"service.version", Version,
		"trace_id", tracing.TraceID(),
		"span_id", tracing.SpanID(),
	)
	// ${NAME:default} placeholders in the file resolve from the environment.
	var bc conf.Bootstrap
	if err := boot.Load(flagconf, &bc); err != nil {
		return err
	}
	stopTracing, err := setupTracing(bc.GetObservability(), id)
	if err != nil {
		return err
	}
	defer stopTracing()
	app, cleanup, err := wireApp(bc.GetServer(), bc.GetData(), bc.GetMq(), bc.GetOrder(), bc.GetInventory(), bc.GetFault(), bc.GetCleanup(), logger)
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
