// Package server builds the order service's Kratos servers: gRPC, HTTP
// (hand-written routes plus /healthz and /readyz), the event consumers and
// the overdue-order sweeper. Each is a transport.Server that kratos.App
// starts and stops.
package server

import (
	"context"

	"github.com/google/wire"
)

// ProviderSet is server providers.
var ProviderSet = wire.NewSet(NewGRPCServer, NewHTTPServer, NewConsumer, NewSweeper)

// Readiness reports whether the service's dependencies answer (database,
// Redis); /readyz fails while it returns an error.
type Readiness interface {
	Ready(ctx context.Context) error
}
