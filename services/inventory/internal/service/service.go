// Package service maps the inventory API (api/inventory/v1) and the order
// events (api/event/v1) onto the biz use cases.
package service

import "github.com/google/wire"

// ProviderSet is service providers.
var ProviderSet = wire.NewSet(NewInventoryService, NewReconcileJobs, NewInput)
