// Package biz holds the inventory domain: products with available,
// reserved and sold stock, and one reservation per order whose state
// machine makes every order event take effect exactly once.
//
// Stock is conserved: available+reserved+sold of a product changes only by
// seeding, never by Reserve, Release or Sell, and each of them moves units
// between the three counters in one transaction with the reservation's
// state change and the event that announces it.
package biz

import (
	"context"

	"github.com/google/wire"
)

// ProviderSet is biz providers.
var ProviderSet = wire.NewSet(NewStockUsecase, NewReservationsJob)

// Transaction runs fn in one database transaction carried by ctx: every
// repository call and EventPublisher.Publish made with the ctx given to fn
// joins it. fn's error rolls everything back.
type Transaction interface {
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
}
