// Command order runs the order service: the Order API over HTTP and gRPC,
// the consumers of inventory and payment events and of the delayed
// cancellation timers, and the overdue-order sweeper.
//
//	go run ./services/order/cmd/order -conf services/order/configs
package main

import (
	"github.com/go-kratos/kratos/v2"
	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/go-kratos/kratos/v2/transport/http"
	"log/slog"

	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/kit/cleanup"
	"github.com/tidemq/tide/services/order/internal/conf"
	"github.com/tidemq/tide/services/order/internal/data"
	"github.com/tidemq/tide/services/order/internal/server"
)

var (
	// Name is the service name.
	Name = "order"
	// Version is set by the build (-ldflags "-X main.Version=...").
	Version = "dev"
)

func newApp(logger log.Logger, gs *grpc.Server, hs *http.Server, cs *server.Consumer, sw *server.Sweeper, cu *cleanup.Service) *kratos.App {
	return boot.App(Name, Version, logger, gs, hs, cs, sw, cu)
}

// newReadiness is the /readyz check: the database and Redis answer (d)
// and the consumers are running (they started, so the broker's
// NameServers answered).
func newReadiness(d *data.Data, c *server.Consumer) api.Ready {
	return api.AllReady(d.Ready, api.Started("consumers", c.Running))
}

func main() { boot.Main(Name, "../../configs", run) }

func run(path string) error {
	var bc conf.Bootstrap
	endpoint := func() string { return bc.GetObservability().GetOtlpEndpoint() }
	return boot.Run(Name, Version, path, &bc, endpoint, func(logger *slog.Logger) (*kratos.App, func(), error) {
		return wireApp(bc.GetServer(), bc.GetData(), bc.GetMq(), bc.GetOrder(), bc.GetInventory(), bc.GetFault(), bc.GetCleanup(), logger)
	})
}
