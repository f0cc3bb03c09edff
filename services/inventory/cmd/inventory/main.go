// Command inventory runs the inventory service: products and stock,
// reservations driven by order events, HTTP and gRPC APIs.
//
//	go run ./services/inventory/cmd/inventory -conf services/inventory/configs
package main

import (
	"github.com/go-kratos/kratos/v2/transport"
	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/go-kratos/kratos/v2/transport/http"

	"github.com/tidemq/tide/services/inventory/internal/data"
	"github.com/tidemq/tide/services/inventory/internal/server"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/kit/cleanup"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
)

// Version is set with -ldflags "-X main.Version=…".
var Version = "dev"

func main() { boot.Serve(boot.Info{Name: "inventory", Version: Version}, "configs", wireApp) }

// newServers lists the service's servers in start order (boot.NewApp
// stops them in reverse).
func newServers(gs *grpc.Server, hs *http.Server, cs *server.ConsumerServer, rc *rechttp.Reconciler, cu *cleanup.Service) []transport.Server {
	return []transport.Server{gs, hs, cs, rc, cu}
}

// newReadiness is the /readyz check: the database and Redis answer and
// the consumer runs (it started, so the NameServers answered).
func newReadiness(d *data.Data, c *server.ConsumerServer) api.Ready {
	return api.AllReady(d.Ping, api.Started("consumer", c.Running))
}
