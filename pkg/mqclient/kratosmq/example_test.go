package kratosmq_test

import (
	"context"
	"log"

	"github.com/go-kratos/kratos/v2"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
)

// A Kratos service whose consumer and background loop start and stop
// with the app. Needs a running NameServer, so it has no Output.
func Example() {
	srv := kratosmq.NewServer(kratosmq.WithClientOptions(mqclient.WithNameServers("127.0.0.1:9876")))
	err := srv.Subscribe("order-svc", "PaymentSucceeded", "*", func(ctx context.Context, m *mqclient.MessageExt) error {
		log.Printf("order %s paid", m.Key())
		return nil // idempotent business logic here
	}, mqclient.WithConcurrency(8))
	if err != nil {
		log.Fatal(err)
	}
	sweeper := kratosmq.Loop("sweeper", func(ctx context.Context) error {
		<-ctx.Done() // a periodic job would tick here
		return nil
	})
	app := kratos.New(kratos.Name("order-svc"), kratos.Server(srv, sweeper))
	if err := app.Run(); err != nil { // returns after SIGTERM and a drained Stop
		log.Fatal(err)
	}
}
