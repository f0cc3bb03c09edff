package idempotent_test

import (
	"context"
	"log"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/idempotent"
)

// A payment consumer: the balance update and the dedup record commit in
// one transaction; Redis answers most duplicates.
func Example() {
	ctx := context.Background()
	db, err := gorm.Open(mysql.Open("app:pw@tcp(127.0.0.1:3306)/payments?parseTime=true"), &gorm.Config{})
	if err != nil {
		log.Fatal(err)
	}
	// ContextTimeoutEnabled: go-redis then honours Options.RedisTimeout
	// itself (without it the Consumer abandons the late call instead).
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})

	idem, err := idempotent.New(db, rdb, idempotent.Options{
		Group:       "payments",
		Handler:     "apply-transfer",
		Key:         func(m *mqclient.MessageExt) (string, error) { return m.Properties["transferId"], nil },
		RedisPolicy: idempotent.FailClosedDB, // money: fall back to the database when Redis is down
		ClaimTTL:    10 * time.Second,        // how long a crashed delivery's claim delays its key (renewed while alive)
		Logger:      slog.Default(),
	})
	if err != nil {
		log.Fatal(err)
	}
	c, err := mqclient.NewPushConsumer("payments", mqclient.WithNameServers("127.0.0.1:9876"))
	if err != nil {
		log.Fatal(err)
	}
	c.Subscribe("transfers", "*", idem.Wrap(func(ctx context.Context, tx *gorm.DB, m *mqclient.MessageExt) error {
		return tx.Exec("UPDATE accounts SET balance = balance + 10 WHERE id = ?", m.Properties["to"]).Error
	}))
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer c.Shutdown(ctx)

	// Old records go in small batches; keep them longer than any redelivery.
	cl, _ := idempotent.NewCleaner(db, idempotent.CleanerOptions{Retention: 30 * 24 * time.Hour})
	go cl.Run(ctx)
}

// An API handler honouring Idempotency-Key: retries get the first answer.
func ExampleStore_Do() {
	db, _ := gorm.Open(mysql.Open("app:pw@tcp(127.0.0.1:3306)/payments?parseTime=true"), &gorm.Config{})
	store, err := idempotent.NewStore(db, idempotent.StoreOptions{Scope: "payment-api", Operation: "create-payment"})
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("POST /payments", func(w http.ResponseWriter, r *http.Request) {
		body := []byte(r.FormValue("amount"))
		resp, replayed, err := store.Do(r.Context(), r.Header.Get("Idempotency-Key"), idempotent.Fingerprint(body),
			func(tx *gorm.DB) ([]byte, error) {
				if err := tx.Exec("INSERT INTO payments (amount) VALUES (?)", body).Error; err != nil {
					return nil, err
				}
				return []byte(`{"status":"created"}`), nil
			})
		switch {
		case err == nil:
			if replayed {
				w.Header().Set("Idempotent-Replayed", "true")
			}
			w.Write(resp)
		case idempotent.IsTransient(err):
			http.Error(w, "retry", http.StatusConflict)
		default:
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		}
	})
}
