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
	"github.com/go-kratos/kratos/v2/config"
	"github.com/go-kratos/kratos/v2/config/env"
	"github.com/go-kratos/kratos/v2/config/file"
	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/middleware/tracing"
	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/go-kratos/kratos/v2/transport/http"

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

func newApp(logger log.Logger, gs *grpc.Server, hs *http.Server, cs *server.Consumer, sw *server.Sweeper) *kratos.App {
	return kratos.New(
		kratos.ID(id),
		kratos.Name(Name),
		kratos.Version(Version),
		kratos.Metadata(map[string]string{}),
		kratos.Logger(logger),
		kratos.Server(gs, hs, cs, sw),
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
	slog.SetDefault(slog.New(server.TraceHandler{Handler: slog.NewJSONHandler(os.Stdout, nil)}).With("service", Name))
	logger := log.With(log.NewStdLogger(os.Stdout),
		"ts", log.DefaultTimestamp,
		"caller", log.DefaultCaller,
		"service.id", id,
		"service.name", Name,
		"service.version", Version,
		"trace_id", tracing.TraceID(),
		"span_id", tracing.SpanID(),
	)
	// The environment is a source too, so ${MYSQL_DSN:default}
	// placeholders in the file resolve from it.
	c := config.New(config.WithSource(env.NewSource(), file.NewSource(flagconf)), config.WithResolveActualTypes(true))
	defer c.Close()
	if err := c.Load(); err != nil {
		return fmt.Errorf("load config: %w", err)
	}
	var bc conf.Bootstrap
	if err := c.Scan(&bc); err != nil {
		return fmt.Errorf("scan config: %w", err)
	}
	stopTracing, err := setupTracing(bc.GetObservability(), id)
	if err != nil {
		return err
	}
	defer stopTracing()
	app, cleanup, err := wireApp(bc.GetServer(), bc.GetData(), bc.GetMq(), bc.GetOrder(), bc.GetFault(), logger)
	if err != nil {
		return err
	}
	defer cleanup()
	return app.Run()
}
