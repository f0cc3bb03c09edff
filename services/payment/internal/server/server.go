// Package server builds the payment service's transports: gRPC, HTTP
// (hand-written routes, /v1/reconcile, /v1/faults, /metrics, /healthz and
// /readyz), the consumer of order events (refunds) and the
// reconciliation scheduler, each a Kratos transport.Server.
package server

import (
	"context"
	"fmt"
	"net"

	"github.com/google/wire"

	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/data"
)

// ProviderSet is server providers.
var ProviderSet = wire.NewSet(NewGRPCServer, NewHTTPServer, NewConsumerServer, NewReconciler, NewReadiness, NewCleanup)

// Pinger reports whether the service's dependencies answer (readiness).
type Pinger interface {
	Ping(ctx context.Context) error
}

// Readiness is the /readyz check: the database, Redis and a NameServer
// answer.
type Readiness struct {
	d  *data.Data
	ns []string
}

// NewReadiness returns the readiness check.
func NewReadiness(d *data.Data, m *conf.Messaging) Pinger {
	return &Readiness{d: d, ns: data.SplitAddrs(m.GetNameServers())}
}

// Ping implements Pinger.
func (r *Readiness) Ping(ctx context.Context) error {
	if err := r.d.Ping(ctx); err != nil {
		return err
	}
	var last error
	for _, a := range r.ns {
		var dl net.Dialer
		c, err := dl.DialContext(ctx, "tcp", a)
		if err == nil {
			c.Close()
			return nil
		}
		last = err
	}
	return fmt.Errorf("name server: %w", last)
}
