package txmsg_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
)

// A payment service publishes PaymentSucceeded if and only if its payment
// row commits. It needs a broker and a database, so it has no output.
func Example() {
	ctx := context.Background()
	db, err := gorm.Open(mysql.Open("app:pw@tcp(127.0.0.1:3306)/payments?parseTime=true"), &gorm.Config{})
	if err != nil {
		log.Fatal(err)
	}
	// Normally txmsg.Migrations applied with golang-migrate; Migrate runs the same DDL.
	if err := txmsg.Migrate(ctx, db, ""); err != nil {
		log.Fatal(err)
	}
	s, err := txmsg.New(db, txmsg.WithGroup("payment-service"),
		txmsg.WithProducerOptions(mqclient.WithNameServers("127.0.0.1:9876")))
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer s.Shutdown(ctx)

	msg := &mqclient.Message{Topic: "payment-events", Tag: "succeeded", Body: []byte(`{"order":42}`)}
	_, err = s.Send(ctx, msg, "payment-42", func(tx *gorm.DB) error {
		return tx.Exec("UPDATE payments SET status = 'paid' WHERE order_id = ?", 42).Error
	})
	switch {
	case err == nil: // committed; the event will be delivered
	case errors.Is(err, mqclient.ErrTransactionUnknown): // the check-back decides from the database
	case errors.Is(err, txmsg.ErrFenced): // a check-back rolled this attempt back: Send again with the same key
	default: // rolled back, nothing published
		log.Print(err)
	}

	// Periodically, on one instance: forget keys older than every possible check-back.
	if _, err := txmsg.Cleanup(ctx, db, "", 24*time.Hour, 500); err != nil {
		log.Print(err)
	}
}
