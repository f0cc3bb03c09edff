package data

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/services/inventory/internal/biz"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/kit/fault"
)

type outboxRow struct {
	ID          int64 `gorm:"primaryKey"`
	Topic       string
	Tag         string
	ShardingKey string
	Seq         int64
	Body        []byte
	// TraceContext is the propagated trace context of the writing
	// transaction (JSON of the propagator's fields; empty: none).
	TraceContext string
	CreatedAt    time.Time
	SentAt       *time.Time
}

func (outboxRow) TableName() string { return "outbox" }

// Outbox is the biz.EventPublisher: Publish writes the event into the
// outbox table in the caller's transaction, so the event exists if and
// only if the effect committed; Run sends unsent rows in id order (hence
// per order in seq order), each with the order id as sharding key, and
// marks them sent. A crash between the send and the mark sends a row
// again: consumers see a duplicate with the same seq, never a gap.
//
// Why an outbox and not pkg/mqclient/txmsg: inventory events are the
// effect of consuming order events, and that transaction belongs to
// pkg/mqclient/idempotent (dedup record + version guard + stock move); a
// half message cannot join a transaction it does not open, an outbox row
// can. Each message is stamped with ordered.Stamp (sharding key, message
// key and ordering key = order id, version = the reservation's event
// seq), so the order service applies them in order.
type Outbox struct {
	data     *Data
	producer *mqclient.Producer
	faults   *fault.Set
	interval time.Duration
	log      *slog.Logger

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{}
}

// NewOutbox returns the outbox publisher and relay.
func NewOutbox(d *Data, p *mqclient.Producer, faults *fault.Set, c *conf.Messaging, l *slog.Logger) *Outbox {
	return &Outbox{data: d, producer: p, faults: faults, interval: durationOr(c.GetRelayInterval().AsDuration(), 200*time.Millisecond),
		log: l, kick: make(chan struct{}, 1)}
}

// ErrNoTransaction: Publish was called outside Data.InTx.
var ErrNoTransaction = errors.New("data: publish outside a transaction")

// Publish implements biz.EventPublisher. It must run inside Data.InTx.
func (o *Outbox) Publish(ctx context.Context, ev *biz.Event) error {
	if _, ok := ctx.Value(txKey{}).(*gorm.DB); !ok {
		return ErrNoTransaction
	}
	m, err := encodeEvent(ev)
	if err != nil {
		return err
	}
	body, err := eventv1.Marshal(m)
	if err != nil {
		return err
	}
	row := outboxRow{Topic: eventv1.TopicInventoryEvents, Tag: eventv1.Tag(m), ShardingKey: ev.OrderID, Seq: ev.Seq,
		Body: body, TraceContext: traceContext(ctx), CreatedAt: time.Now()}
	if err := o.data.DB(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("data: outbox insert: %w", err)
	}
	select {
	case o.kick <- struct{}{}: // wake the relay; it reads only committed rows
	default:
	}
	return nil
}

func lineItems(items []biz.Item) []*eventv1.LineItem {
	out := make([]*eventv1.LineItem, len(items))
	for i, it := range items {
		out[i] = &eventv1.LineItem{ProductId: it.ProductID, Quantity: int32(it.Quantity)}
	}
	return out
}

func encodeEvent(ev *biz.Event) (proto.Message, error) {
	at := timestamppb.New(ev.At)
	switch ev.Kind {
	case biz.EventStockReserved:
		return &eventv1.StockReserved{OrderId: ev.OrderID, Seq: ev.Seq, Items: lineItems(ev.Items), ReservedAt: at}, nil
	case biz.EventStockRejected:
		return &eventv1.StockRejected{OrderId: ev.OrderID, Seq: ev.Seq, Reason: ev.Reason, ProductId: ev.ProductID, RejectedAt: at}, nil
	case biz.EventStockReleased:
		return &eventv1.StockReleased{OrderId: ev.OrderID, Seq: ev.Seq, Items: lineItems(ev.Items), ReleasedAt: at}, nil
	}
	return nil, fmt.Errorf("data: unknown event kind %q", ev.Kind)
}

// tracerScope names the tracer of the relay's producer spans.
const tracerScope = "github.com/tidemq/tide/services/inventory/internal/data"

// traceContext serializes ctx's propagated trace context (the global
// propagator's fields, e.g. traceparent) for an outbox row.
func traceContext(ctx context.Context) string {
	c := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, c)
	if len(c) == 0 {
		return ""
	}
	b, err := json.Marshal(c)
	if err != nil || len(b) > 1024 {
		return "" // a trace is a diagnostic: never fail the effect for it
	}
	return string(b)
}

// withTraceContext returns ctx carrying the trace context an outbox row
// stored (unchanged when there is none or it does not parse).
func withTraceContext(ctx context.Context, s string) context.Context {
	if s == "" {
		return ctx
	}
	var c propagation.MapCarrier
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return ctx
	}
	return otel.GetTextMapPropagator().Extract(ctx, c)
}

// Start implements transport.Server: it starts the relay loop and returns.
func (o *Outbox) Start(context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done != nil {
		return errors.New("data: outbox relay already started")
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel, o.done = cancel, make(chan struct{})
	go o.loop(ctx)
	return nil
}

// Stop implements transport.Server: it stops the loop after the batch in
// flight (bounded by ctx). Unsent rows stay for the next start.
func (o *Outbox) Stop(ctx context.Context) error {
	o.mu.Lock()
	cancel, done := o.cancel, o.done
	o.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (o *Outbox) loop(ctx context.Context) {
	defer close(o.done)
	t := time.NewTicker(o.interval)
	defer t.Stop()
	for {
		for {
			n, err := o.RelayOnce(ctx)
			if err != nil {
				if ctx.Err() == nil {
					o.log.Warn("outbox relay", "err", err)
				}
				break
			}
			if n == 0 {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-o.kick:
		}
	}
}

// RelayOnce sends up to 100 unsent rows in id order and marks those sent.
// It stops at the first failed send, so that no later event of an order
// overtakes an earlier one. The rows stay locked while they are sent, so
// relays of several instances take turns. It returns how many it sent.
func (o *Outbox) RelayOnce(ctx context.Context) (int, error) {
	sent := 0
	err := o.data.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var rows []outboxRow
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("sent_at IS NULL").Order("id").Limit(100).Find(&rows).Error; err != nil {
			return fmt.Errorf("data: outbox scan: %w", err)
		}
		var ids []int64
		var sendErr error
		for _, r := range rows {
			msg := ordered.Stamp(&mqclient.Message{Topic: r.Topic, Tag: r.Tag, Body: r.Body}, r.ShardingKey, r.Seq)
			// The send runs in a producer span of the row's trace; the
			// producer's tracing.SendInterceptor puts it in the message.
			sctx, span := otel.Tracer(tracerScope).Start(withTraceContext(ctx, r.TraceContext), r.Topic+" send",
				trace.WithSpanKind(trace.SpanKindProducer),
				trace.WithAttributes(attribute.String("messaging.system", "rocketmq"),
					attribute.String("messaging.destination.name", r.Topic), attribute.String("order.id", r.ShardingKey)))
			res, err := o.producer.Send(sctx, msg)
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
				span.End()
				sendErr = fmt.Errorf("data: outbox send %d: %w", r.ID, err)
				break
			}
			span.SetAttributes(attribute.String("messaging.message.id", res.MsgID))
			span.End()
			ids = append(ids, r.ID)
			o.log.InfoContext(ctx, "inventory event sent", "topic", r.Topic, "tag", r.Tag, "order_id", r.ShardingKey,
				"seq", r.Seq, "msg_id", res.MsgID)
			if o.faults.Fire(FaultDeliverTwice) {
				// A real second delivery: new msg id, same key, version and body.
				dup := *msg
				if res2, err := o.producer.Send(ctx, &dup); err == nil {
					o.log.WarnContext(ctx, "deliver_twice: event sent again", "order_id", r.ShardingKey, "seq", r.Seq, "msg_id", res2.MsgID)
				}
			}
		}
		if len(ids) > 0 {
			if err := tx.Model(&outboxRow{}).Where("id IN ?", ids).Update("sent_at", time.Now()).Error; err != nil {
				return fmt.Errorf("data: outbox mark: %w", err)
			}
		}
		sent = len(ids)
		if sendErr != nil && sent == 0 {
			return sendErr
		}
		return nil
	})
	return sent, err
}

// Pending counts unsent outbox rows (readiness and tests).
func (o *Outbox) Pending(ctx context.Context) (int64, error) {
	var n int64
	err := o.data.db.WithContext(ctx).Model(&outboxRow{}).Where("sent_at IS NULL").Count(&n).Error
	return n, err
}

// durationOr is d, or def when d is not positive.
func durationOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
