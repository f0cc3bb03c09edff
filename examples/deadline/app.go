package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/examples/internal/web"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/delay"
)

type config struct {
	DSN          string
	Topic, Group string
	PayWithin    time.Duration // an unpaid order is cancelled this long after it was created
	// Levels is the brokers' messageDelayLevel, used when a broker has no
	// timers (Apache RocketMQ 4.x).
	Levels string
	Client []mqclient.Option
	Log    *slog.Logger
	OnFire func(delay.Fired) // tests
}

const schema = `CREATE TABLE IF NOT EXISTS orders (
  id           VARCHAR(64)  NOT NULL PRIMARY KEY,
  status       VARCHAR(16)  NOT NULL,
  deadline     DATETIME(3)  NOT NULL,
  cancel_timer VARCHAR(512) NOT NULL DEFAULT '',
  KEY idx_pending (status, deadline)
) ENGINE=InnoDB`

// app: POST /orders creates a PENDING order and schedules its
// cancellation at the deadline; POST /orders/{id}/pay pays it and recalls
// the timer. Whatever fires (the timer, a late timer, the sweeper) runs
// "cancel if still PENDING" in one transaction, so a paid order is never
// cancelled and a cancelled one is cancelled once.
type app struct {
	db        *gorm.DB
	producer  *mqclient.Producer
	admin     *mqclient.Admin
	consumer  *mqclient.PushConsumer
	scheduler *delay.Scheduler
	cfg       config
	stop      context.CancelFunc
	wg        sync.WaitGroup
}

// stillPending is Check: the cancellation is due only for a PENDING order
// (read with a lock, in the firing's transaction).
func stillPending(ctx context.Context, tx *gorm.DB, id string) (bool, error) {
	var st []string
	err := tx.Raw("SELECT status FROM orders WHERE id = ? FOR UPDATE", id).Scan(&st).Error
	return err == nil && len(st) == 1 && st[0] == "PENDING", err
}

// cancel is Act: it makes stillPending false.
func cancel(ctx context.Context, tx *gorm.DB, id string) error {
	return tx.Exec("UPDATE orders SET status = 'CANCELLED' WHERE id = ?", id).Error
}

func newApp(ctx context.Context, cfg config) (*app, error) {
	db, err := gorm.Open(mysql.Open(cfg.DSN), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return nil, err
	}
	if err := db.WithContext(ctx).Exec(schema).Error; err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	a := &app{db: db, cfg: cfg}
	if a.producer, err = mqclient.NewProducer(cfg.Client...); err != nil {
		return nil, err
	}
	if a.admin, err = mqclient.NewAdmin(cfg.Client...); err != nil {
		return nil, err
	}
	for _, s := range []interface{ Start(context.Context) error }{a.producer, a.admin} {
		if err := s.Start(ctx); err != nil {
			return nil, err
		}
	}
	opts := []delay.Option{delay.WithLogger(cfg.Log)}
	if cfg.OnFire != nil {
		opts = append(opts, delay.OnFire(cfg.OnFire))
	}
	// Timers need Tide (or RocketMQ 5); on a RocketMQ 4.x broker fall back
	// to its delay levels: up to one level step late, never early.
	fs, err := a.admin.MasterFeatures(ctx)
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		if !f.Timers {
			levels, err := parseLevels(cfg.Levels)
			if err != nil {
				return nil, err
			}
			cfg.Log.Warn("broker without timers: using delay levels", "broker", f.BrokerName, "version", f.VersionDesc)
			opts = append(opts, delay.WithDelayLevels(levels...))
			break
		}
	}
	if a.scheduler, err = delay.New(a.producer, a.admin, opts...); err != nil {
		return nil, err
	}
	if err := a.scheduler.Start(ctx); err != nil { // refuses timers on a broker without them
		return nil, err
	}
	h, err := delay.Handler(db, stillPending, cancel, opts...)
	if err != nil {
		return nil, err
	}
	if a.consumer, err = mqclient.NewPushConsumer(cfg.Group, cfg.Client...); err != nil {
		return nil, err
	}
	if err := a.consumer.Subscribe(cfg.Topic, "*", h); err != nil {
		return nil, err
	}
	if err := a.consumer.Start(ctx); err != nil {
		return nil, err
	}
	// The sweeper is the backstop: an order whose timer was never created
	// (crash between COMMIT and Schedule) or was lost is cancelled anyway.
	sw, err := delay.NewSweeper(db, overdue, stillPending, cancel, append(opts, delay.WithInterval(time.Minute), delay.WithGrace(30*time.Second))...)
	if err != nil {
		return nil, err
	}
	rctx, stop := context.WithCancel(context.Background())
	a.stop = stop
	a.wg.Add(1)
	go func() { defer a.wg.Done(); sw.Run(rctx) }()
	return a, nil
}

func overdue(ctx context.Context, db *gorm.DB, cutoff time.Time, limit int) (ids []string, err error) {
	err = db.Raw("SELECT id FROM orders WHERE status = 'PENDING' AND deadline < ? ORDER BY deadline LIMIT ?", cutoff, limit).Scan(&ids).Error
	return ids, err
}

func parseLevels(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Fields(s) {
		d, err := time.ParseDuration(strings.Replace(f, "d", "h", 1))
		if strings.HasSuffix(f, "d") {
			d *= 24
		}
		if err != nil {
			return nil, fmt.Errorf("delay level %q: %w", f, err)
		}
		out = append(out, d)
	}
	return out, nil
}

func (a *app) Close(ctx context.Context) error {
	a.stop()
	a.wg.Wait()
	return errors.Join(a.consumer.Shutdown(ctx), a.producer.Shutdown(ctx), a.admin.Shutdown(ctx))
}

func (a *app) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", a.create)
	mux.HandleFunc("POST /orders/{id}/pay", a.pay)
	mux.HandleFunc("GET /orders/{id}", a.get)
	return mux
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func (a *app) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID string `json:"id"`
	}
	if err := web.Decode(r, &req); err != nil || !idPattern.MatchString(req.ID) {
		web.Error(w, http.StatusBadRequest, "INVALID_ARGUMENT", "id: 1-64 of [A-Za-z0-9_-]")
		return
	}
	deadline := time.Now().Add(a.cfg.PayWithin).UTC().Truncate(time.Millisecond)
	res := a.db.WithContext(r.Context()).Exec("INSERT IGNORE INTO orders (id, status, deadline) VALUES (?, 'PENDING', ?)", req.ID, deadline)
	if res.Error != nil || res.RowsAffected == 0 {
		web.Error(w, http.StatusConflict, "ORDER_EXISTS", "the order exists already (or the database failed)")
		return
	}
	// Committed first, then scheduled: if this fails or the process dies
	// here, the sweeper cancels the order after its deadline.
	h, err := a.scheduler.Schedule(r.Context(), delay.Action{Topic: a.cfg.Topic, Key: req.ID, At: deadline})
	if err == nil {
		a.db.WithContext(r.Context()).Exec("UPDATE orders SET cancel_timer = ? WHERE id = ?", string(h), req.ID)
	} else {
		a.cfg.Log.Warn("cancel timer not scheduled; the sweeper will cancel", "order", req.ID, "err", err)
	}
	web.JSON(w, http.StatusCreated, map[string]any{"id": req.ID, "status": "PENDING", "deadline": deadline})
}

func (a *app) pay(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	res := a.db.WithContext(r.Context()).Exec("UPDATE orders SET status = 'PAID' WHERE id = ? AND status = 'PENDING'", id)
	if res.Error != nil {
		web.Error(w, http.StatusServiceUnavailable, "UNAVAILABLE", "retry later")
		return
	}
	if res.RowsAffected == 0 {
		web.Error(w, http.StatusConflict, "NOT_PENDING", "no pending order with this id (cancelled, paid or unknown)")
		return
	}
	// The recall is an optimisation: a timer that fires anyway finds the
	// order PAID and does nothing.
	recall := "none"
	var handle []string
	a.db.WithContext(r.Context()).Raw("SELECT cancel_timer FROM orders WHERE id = ?", id).Scan(&handle)
	if len(handle) == 1 && handle[0] != "" {
		out, err := a.scheduler.Recall(r.Context(), delay.Handle(handle[0]))
		switch {
		case errors.Is(err, delay.ErrNotRecallable):
			recall = "not-recallable" // delay levels: the firing will be a no-op
		case err != nil:
			recall = "failed"
		default:
			recall = out.String()
		}
	}
	web.JSON(w, http.StatusOK, map[string]string{"id": id, "status": "PAID", "recall": recall})
}

func (a *app) get(w http.ResponseWriter, r *http.Request) {
	var st []string
	if err := a.db.WithContext(r.Context()).Raw("SELECT status FROM orders WHERE id = ?", r.PathValue("id")).Scan(&st).Error; err != nil {
		web.Error(w, http.StatusServiceUnavailable, "UNAVAILABLE", "retry later")
		return
	}
	if len(st) == 0 {
		web.Error(w, http.StatusNotFound, "NOT_FOUND", "no such order")
		return
	}
	web.JSON(w, http.StatusOK, map[string]string{"id": r.PathValue("id"), "status": st[0]})
}
