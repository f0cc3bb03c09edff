// Package server builds the order service's Kratos servers: gRPC, HTTP
// (hand-written routes plus /healthz and /readyz), the event consumers and
// the overdue-order sweeper. Each is a transport.Server that kratos.App
// starts and stops.
package server

import (
	"context"
	"errors"

	"github.com/google/wire"

	"github.com/tidemq/tide/services/order/internal/data"
)

// ProviderSet is server providers.
var ProviderSet = wire.NewSet(NewGRPCServer, NewHTTPServer, NewConsumer, NewSweeper, NewReadiness, NewCleanup)

// Readiness reports whether the service's dependencies answer (database,
// Redis); /readyz fails while it returns an error.
type Readiness interface {
	Ready(ctx context.Context) error
}

// NewReadiness returns the /readyz check: the database and Redis answer
// (d) and the consumers are running (they started, so the broker's
// NameServers answered).
func NewReadiness(d *data.Data, c *Consumer) Readiness { return readiness{d, c} }

type readiness struct {
	d *data.Data
	c *Consumer
}

func (r readiness) Ready(ctx context.Context) error {
	if err := r.d.Ready(ctx); err != nil {
		return err
	}
	if !r.c.Running() {
		return errors.New("consumers not started yet")
	}
	return nil
}
