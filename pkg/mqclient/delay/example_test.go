package delay_test

import (
	"context"
	"log"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/delay"
)

// Example cancels unpaid orders 15 minutes after creation: schedule on
// create, recall on payment, a conditional cancel on fire, and the sweeper
// as the backstop.
func Example() {
	ctx := context.Background()
	db, _ := gorm.Open(mysql.Open("orders:pw@tcp(127.0.0.1:3306)/orders?parseTime=true"))
	p, _ := mqclient.NewProducer(mqclient.WithNameServers("127.0.0.1:9876"))
	a, _ := mqclient.NewAdmin(mqclient.WithNameServers("127.0.0.1:9876"))
	p.Start(ctx)
	a.Start(ctx)
	s, _ := delay.New(p, a)
	defer s.Close()

	// On order creation (after the order row committed):
	h, err := s.Schedule(ctx, delay.Action{Topic: "order-timeouts", Key: "order-42", At: time.Now().Add(15 * time.Minute)})
	if err == nil {
		db.Exec("UPDATE orders SET cancel_timer = ? WHERE id = ?", string(h), "order-42")
	}
	// On payment (after the PAID update committed): an optimisation only.
	if res, err := s.Recall(ctx, h); err == nil {
		log.Println("cancel timer:", res)
	}

	// The cancel: only an UNPAID order is cancelled, stock released once.
	check := func(ctx context.Context, tx *gorm.DB, id string) (bool, error) {
		var st string
		err := tx.Raw("SELECT status FROM orders WHERE id = ? FOR UPDATE", id).Scan(&st).Error
		return st == "UNPAID", err
	}
	cancel := func(ctx context.Context, tx *gorm.DB, id string) error {
		if err := tx.Exec("UPDATE orders SET status = 'CANCELLED' WHERE id = ?", id).Error; err != nil {
			return err
		}
		return tx.Exec("INSERT INTO stock_releases (order_id) VALUES (?)", id).Error
	}
	handler, _ := delay.Handler(db, check, cancel)
	c, _ := mqclient.NewPushConsumer("order-timeouts", mqclient.WithNameServers("127.0.0.1:9876"))
	c.Subscribe("order-timeouts", "*", handler)
	c.Start(ctx)
	defer c.Shutdown(ctx)

	// Backstop: orders whose timer was never sent or got lost.
	sw, _ := delay.NewSweeper(db, func(ctx context.Context, db *gorm.DB, cutoff time.Time, limit int) ([]string, error) {
		var ids []string
		err := db.Raw("SELECT id FROM orders WHERE status = 'UNPAID' AND deadline < ? LIMIT ?", cutoff, limit).Scan(&ids).Error
		return ids, err
	}, check, cancel, delay.WithInterval(time.Minute), delay.WithGrace(30*time.Second))
	go sw.Run(ctx)
}
