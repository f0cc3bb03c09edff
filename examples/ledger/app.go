package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"

	"github.com/redis/go-redis/v9"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/examples/internal/web"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/idempotent"
)

type config struct {
	DSN, RedisAddr string
	Topic, Group   string // PaymentSucceeded events; this service's consumer group
	Client         []mqclient.Option
	Log            *slog.Logger
}

// schema is the service's own table; the dedup table is idempotent's
// (apply idempotent.Migrations in your migrations: docs/adopting.md).
const schema = `CREATE TABLE IF NOT EXISTS ledger (
  id       BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
  order_id VARCHAR(64) NOT NULL,
  kind     VARCHAR(16) NOT NULL,
  amount   BIGINT      NOT NULL
) ENGINE=InnoDB`

// app books each PaymentSucceeded once in the ledger (however often it is
// delivered) and takes refunds with an Idempotency-Key header.
type app struct {
	db       *gorm.DB
	rdb      *redis.Client
	consumer *mqclient.PushConsumer
	refunds  *idempotent.Store
	log      *slog.Logger
}

func newApp(ctx context.Context, cfg config) (*app, error) {
	db, err := gorm.Open(mysql.Open(cfg.DSN), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return nil, err
	}
	for _, ddl := range []string{schema, idempotent.Schema(idempotent.DefaultTable)} {
		if err := db.WithContext(ctx).Exec(ddl).Error; err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
	}
	// ContextTimeoutEnabled: go-redis honours RedisTimeout itself.
	rdb := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr, ContextTimeoutEnabled: true})
	a := &app{db: db, rdb: rdb, log: cfg.Log}
	idem, err := idempotent.New(db, rdb, idempotent.Options{Group: cfg.Group, Handler: "book-payment",
		RedisPolicy: idempotent.FailClosedDB, // money: without Redis the database alone decides
		Logger:      cfg.Log})
	if err != nil {
		return nil, err
	}
	if a.refunds, err = idempotent.NewStore(db, idempotent.StoreOptions{Scope: cfg.Group, Operation: "refund", Logger: cfg.Log}); err != nil {
		return nil, err
	}
	if a.consumer, err = mqclient.NewPushConsumer(cfg.Group, append(cfg.Client, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))...); err != nil {
		return nil, err
	}
	// The business key is the order id (the message key), the same for
	// every copy of the event, whatever its message id.
	if err := a.consumer.Subscribe(cfg.Topic, "PaymentSucceeded", idem.Wrap(a.book)); err != nil {
		return nil, err
	}
	if err := a.consumer.Start(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// book is the effect: it runs in the transaction that also inserts the
// dedup record, so both commit or neither does.
func (a *app) book(ctx context.Context, tx *gorm.DB, m *mqclient.MessageExt) error {
	var ev struct {
		OrderID string `json:"order_id"`
		Amount  int64  `json:"amount"`
	}
	if err := json.Unmarshal(m.Body, &ev); err != nil || ev.OrderID == "" {
		return fmt.Errorf("bad PaymentSucceeded %s: %v", m.MsgID, err) // retried, then dead-lettered
	}
	return tx.Exec("INSERT INTO ledger (order_id, kind, amount) VALUES (?, 'payment', ?)", ev.OrderID, ev.Amount).Error
}

func (a *app) Close(ctx context.Context) error {
	return errors.Join(a.consumer.Shutdown(ctx), a.rdb.Close())
}

func (a *app) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /refunds", a.refund)
	return mux
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// refund books a refund once per Idempotency-Key; a retry with the same
// key and body gets the first answer again (Idempotent-Replayed: true).
func (a *app) refund(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	var req struct {
		OrderID string `json:"order_id"`
		Amount  int64  `json:"amount"`
	}
	if err := web.Decode(r, &req); err != nil || key == "" || len(key) > 128 || !idPattern.MatchString(req.OrderID) || req.Amount <= 0 {
		web.Error(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Idempotency-Key (1-128 bytes), order_id and amount > 0 required")
		return
	}
	fp := idempotent.Fingerprint([]byte(req.OrderID), []byte(strconv.FormatInt(req.Amount, 10)))
	resp, replayed, err := a.refunds.Do(r.Context(), key, fp, func(tx *gorm.DB) ([]byte, error) {
		res := tx.Exec("INSERT INTO ledger (order_id, kind, amount) VALUES (?, 'refund', ?)", req.OrderID, -req.Amount)
		if res.Error != nil {
			return nil, res.Error
		}
		return json.Marshal(map[string]any{"status": "REFUNDED", "order_id": req.OrderID, "amount": req.Amount})
	})
	switch {
	case err == nil:
		if replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp)
	case errors.Is(err, idempotent.ErrPayloadMismatch):
		web.Error(w, http.StatusUnprocessableEntity, "IDEMPOTENCY_KEY_REUSED", "the key was used for another request")
	case idempotent.IsTransient(err):
		web.Error(w, http.StatusConflict, "RETRY", "a request with this key is in progress; retry")
	default:
		a.log.Error("refund failed", "order", req.OrderID, "err", err)
		web.Error(w, http.StatusServiceUnavailable, "UNAVAILABLE", "refund not taken; retry later")
	}
}
