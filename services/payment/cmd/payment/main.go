// Command payment runs the payment service: accounts, payments through
// transactional messages, refunds of cancelled orders, HTTP and gRPC APIs.
//
//	go run ./services/payment/cmd/payment -conf services/payment/configs
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
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tidemq/tide/pkg/mqclient/metrics"

	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/kit/telemetry"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/fault"
	"github.com/tidemq/tide/services/payment/internal/server"
)

// Name and Version are set with -ldflags "-X main.Version=…".
var (
	Name    = "payment"
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

// newOptions maps the config onto the use case's options.
func newOptions(m *conf.Messaging) biz.Options {
	return biz.Options{LocalTxTimeout: m.GetLocalTxTimeout().AsDuration()}
}

// newFaults arms the fault switches the config enables (count 0: every
// time). Crash faults end the process with os.Exit(fault.ExitCode).
func newFaults(f *conf.Fault, l *slog.Logger) *fault.Set {
	on := map[string]fault.Spec{
		fault.CrashAfterCommit:           {Enabled: f.GetCrashAfterCommit()},
		fault.CrashBeforeCommit:          {Enabled: f.GetCrashBeforeCommit()},
		fault.SlowLocalTx:                {Enabled: f.GetSlowLocalTx().AsDuration() > 0, Delay: f.GetSlowLocalTx().AsDuration()},
		fault.GatewayTimeoutAfterCapture: {Enabled: f.GetGatewayTimeoutAfterCapture()},
		fault.GatewayDuplicateCallback:   {Enabled: f.GetGatewayDuplicateCallback()},
		fault.CrashAfterEffect:           {Enabled: f.GetCrashAfterEffect()},
		fault.DeliverTwice:               {Enabled: f.GetDeliverTwice()},
	}
	return fault.New(on, os.Exit, l)
}

// newRegistry is the service's Prometheus registry (GET /metrics): Go and
// process collectors plus the pattern packages' metrics.
func newRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// newMQMetrics registers mqclient's producer and consumer metrics.
func newMQMetrics(r prometheus.Registerer) (*metrics.Metrics, error) { return metrics.New(r) }

func main() {
	flagconf := flag.String("conf", "configs", "config file or directory, eg: -conf config.yaml")
	flag.Parse()
	if err := run(*flagconf); err != nil {
		fmt.Fprintln(os.Stderr, "payment:", err)
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
	app, cleanup, err := wireApp(bc.Server, bc.Data, bc.Messaging, bc.Fault, bc.Order, bc.Reconcile, bc.Cleanup, logger, slogger)
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
