// Command ordered is the ordered consumer (pkg/mqclient/ordered) in a
// page: status changes of an order are recorded with a version and sent
// by one relay in commit order; the consumer applies them to a projection
// exactly once and in version order.
//
//	MYSQL_DSN='app:pw@tcp(127.0.0.1:3306)/orders?parseTime=true' NAMESRV=127.0.0.1:9876 go run ./ordered
//	curl -XPOST localhost:8082/orders/42/status -d '{"status":"PAID"}'
//	curl localhost:8082/orders/42/view
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/tidemq/tide/examples/internal/serve"
	"github.com/tidemq/tide/pkg/mqclient"
)

func main() {
	log := slog.Default()
	cfg := config{DSN: serve.Env("MYSQL_DSN", "root@tcp(127.0.0.1:3306)/orders?parseTime=true"),
		Topic: serve.Env("TOPIC", "order-status"), Group: serve.Env("GROUP", "order-view"),
		Client: []mqclient.Option{mqclient.WithNameServers(serve.Env("NAMESRV", "127.0.0.1:9876"))}, Log: log}
	err := serve.Run(serve.Env("LISTEN", ":8082"), log, func(ctx context.Context) (serve.App, error) { return newApp(ctx, cfg) })
	if err != nil {
		log.Error("ordered", "err", err)
		os.Exit(1)
	}
}
