// Command ledger is the idempotent consumer (pkg/mqclient/idempotent) in
// a page: it books every PaymentSucceeded once in a MariaDB/MySQL ledger
// however often the broker delivers it, with Redis as fast path, and
// takes refunds with an Idempotency-Key header.
//
//	MYSQL_DSN='app:pw@tcp(127.0.0.1:3306)/ledger?parseTime=true' REDIS_ADDR=127.0.0.1:6379 \
//	NAMESRV=127.0.0.1:9876 go run ./ledger
//	curl -XPOST localhost:8081/refunds -H 'Idempotency-Key: r-1' -d '{"order_id":"42","amount":10}'
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
	cfg := config{DSN: serve.Env("MYSQL_DSN", "root@tcp(127.0.0.1:3306)/ledger?parseTime=true"),
		RedisAddr: serve.Env("REDIS_ADDR", "127.0.0.1:6379"),
		Topic:     serve.Env("TOPIC", "payment-events"), Group: serve.Env("GROUP", "ledger-service"),
		Client: []mqclient.Option{mqclient.WithNameServers(serve.Env("NAMESRV", "127.0.0.1:9876"))}, Log: log}
	err := serve.Run(serve.Env("LISTEN", ":8081"), log, func(ctx context.Context) (serve.App, error) { return newApp(ctx, cfg) })
	if err != nil {
		log.Error("ledger", "err", err)
		os.Exit(1)
	}
}
