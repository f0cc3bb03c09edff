// Command payment runs the payment service: accounts, payments through
// transactional messages, refunds of cancelled orders, HTTP and gRPC APIs.
//
//	go run ./services/payment/cmd/payment -conf services/payment/configs
package main

import (
	"log/slog"
	"os"

	"github.com/go-kratos/kratos/v2/transport"
	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/go-kratos/kratos/v2/transport/http"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/pkg/mqclient/metrics"

	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/kit/cleanup"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
	"github.com/tidemq/tide/services/kit/telemetry"
	"github.com/tidemq/tide/services/kit/topics"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/data"
	"github.com/tidemq/tide/services/payment/internal/fault"
	"github.com/tidemq/tide/services/payment/internal/server"
)

// Version is set with -ldflags "-X main.Version=…".
var Version = "dev"

func main() { boot.Serve(boot.Info{Name: "payment", Version: Version}, "configs", wireApp) }

// newServers lists the service's servers in start order (boot.NewApp
// stops them in reverse).
func newServers(gs *grpc.Server, hs *http.Server, cs *server.ConsumerServer, rc *rechttp.Reconciler, cu *cleanup.Service) []transport.Server {
	return []transport.Server{gs, hs, cs, rc, cu}
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
func newRegistry() *prometheus.Registry { return telemetry.NewRegistry() }

// newMQMetrics registers mqclient's producer and consumer metrics.
func newMQMetrics(r prometheus.Registerer) (*metrics.Metrics, error) { return metrics.New(r) }

// newReadiness is the /readyz check: the database, Redis and a
// NameServer answer.
func newReadiness(d *data.Data, m *conf.Messaging) api.Ready {
	return api.AllReady(d.Ping, api.Dials("name server", topics.SplitAddrs(m.GetNameServers())))
}
