// Package server builds the inventory service's transports: gRPC, HTTP
// (hand-written routes plus /healthz and /readyz), the ordered consumer of
// order events and the outbox relay, each a Kratos transport.Server.
package server

import (
	"context"
	"errors"

	"github.com/google/wire"

	"github.com/tidemq/tide/services/inventory/internal/data"
)

// ProviderSet is server providers.
var ProviderSet = wire.NewSet(NewGRPCServer, NewHTTPServer, NewConsumerServer, NewReconciler, NewReadiness, NewCleanup)

// Pinger reports whether the service's dependencies answer (readiness).
type Pinger interface {
	Ping(ctx context.Context) error
}

// NewReadiness returns the /readyz check: the database and Redis answer
// and the consumer runs (it started, so the NameServers answered).
func NewReadiness(d *data.Data, c *ConsumerServer) Pinger { return readiness{d, c} }

type readiness struct {
	d *data.Data
	c *ConsumerServer
}

func (r readiness) Ping(ctx context.Context) error {
	if err := r.d.Ping(ctx); err != nil {
		return err
	}
	if !r.c.Running() {
		return errors.New("consumer not started yet")
	}
	return nil
}
