// Package service maps the payment API (api/payment/v1) and the order
// events (api/event/v1) onto the biz use cases.
package service

import "github.com/google/wire"

// ProviderSet is service providers.
var ProviderSet = wire.NewSet(NewPaymentService, NewGatewayService, NewReconcileJobs, NewInput)
