package ordered_test

import (
	"context"
	"log"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
)

// Example shows both sides: the order service stamps each event with the
// order's event sequence from its database; the shipping service applies
// them in order, exactly once, with the version advanced in the same
// transaction as its effect.
func Example() {
	ctx := context.Background()
	// Producer side: events of one order are sent serially.
	p, _ := mqclient.NewProducer(mqclient.WithNameServers("127.0.0.1:9876"))
	p.Start(ctx)
	defer p.Shutdown(ctx)
	if _, err := p.Send(ctx, ordered.NewMessage("order-events", "order-42", 3, []byte(`{"status":"PAID"}`))); err != nil {
		log.Fatal(err)
	}

	// Consumer side.
	db, _ := gorm.Open(mysql.Open("shipping:pw@tcp(127.0.0.1:3306)/shipping?parseTime=true"))
	if err := ordered.Migrate(ctx, db); err != nil { // or apply ordered.Migrations with golang-migrate
		log.Fatal(err)
	}
	g, _ := ordered.New(db, "shipping/order-events", ordered.WithPolicy(ordered.Strict))
	c, _ := ordered.NewConsumer("shipping", mqclient.WithNameServers("127.0.0.1:9876"),
		mqclient.WithMaxReconsumeTimes(5)) // bounded retries, then %DLQ%shipping
	c.Subscribe("order-events", "*", g.Handler(func(ctx context.Context, tx *gorm.DB, ev ordered.Event) error {
		return tx.Exec("UPDATE shipments SET order_status = ? WHERE order_id = ?", string(ev.Msg.Body), ev.Key).Error
	}))
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer c.Shutdown(ctx)
}
