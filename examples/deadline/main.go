// Command deadline is the delayed action (pkg/mqclient/delay) in a page:
// an unpaid order is cancelled at its deadline by a timer message (delay
// levels on a broker without timers), paying recalls the timer, and a
// sweeper cancels orders whose timer was lost.
//
//	MYSQL_DSN='app:pw@tcp(127.0.0.1:3306)/shop?parseTime=true' NAMESRV=127.0.0.1:9876 go run ./deadline
//	curl -XPOST localhost:8083/orders -d '{"id":"42"}'
//	curl -XPOST localhost:8083/orders/42/pay
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/tidemq/tide/examples/internal/serve"
	"github.com/tidemq/tide/pkg/mqclient"
)

func main() {
	log := slog.Default()
	within, err := time.ParseDuration(serve.Env("PAY_WITHIN", "15m"))
	if err != nil || within <= 0 {
		log.Error("PAY_WITHIN must be a positive duration", "err", err)
		os.Exit(2)
	}
	cfg := config{DSN: serve.Env("MYSQL_DSN", "root@tcp(127.0.0.1:3306)/shop?parseTime=true"),
		Topic: serve.Env("TOPIC", "order-deadlines"), Group: serve.Env("GROUP", "order-deadlines"), PayWithin: within,
		Levels: serve.Env("DELAY_LEVELS", "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"),
		Client: []mqclient.Option{mqclient.WithNameServers(serve.Env("NAMESRV", "127.0.0.1:9876"))}, Log: log}
	err = serve.Run(serve.Env("LISTEN", ":8083"), log, func(ctx context.Context) (serve.App, error) { return newApp(ctx, cfg) })
	if err != nil {
		log.Error("deadline", "err", err)
		os.Exit(1)
	}
}
