// Package biz holds the payment domain: accounts with balances, payments
// made through a transactional message (PaymentSucceeded is visible if and
// only if the debit committed), API idempotency keys that replay the
// original response, refunds for cancelled orders, a simulated external
// gateway whose statement reconciliation compares with, and the
// "payments" reconciliation job.
package biz

import (
	"context"

	"github.com/google/wire"
)

// ProviderSet is biz providers.
var ProviderSet = wire.NewSet(NewPaymentUsecase, NewPaymentsJob)

// Transaction runs fn in one database transaction carried by ctx.
type Transaction interface {
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
}
