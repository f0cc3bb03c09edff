package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/examples/internal/web"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
)

type config struct {
	DSN          string
	Topic, Group string
	Client       []mqclient.Option
	Log          *slog.Logger
}

// The producer side keeps each order's version and an outbox of its
// events; the consumer side keeps a projection. The guard's tables come
// from ordered.Schema (copy it into your migrations: docs/adopting.md).
var schema = []string{
	`CREATE TABLE IF NOT EXISTS orders (id VARCHAR(64) NOT NULL PRIMARY KEY, status VARCHAR(16) NOT NULL, version BIGINT NOT NULL) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS order_events (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, order_id VARCHAR(64) NOT NULL,
	   version BIGINT NOT NULL, status VARCHAR(16) NOT NULL, sent BOOL NOT NULL DEFAULT FALSE, KEY idx_unsent (sent, id)) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS order_view (id VARCHAR(64) NOT NULL PRIMARY KEY, status VARCHAR(16) NOT NULL, history TEXT NOT NULL) ENGINE=InnoDB`,
}

// app: POST /orders/{id}/status records a status change (version+1) and
// its event in one transaction; one relay sends the events in commit order
// (so a key's versions reach its queue in order); the ordered consumer
// applies them to order_view exactly once, in version order.
type app struct {
	db       *gorm.DB
	producer *mqclient.Producer
	consumer *mqclient.PushConsumer
	guard    *ordered.Guard
	cfg      config
	wake     chan struct{}
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

func newApp(ctx context.Context, cfg config) (*app, error) {
	db, err := gorm.Open(mysql.Open(cfg.DSN), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return nil, err
	}
	for _, ddl := range schema {
		if err := db.WithContext(ctx).Exec(ddl).Error; err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
	}
	if err := ordered.Migrate(ctx, db); err != nil {
		return nil, err
	}
	a := &app{db: db, cfg: cfg, wake: make(chan struct{}, 1)}
	if a.guard, err = ordered.New(db, cfg.Group+"/order-view", ordered.WithLogger(cfg.Log)); err != nil {
		return nil, err
	}
	if a.producer, err = mqclient.NewProducer(cfg.Client...); err != nil {
		return nil, err
	}
	if err := a.producer.Start(ctx); err != nil {
		return nil, err
	}
	if a.consumer, err = ordered.NewConsumer(cfg.Group, append(cfg.Client, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))...); err != nil {
		return nil, err
	}
	if err := a.consumer.Subscribe(cfg.Topic, "*", a.guard.Handler(project)); err != nil {
		return nil, err
	}
	if err := a.consumer.Start(ctx); err != nil {
		return nil, err
	}
	rctx, stop := context.WithCancel(context.Background())
	a.stop = stop
	a.wg.Add(1)
	go a.relay(rctx)
	return a, nil
}

// project is the consumer's effect; it runs in the transaction that moves
// the order's version, so a redelivery is a no-op.
func project(ctx context.Context, tx *gorm.DB, ev ordered.Event) error {
	status := string(ev.Msg.Body)
	return tx.Exec("INSERT INTO order_view (id, status, history) VALUES (?, ?, ?) "+
		"ON DUPLICATE KEY UPDATE status = VALUES(status), history = CONCAT(history, '>', VALUES(status))",
		ev.Key, status, status).Error
}

// relay sends unsent events in id order, one at a time: ids grow in commit
// order per order (the order row is locked while its event is inserted),
// so each order's versions enter its queue in order. Run it on one
// instance only (or behind a lease). At least once: a crash between the
// send and "sent" resends, and the guard answers Duplicate.
func (a *app) relay(ctx context.Context) {
	defer a.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if err := a.relayOnce(ctx); err != nil && ctx.Err() == nil {
			a.cfg.Log.Warn("relay: will retry", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		case <-tick.C:
		}
	}
}

func (a *app) relayOnce(ctx context.Context) error {
	for {
		var evs []struct {
			ID      int64
			OrderID string
			Version int64
			Status  string
		}
		if err := a.db.WithContext(ctx).Raw("SELECT id, order_id, version, status FROM order_events WHERE sent = FALSE ORDER BY id LIMIT 100").Scan(&evs).Error; err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
		for _, ev := range evs { // stop at the first failure: later events must not overtake it
			if _, err := a.producer.Send(ctx, ordered.NewMessage(a.cfg.Topic, ev.OrderID, ev.Version, []byte(ev.Status))); err != nil {
				return fmt.Errorf("send %s v%d: %w", ev.OrderID, ev.Version, err)
			}
			if err := a.db.WithContext(ctx).Exec("UPDATE order_events SET sent = TRUE WHERE id = ?", ev.ID).Error; err != nil {
				return err
			}
		}
	}
}

func (a *app) Close(ctx context.Context) error {
	a.stop()
	a.wg.Wait()
	return errors.Join(a.consumer.Shutdown(ctx), a.producer.Shutdown(ctx))
}

func (a *app) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders/{id}/status", a.setStatus)
	mux.HandleFunc("GET /orders/{id}/view", a.view)
	return mux
}

var (
	idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	statuses  = map[string]bool{"CREATED": true, "PAID": true, "SHIPPED": true, "DELIVERED": true, "CANCELLED": true}
)

func (a *app) setStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req struct {
		Status string `json:"status"`
	}
	if err := web.Decode(r, &req); err != nil || !idPattern.MatchString(id) || !statuses[req.Status] {
		web.Error(w, http.StatusBadRequest, "INVALID_ARGUMENT", "id: 1-64 of [A-Za-z0-9_-]; status: CREATED, PAID, SHIPPED, DELIVERED or CANCELLED")
		return
	}
	var version int64
	err := a.db.WithContext(r.Context()).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("INSERT INTO orders (id, status, version) VALUES (?, ?, 1) "+
			"ON DUPLICATE KEY UPDATE status = VALUES(status), version = version + 1", id, req.Status).Error; err != nil {
			return err // the upsert locks the order row until COMMIT: versions and event ids follow one order
		}
		if err := tx.Raw("SELECT version FROM orders WHERE id = ?", id).Scan(&version).Error; err != nil {
			return err
		}
		return tx.Exec("INSERT INTO order_events (order_id, version, status) VALUES (?, ?, ?)", id, version, req.Status).Error
	})
	if err != nil {
		a.cfg.Log.Error("status change failed", "order", id, "err", err)
		web.Error(w, http.StatusServiceUnavailable, "UNAVAILABLE", "not recorded; retry later")
		return
	}
	select {
	case a.wake <- struct{}{}:
	default:
	}
	web.JSON(w, http.StatusAccepted, map[string]any{"id": id, "status": req.Status, "version": version})
}

func (a *app) view(w http.ResponseWriter, r *http.Request) {
	// The version first: the guard's version and the projection commit in
	// one transaction, so a view read after the version is at least that
	// new. Read the other way round, a delivery committing in between
	// paired an old history with the new version (TestOrdered saw it).
	v, _ := a.guard.LastVersion(r.Context(), r.PathValue("id"))
	var rows []struct{ Status, History string }
	if err := a.db.WithContext(r.Context()).Raw("SELECT status, history FROM order_view WHERE id = ?", r.PathValue("id")).Scan(&rows).Error; err != nil {
		web.Error(w, http.StatusServiceUnavailable, "UNAVAILABLE", "retry later")
		return
	}
	if len(rows) == 0 {
		web.Error(w, http.StatusNotFound, "NOT_FOUND", "no such order in the view (yet)")
		return
	}
	web.JSON(w, http.StatusOK, map[string]any{"status": rows[0].Status, "history": rows[0].History, "version": v})
}
