// Package service maps the order API (api/order/v1) to the biz use cases.
// One implementation serves both gRPC and the hand-written HTTP routes.
package service

import "github.com/google/wire"

// ProviderSet is service providers.
var ProviderSet = wire.NewSet(NewOrderService, NewEventService, NewInput)
