package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/examples/internal/web"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
)

// config is what main reads from the environment.
type config struct {
	DSN   string // MariaDB/MySQL, the payments database
	Topic string // where PaymentSucceeded goes
	Group string // producer group: the same on every instance (check-backs go to any of them)
	// Client are the mqclient options (name servers at least).
	Client []mqclient.Option
	Log    *slog.Logger
}

// schema is the service's own table; the fence table comes from txmsg
// (apply txmsg.Migrations in your migrations: see docs/adopting.md).
const schema = `CREATE TABLE IF NOT EXISTS accounts (
  id      VARCHAR(64) NOT NULL PRIMARY KEY,
  balance BIGINT      NOT NULL
) ENGINE=InnoDB`

// app is the payment service: POST /payments debits an account and
// publishes PaymentSucceeded if and only if the debit commits.
type app struct {
	db     *gorm.DB
	sender *txmsg.Sender
	cfg    config
}

func newApp(ctx context.Context, cfg config) (*app, error) {
	db, err := gorm.Open(mysql.Open(cfg.DSN), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return nil, err
	}
	for _, ddl := range []string{schema, txmsg.Schema} {
		if err := db.WithContext(ctx).Exec(ddl).Error; err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
	}
	s, err := txmsg.New(db, txmsg.WithGroup(cfg.Group), txmsg.WithLogger(cfg.Log),
		// WithTopics: a restarted instance answers check-backs of half
		// messages a crashed one left, before its own first send.
		txmsg.WithProducerOptions(append(cfg.Client, mqclient.WithTopics(cfg.Topic))...))
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	return &app{db: db, sender: s, cfg: cfg}, nil
}

func (a *app) Close(ctx context.Context) error { return a.sender.Shutdown(ctx) }

func (a *app) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /payments", a.pay)
	return mux
}

var errInsufficient = errors.New("insufficient balance")

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

type payment struct {
	OrderID string `json:"order_id"`
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

func (a *app) pay(w http.ResponseWriter, r *http.Request) {
	var p payment
	if err := web.Decode(r, &p); err != nil {
		web.Error(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error())
		return
	}
	if !idPattern.MatchString(p.OrderID) || !idPattern.MatchString(p.Account) || p.Amount <= 0 {
		web.Error(w, http.StatusBadRequest, "INVALID_ARGUMENT", "order_id and account: 1-64 of [A-Za-z0-9_-]; amount > 0")
		return
	}
	msg := &mqclient.Message{Topic: a.cfg.Topic, Tag: "PaymentSucceeded", Keys: []string{p.OrderID},
		Body: []byte(`{"order_id":"` + p.OrderID + `","amount":` + strconv.FormatInt(p.Amount, 10) + `}`)}
	debit := func(tx *gorm.DB) error { // runs inside the transaction that also writes the fence row
		res := tx.Exec("UPDATE accounts SET balance = balance - ? WHERE id = ? AND balance >= ?", p.Amount, p.Account, p.Amount)
		if res.Error == nil && res.RowsAffected == 0 {
			return errInsufficient
		}
		return res.Error
	}
	// One key per business operation: a second POST for the order is
	// refused (ErrKeyCommitted) instead of debiting twice.
	key := "payment-" + p.OrderID
	_, err := a.sender.Send(r.Context(), msg, key, debit)
	if errors.Is(err, txmsg.ErrFenced) {
		// A check-back rolled this attempt back (the producer stalled
		// before its transaction began): nothing was debited or
		// published. Sending again under the same key uses a fresh
		// transaction key.
		_, err = a.sender.Send(r.Context(), msg, key, debit)
	}
	switch {
	case err == nil:
		web.JSON(w, http.StatusCreated, map[string]string{"status": "PAID"})
	case errors.Is(err, txmsg.ErrKeyCommitted):
		web.JSON(w, http.StatusOK, map[string]string{"status": "PAID", "note": "already paid"})
	case errors.Is(err, errInsufficient):
		web.Error(w, http.StatusConflict, "INSUFFICIENT_BALANCE", "nothing debited, nothing published")
	case errors.Is(err, mqclient.ErrTransactionUnknown):
		// The commit's outcome is unknown; the broker's check-back reads
		// the fence and publishes if and only if the debit committed.
		web.JSON(w, http.StatusAccepted, map[string]string{"status": "PENDING"})
	default:
		a.cfg.Log.Error("payment failed", "order", p.OrderID, "err", err)
		web.Error(w, http.StatusServiceUnavailable, "UNAVAILABLE", "payment not taken; retry later")
	}
}
