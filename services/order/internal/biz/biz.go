// Package biz holds the order service's domain: the Order entity, its
// state machine, the use cases that move it, and the interfaces the data
// layer implements (OrderRepo, Transaction, EventPublisher, CancelTimer).
// It imports no database, Redis or broker package, so its tests run with
// hand-written fakes.
package biz

import (
	"context"
	"time"

	"github.com/google/wire"
	"google.golang.org/protobuf/proto"
)

// ProviderSet is biz providers.
var ProviderSet = wire.NewSet(NewOrderUsecase)

// Transaction runs fn in one database transaction carried by ctx: every
// repository call made with the ctx fn receives joins it. fn's error rolls
// the transaction back and is returned. Nested calls join the outer
// transaction.
type Transaction interface {
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
}

// Event is an outgoing event of one order.
type Event struct {
	// OrderID is the sharding key: events of one order keep their order.
	OrderID string
	// Seq is the order's event sequence number (Order.Seq after the
	// change that emits the event).
	Seq int64
	// Payload is one of the api/event/v1 messages.
	Payload proto.Message
}

// EventPublisher publishes order events reliably.
//
// PublishInTx runs fn in a database transaction (Transaction.InTx) and
// makes ev visible to consumers if and only if that transaction commits.
// fn's error rolls both back and is returned as is. It is safe for
// concurrent use.
//
// The data layer implements it with a transactional message today
// (half message, local transaction, commit, check-back); an outbox
// implementation (ev written in the same transaction, relayed later)
// satisfies the same contract.
type EventPublisher interface {
	PublishInTx(ctx context.Context, ev Event, fn func(ctx context.Context) error) error
}

// CancelTimer schedules the delayed cancellation of orders.
type CancelTimer interface {
	// Schedule arranges for OrderUsecase.CancelIfUnpaid(orderID) to be
	// called no earlier than at, and returns an opaque handle for Recall.
	// A timer whose order never committed fires harmlessly.
	Schedule(ctx context.Context, orderID string, at time.Time) (handle string, err error)
	// Recall cancels a scheduled timer if it has not fired. It is an
	// optimisation: a fired timer finds the order paid and does nothing.
	Recall(ctx context.Context, handle string) error
}

// Catalog prices products: the inventory service's catalog.
type Catalog interface {
	// Prices returns the unit price in cents of each product of ids
	// that the catalog has; a product it does not have is absent from
	// the map. An error means the catalog did not answer.
	Prices(ctx context.Context, ids []string) (map[string]int64, error)
}
