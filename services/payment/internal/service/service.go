// Package service maps the payment API (api/payment/v1) and the order
// events (api/event/v1) onto the biz use cases.
package service

import (
	"github.com/go-kratos/kratos/v2/log"
	"github.com/google/wire"

	"github.com/tidemq/tide/services/kit/api"
)

// ProviderSet is service providers.
var ProviderSet = wire.NewSet(NewPaymentService, NewReconcileJobs, NewInput)

// NewInput returns the input contract of the service's HTTP and gRPC
// servers: its request schemas, body limit and error encoding
// (services/kit/api); logger gets refused and failed requests.
func NewInput(logger log.Logger) *api.Input {
	return api.New(api.Options{Logger: logger}, Schemas)
}
