package service

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/order/internal/biz"
)

// OrderService implements orderv1.OrderServer. It is safe for concurrent
// use.
type OrderService struct {
	orderv1.UnimplementedOrderServer

	uc *biz.OrderUsecase
}

// NewOrderService returns the service.
func NewOrderService(uc *biz.OrderUsecase) *OrderService {
	return &OrderService{uc: uc}
}

// CreateOrder creates an order (status CREATED) priced from the catalog;
// an item's unit_price, if set, must be the catalog's.
func (s *OrderService) CreateOrder(ctx context.Context, req *orderv1.CreateOrderRequest) (*orderv1.CreateOrderReply, error) {
	lines := make([]biz.Line, len(req.GetItems()))
	for i, it := range req.GetItems() {
		lines[i] = biz.Line{ProductID: it.GetProductId(), Quantity: it.GetQuantity(), UnitPrice: it.UnitPrice}
	}
	o, err := s.uc.Create(ctx, req.GetUserId(), lines)
	if err != nil {
		return nil, err
	}
	return &orderv1.CreateOrderReply{Order: toInfo(o)}, nil
}

// GetOrder returns an order with its event timeline.
func (s *OrderService) GetOrder(ctx context.Context, req *orderv1.GetOrderRequest) (*orderv1.GetOrderReply, error) {
	o, tl, err := s.uc.Get(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	reply := &orderv1.GetOrderReply{Order: toInfo(o), Timeline: make([]*orderv1.TimelineEntry, len(tl))}
	for i, e := range tl {
		reply.Timeline[i] = &orderv1.TimelineEntry{Event: e.Event, Topic: e.Topic, Seq: e.Seq, Status: statuses.API(e.Status),
			Detail: e.Detail, At: ts(e.At)}
	}
	return reply, nil
}

// ListOrders returns a page of orders, newest first.
func (s *OrderService) ListOrders(ctx context.Context, req *orderv1.ListOrdersRequest) (*orderv1.ListOrdersReply, error) {
	f := biz.ListFilter{UserID: req.GetUserId(), After: req.GetPageToken(), Limit: int(req.GetLimit())}
	if req.GetStatus() != orderv1.OrderStatus_ORDER_STATUS_UNSPECIFIED {
		st, ok := statuses.Domain(req.GetStatus())
		if !ok {
			return nil, biz.ErrInvalidArgument.WithMetadata(map[string]string{"field": "status"})
		}
		f.Status = st
	}
	os, next, err := s.uc.List(ctx, f)
	if err != nil {
		return nil, err
	}
	reply := &orderv1.ListOrdersReply{Orders: make([]*orderv1.OrderInfo, len(os)), NextPageToken: next}
	for i, o := range os {
		reply.Orders[i] = toInfo(o)
	}
	return reply, nil
}

// ParseStatus reads an order status as the HTTP API accepts it: PAID or
// ORDER_STATUS_PAID, in any case; "" is UNSPECIFIED (any status).
func ParseStatus(s string) (orderv1.OrderStatus, bool) {
	if s == "" {
		return orderv1.OrderStatus_ORDER_STATUS_UNSPECIFIED, true
	}
	s = strings.ToUpper(s)
	if !strings.HasPrefix(s, "ORDER_STATUS_") {
		s = "ORDER_STATUS_" + s
	}
	v, ok := orderv1.OrderStatus_value[s]
	if !ok || v == int32(orderv1.OrderStatus_ORDER_STATUS_UNSPECIFIED) {
		return 0, false
	}
	return orderv1.OrderStatus(v), true
}

// statuses maps an order's status to the API's OrderStatus and back
// (UNSPECIFIED: none).
var statuses = api.NewEnum(map[biz.Status]orderv1.OrderStatus{
	biz.StatusCreated:   orderv1.OrderStatus_ORDER_STATUS_CREATED,
	biz.StatusReserved:  orderv1.OrderStatus_ORDER_STATUS_RESERVED,
	biz.StatusPaid:      orderv1.OrderStatus_ORDER_STATUS_PAID,
	biz.StatusCancelled: orderv1.OrderStatus_ORDER_STATUS_CANCELLED,
})

func toInfo(o *biz.Order) *orderv1.OrderInfo {
	info := &orderv1.OrderInfo{Id: o.ID, UserId: o.UserID, Status: statuses.API(o.Status), TotalAmount: o.Total, Seq: o.Seq,
		CancelAt: ts(o.CancelAt), CreatedAt: ts(o.CreatedAt), UpdatedAt: ts(o.UpdatedAt), CancelReason: o.CancelReason,
		Items: make([]*orderv1.OrderItem, len(o.Items))}
	for i, it := range o.Items {
		info.Items[i] = &orderv1.OrderItem{ProductId: it.ProductID, Quantity: it.Quantity, UnitPrice: proto.Int64(it.UnitPrice)}
	}
	return info
}

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// ListOrdersQuery reads GET /v1/orders's query: status by its name
// (CREATED, RESERVED, PAID, CANCELLED), user_id, page_token and limit.
func ListOrdersQuery(q url.Values) (*orderv1.ListOrdersRequest, error) {
	st, ok := ParseStatus(q.Get("status"))
	if !ok {
		return nil, biz.ErrInvalidArgument.WithMetadata(map[string]string{"field": "status",
			"why": "one of CREATED, RESERVED, PAID, CANCELLED"})
	}
	in := &orderv1.ListOrdersRequest{Status: st, UserId: q.Get("user_id"), PageToken: q.Get("page_token")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.ParseInt(l, 10, 32)
		if err != nil {
			return nil, biz.ErrInvalidArgument.WithMetadata(map[string]string{"field": "limit", "why": "an integer"})
		}
		in.Limit = int32(n)
	}
	return in, nil
}
