package service

import (
	"github.com/go-kratos/kratos/v2/log"

	v1 "github.com/tidemq/tide/api/payment/v1"
	"github.com/tidemq/tide/services/kit/api"
)

// MaxAmount bounds a payment (cents): the largest order total the order
// service accepts (100 items × 10000 units × 10^9 cents).
const MaxAmount = 1_000_000_000_000_000

// MaxIdempotencyKey bounds the Idempotency-Key (header or body field):
// payments.idempotency_key is VARCHAR(128).
const MaxIdempotencyKey = 128

// Schemas bound every field a client sends to the payments table's
// columns (ids VARCHAR(64), the key VARCHAR(128)), so a bad value is a
// 400 naming the field, never a database error.
var Schemas = api.Schemas{
	(&v1.CreatePaymentRequest{}).ProtoReflect().Descriptor().FullName(): {
		"order_id":        api.Text(1, 64),
		"user_id":         api.Text(1, 64),
		"amount":          api.Int(1, MaxAmount),
		"idempotency_key": api.Text(0, MaxIdempotencyKey),
	},
	(&v1.GetPaymentRequest{}).ProtoReflect().Descriptor().FullName(): {
		"id": api.Text(1, 64),
	},
}

// NewInput returns the input contract of the service's HTTP and gRPC
// servers: its request schemas, body limit and error encoding
// (services/kit/api); logger gets refused and failed requests.
func NewInput(logger log.Logger) *api.Input {
	return api.New(api.Options{Logger: logger}, Schemas)
}
