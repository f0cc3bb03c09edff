// Command inventory runs the inventory service: products and stock,
// reservations driven by order events, HTTP and gRPC APIs.
//
//	go run ./services/inventory/cmd/inventory -conf services/inventory/configs
package main

import (
	"github.com/go-kratos/kratos/v2"
	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/go-kratos/kratos/v2/transport/http"
	"log/slog"

	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/inventory/internal/data"
	"github.com/tidemq/tide/services/inventory/internal/server"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/kit/cleanup"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
)

// Name and Version are set with -ldflags "-X main.Version=…".
var (
	Name    = "inventory"
	Version = "dev"
)

func newApp(logger log.Logger, gs *grpc.Server, hs *http.Server, cs *server.ConsumerServer, rc *rechttp.Reconciler, cu *cleanup.Service) *kratos.App {
	return boot.App(Name, Version, logger, gs, hs, cs, rc, cu)
}

// newReadiness is the /readyz check: the database and Redis answer and
// the consumer runs (it started, so the NameServers answered).
func newReadiness(d *data.Data, c *server.ConsumerServer) api.Ready {
	return api.AllReady(d.Ping, api.Started("consumer", c.Running))
}

func main() { boot.Main(Name, "configs", run) }

func run(path string) error {
	var bc conf.Bootstrap
	endpoint := func() string { return bc.GetObservability().GetOtlpEndpoint() }
	return boot.Run(Name, Version, path, &bc, endpoint, func(logger *slog.Logger) (*kratos.App, func(), error) {
		return wireApp(bc.Server, bc.Data, bc.Messaging, bc.Fault, bc.Reconcile, bc.Cleanup, logger)
	})
}
