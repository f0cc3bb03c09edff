// Command order runs the order service: the Order API over HTTP and gRPC,
// the consumers of inventory and payment events and of the delayed
// cancellation timers, and the overdue-order sweeper.
//
//	go run ./services/order/cmd/order -conf services/order/configs
package main

import (
	"github.com/go-kratos/kratos/v2/transport"
	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/go-kratos/kratos/v2/transport/http"

	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/kit/cleanup"
	"github.com/tidemq/tide/services/order/internal/data"
	"github.com/tidemq/tide/services/order/internal/server"
)

// Version is set by the build (-ldflags "-X main.Version=...").
var Version = "dev"

func main() { boot.Serve(boot.Info{Name: "order", Version: Version}, "../../configs", wireApp) }

// newServers lists the service's servers in start order (boot.NewApp
// stops them in reverse).
func newServers(gs *grpc.Server, hs *http.Server, cs *server.Consumer, sw *server.Sweeper, cu *cleanup.Service) []transport.Server {
	return []transport.Server{gs, hs, cs, sw, cu}
}

// newReadiness is the /readyz check: the database and Redis answer (d)
// and the consumers are running (they started, so the broker's
// NameServers answered).
func newReadiness(d *data.Data, c *server.Consumer) api.Ready {
	return api.AllReady(d.Ready, api.Started("consumers", c.Running))
}
