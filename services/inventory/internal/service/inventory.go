package service

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	v1 "github.com/tidemq/tide/api/inventory/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/services/inventory/internal/biz"
	"github.com/tidemq/tide/services/kit/consume"
)

// InventoryService serves the Inventory API and handles order events.
type InventoryService struct {
	v1.UnimplementedInventoryServer

	uc    *biz.StockUsecase
	dedup consume.Dedup
	log   *slog.Logger
}

// NewInventoryService returns the service; dedup makes the order events'
// handler idempotent and ordered (OrderEventsHandler).
func NewInventoryService(uc *biz.StockUsecase, dedup consume.Dedup, l *slog.Logger) *InventoryService {
	return &InventoryService{uc: uc, dedup: dedup, log: l}
}

// OrderEventsHandler returns the handler of order-events for group:
// HandleOrderEvent inside the dedup (Redis fast path and in-progress
// claim; as the first statement of the transaction the dedup record,
// handler order-events, key "<order id>/<version>", so a duplicate, a
// redelivery or deliver_twice's second message, is acknowledged without
// effect; then the ordered guard), the stock command and its outbox row
// in the same transaction. Its metrics go to reg.
func (s *InventoryService) OrderEventsHandler(group string, reg prometheus.Registerer) (mqclient.Handler, error) {
	return s.dedup.Wrap(idempotent.Options{Group: group, Handler: "order-events", Key: versionKey,
		RedisPolicy: idempotent.FailClosedDB, ClaimTTL: 30 * time.Second, Logger: s.log.With("module", "inventory/consumer"),
		Registerer: reg}, s.HandleOrderEvent)
}

// versionKey is the idempotency key of an order event: order id and
// version (ordered.Stamp's), the same for every delivery of one event.
func versionKey(m *mqclient.MessageExt) (string, error) {
	key, v, err := ordered.VersionOf(m)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s/%d", key, v), nil
}

// Relay publishes the outbox's events (data.Outbox); the consumer server
// runs it while the consumer runs.
type Relay interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

func product(p *biz.Product) *v1.Product {
	return &v1.Product{Id: p.ID, Name: p.Name, Price: p.Price, Available: p.Available, Reserved: p.Reserved, Sold: p.Sold}
}

// GetProduct returns one product with its stock.
func (s *InventoryService) GetProduct(ctx context.Context, req *v1.GetProductRequest) (*v1.GetProductReply, error) {
	p, err := s.uc.GetProduct(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return &v1.GetProductReply{Product: product(p)}, nil
}

// ListProducts returns products by id; the page token is the last id of
// the previous page.
func (s *InventoryService) ListProducts(ctx context.Context, req *v1.ListProductsRequest) (*v1.ListProductsReply, error) {
	size := int(req.GetPageSize())
	ps, err := s.uc.ListProducts(ctx, req.GetPageToken(), size)
	if err != nil {
		return nil, err
	}
	out := &v1.ListProductsReply{}
	for _, p := range ps {
		out.Products = append(out.Products, product(p))
	}
	if size > 0 && len(ps) == size {
		out.NextPageToken = ps[len(ps)-1].ID
	}
	return out, nil
}

func items(in []*eventv1.LineItem) []biz.Item {
	out := make([]biz.Item, len(in))
	for i, it := range in {
		out[i] = biz.Item{ProductID: it.GetProductId(), Quantity: int64(it.GetQuantity())}
	}
	return out
}

// HandleOrderEvent applies one order event (OrderCreated → Reserve,
// OrderCancelled → Release, OrderPaid → Sell). It is a mqclient.Handler
// for an ordered consumer of order-events: nil acknowledges, an error
// retries in place (then dead-letters). Every command is idempotent, so
// redeliveries and producer retries have no further effect.
func (s *InventoryService) HandleOrderEvent(ctx context.Context, m *mqclient.MessageExt) error {
	ev, err := eventv1.Decode(m.Tag, m.Body)
	if err != nil {
		return fmt.Errorf("inventory: message %s: %w", m.MsgID, err)
	}
	var (
		out biz.Outcome
		id  string
	)
	switch e := ev.(type) {
	case *eventv1.OrderCreated:
		id = e.GetOrderId()
		out, err = s.uc.Reserve(ctx, id, items(e.GetItems()))
	case *eventv1.OrderCancelled:
		id = e.GetOrderId()
		out, err = s.uc.Release(ctx, id)
	case *eventv1.OrderPaid:
		id = e.GetOrderId()
		out, err = s.uc.Sell(ctx, id)
	default:
		s.log.WarnContext(ctx, "inventory: ignoring event", "tag", m.Tag, "msg_id", m.MsgID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("inventory: %s for order %s: %w", m.Tag, id, err)
	}
	s.log.InfoContext(ctx, "inventory: order event", "tag", m.Tag, "order_id", id, "outcome", out.String(), "msg_id", m.MsgID)
	return nil
}
