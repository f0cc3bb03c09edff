package biz

import "context"

// OrderStatus is an order's status as the order service reports it.
type OrderStatus string

// Order statuses (OrderMissing: the order service does not know it).
const (
	OrderCreated   OrderStatus = "CREATED"
	OrderReserved  OrderStatus = "RESERVED"
	OrderPaid      OrderStatus = "PAID"
	OrderCancelled OrderStatus = "CANCELLED"
	OrderMissing   OrderStatus = "MISSING"
)

// Order is an order as the order service reports it: the facts a payment
// must match (its user and its total, fixed when the order was created)
// and its current status.
type Order struct {
	ID     string `json:"id"`
	UserID string `json:"user_id,omitempty"`
	// Total in cents.
	Total  int64       `json:"total"`
	Status OrderStatus `json:"status"`
}

// OrderReader asks the order service (gRPC GetOrder) for an order. An
// order it does not know is returned with Status OrderMissing and no
// error; an error means the order service did not answer (unreachable,
// timeout, 5xx), so nothing can be decided from it.
type OrderReader interface {
	Order(ctx context.Context, orderID string) (*Order, error)
}
