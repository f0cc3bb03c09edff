package service

import (
	"github.com/go-kratos/kratos/v2/log"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/kit/api"
)

// Schemas bound every field a client sends, to what the orders table
// holds (user_id and product ids VARCHAR(64)) and what the use case
// accepts (1..100 items, 1..10000 units, unit prices up to 10^9 cents),
// so a bad value is a 400 naming the field, never a database error.
var Schemas = api.Schemas{
	(&orderv1.CreateOrderRequest{}).ProtoReflect().Descriptor().FullName(): {
		"user_id":          api.Text(1, 64),
		"items":            api.Items(1, 100),
		"items.product_id": api.Text(1, 64),
		"items.quantity":   api.Int(1, 10000),
		"items.unit_price": api.Int(0, 1_000_000_000),
	},
	(&orderv1.GetOrderRequest{}).ProtoReflect().Descriptor().FullName(): {
		"id": api.Text(1, 64),
	},
}

// NewInput returns the input contract of the service's HTTP and gRPC
// servers: its request schemas, body limit and error encoding
// (services/kit/api); logger gets refused and failed requests.
func NewInput(logger log.Logger) *api.Input {
	return api.New(api.Options{Logger: logger}, Schemas)
}
