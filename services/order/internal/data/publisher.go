package data

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-kratos/kratos/v2/log"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/order/internal/biz"
	"github.com/tidemq/tide/services/order/internal/conf"
)

// propTxKey is the message property naming the fence row of a
// transactional message.
const propTxKey = "tide_tx_key"

// Fence states (tx_fence.state).
const (
	fenceCommitted  = "committed"
	fenceRolledBack = "rolled_back"
)

// NewProducer starts the service's transactional producer; the broker's
// check-backs are answered from the tx_fence table (Data.CheckTransaction).
// cleanup shuts it down.
//
// TODO(txmsg): replace the hand-rolled fence with pkg/mqclient/txmsg
// (transactional send bound to a gorm transaction, with its fence
// check-back and outbox fallback) once its API is final.
func NewProducer(c *conf.MQ, d *Data, logger log.Logger) (*mqclient.Producer, func(), error) {
	var addrs []string
	for _, a := range strings.FieldsFunc(c.GetNamesrvAddr(), func(r rune) bool { return r == ';' || r == ',' || r == ' ' }) {
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return nil, nil, errors.New("data: mq namesrv_addr is empty")
	}
	group := c.GetProducerGroup()
	if group == "" {
		group = eventv1.GroupOrderProducer
	}
	opts := []mqclient.Option{
		mqclient.WithNameServers(addrs...),
		mqclient.WithProducerGroup(group),
		mqclient.WithTopics(eventv1.TopicOrderEvents, eventv1.TopicOrderCancelTimer),
		mqclient.WithLogger(slog.Default().With("module", "order/mq")),
	}
	if t := c.GetSendTimeout(); t != nil && t.AsDuration() > 0 {
		opts = append(opts, mqclient.WithSendTimeout(t.AsDuration()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := EnsureTopics(ctx, opts[:1], eventv1.TopicOrderEvents, eventv1.TopicOrderCancelTimer); err != nil {
		return nil, nil, fmt.Errorf("data: %w", err)
	}
	p, err := mqclient.NewTransactionProducer(d.CheckTransaction, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("data: producer: %w", err)
	}
	if err := p.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("data: start producer: %w", err)
	}
	h := log.NewHelper(logger)
	return p, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			h.Warnf("shutdown producer: %v", err)
		}
	}, nil
}

// CheckTransaction answers a check-back from the fence: it inserts a
// rolled_back marker under the message's key unless one exists. The
// insert waits for a local transaction that already wrote the key, and a
// marker that wins makes a later local transaction fail on the duplicate
// key, so the answer can never contradict the database. Errors mean
// UNKNOWN (asked again later), never COMMIT.
func (d *Data) CheckTransaction(ctx context.Context, msg *mqclient.MessageExt) mqclient.TransactionState {
	key := msg.Properties[propTxKey]
	if key == "" {
		d.log.Warnf("check-back for message %s without %s", msg.MsgID, propTxKey)
		return mqclient.TransactionUnknown
	}
	db := d.db.WithContext(ctx)
	if err := db.Exec("INSERT IGNORE INTO tx_fence (tx_key, state, created_at) VALUES (?, ?, ?)",
		key, fenceRolledBack, time.Now().UTC()).Error; err != nil {
		d.log.Warnf("check-back %s: %v", key, err)
		return mqclient.TransactionUnknown
	}
	var state string
	if err := db.Raw("SELECT state FROM tx_fence WHERE tx_key = ?", key).Scan(&state).Error; err != nil {
		d.log.Warnf("check-back %s: %v", key, err)
		return mqclient.TransactionUnknown
	}
	switch state {
	case fenceCommitted:
		return mqclient.TransactionCommit
	case fenceRolledBack:
		return mqclient.TransactionRollback
	}
	return mqclient.TransactionUnknown
}

// insertFence marks the transaction in ctx as the committer of key; it
// fails on the duplicate key if a check-back rolled key back first.
func (d *Data) insertFence(ctx context.Context, key string) error {
	err := d.DB(ctx).Exec("INSERT INTO tx_fence (tx_key, state, created_at) VALUES (?, ?, ?)",
		key, fenceCommitted, time.Now().UTC()).Error
	if err != nil {
		return fmt.Errorf("fence %s (rolled back by a check-back?): %w", key, err)
	}
	return nil
}

type eventPublisher struct {
	data *Data
	p    *mqclient.Producer
	log  *log.Helper
}

// NewEventPublisher returns the biz.EventPublisher: a transactional
// message on order-events, sharded by order id, whose local transaction
// runs fn and writes the fence row.
//
// TODO(txmsg): switch to pkg/mqclient/txmsg; TODO(ordered): the sharding
// key alone orders the events today; pkg/mqclient/ordered adds the
// per-order version guard on the consumer side.
func NewEventPublisher(d *Data, p *mqclient.Producer, logger log.Logger) biz.EventPublisher {
	return &eventPublisher{data: d, p: p, log: log.NewHelper(log.With(logger, "module", "order/publisher"))}
}

func (e *eventPublisher) PublishInTx(ctx context.Context, ev biz.Event, fn func(ctx context.Context) error) error {
	body, err := eventv1.Marshal(ev.Payload)
	if err != nil {
		return err
	}
	key := fmt.Sprintf("%s/%s/%d", eventv1.TopicOrderEvents, ev.OrderID, ev.Seq)
	msg := &mqclient.Message{Topic: eventv1.TopicOrderEvents, Tag: eventv1.Tag(ev.Payload), Keys: []string{ev.OrderID},
		ShardingKey: ev.OrderID, Body: body, Properties: map[string]string{propTxKey: key}}
	var fnErr, txErr error
	_, state, err := e.p.SendInTransaction(ctx, msg, func(ctx context.Context) error {
		fnDone := false
		txErr = e.data.InTx(ctx, func(ctx context.Context) error {
			if err := e.data.insertFence(ctx, key); err != nil {
				return err
			}
			fnErr = fn(ctx)
			fnDone = fnErr == nil
			return fnErr
		})
		if txErr != nil && fnDone {
			// fn succeeded but COMMIT failed: it may have committed
			// anyway, so let the check-back read the fence.
			return fmt.Errorf("%w: commit: %w", mqclient.ErrTransactionUnknown, txErr)
		}
		return txErr
	})
	switch {
	case fnErr != nil:
		return fnErr
	case txErr != nil:
		return txErr
	case err != nil && state == mqclient.TransactionCommit:
		// Committed locally; only END_TRANSACTION failed. The check-back
		// will find the fence row and commit the message.
		e.log.WithContext(ctx).Warnf("event %s: %v", key, err)
		return nil
	}
	return err
}
