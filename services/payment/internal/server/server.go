// Package server builds the payment service's transports: gRPC, HTTP
// (hand-written routes plus /healthz and /readyz), the consumer of
// order events (refunds), each a Kratos transport.Server.
package server

import (
	"context"

	"github.com/google/wire"
)

// ProviderSet is server providers.
var ProviderSet = wire.NewSet(NewGRPCServer, NewHTTPServer, NewConsumerServer)

// Pinger reports whether the service's dependencies answer (readiness).
type Pinger interface {
	Ping(ctx context.Context) error
}
