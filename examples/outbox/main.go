// Command outbox is the transactional outbox (pkg/mqclient/txmsg) in a
// page: POST /payments debits an account in MariaDB/MySQL and publishes
// PaymentSucceeded to the broker if and only if the debit commits.
//
//	MYSQL_DSN='app:pw@tcp(127.0.0.1:3306)/payments?parseTime=true' \
//	NAMESRV=127.0.0.1:9876 go run ./outbox
//	curl -XPOST localhost:8080/payments -d '{"order_id":"42","account":"alice","amount":100}'
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
	cfg := config{DSN: serve.Env("MYSQL_DSN", "root@tcp(127.0.0.1:3306)/payments?parseTime=true"),
		Topic: serve.Env("TOPIC", "payment-events"), Group: serve.Env("GROUP", "payment-service"),
		Client: []mqclient.Option{mqclient.WithNameServers(serve.Env("NAMESRV", "127.0.0.1:9876"))}, Log: log}
	err := serve.Run(serve.Env("LISTEN", ":8080"), log, func(ctx context.Context) (serve.App, error) { return newApp(ctx, cfg) })
	if err != nil {
		log.Error("outbox", "err", err)
		os.Exit(1)
	}
}
