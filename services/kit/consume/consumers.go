package consume

import (
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	mqmetrics "github.com/tidemq/tide/pkg/mqclient/metrics"
	"github.com/tidemq/tide/pkg/mqclient/middleware"
	"github.com/tidemq/tide/pkg/mqclient/tracing"
	"github.com/tidemq/tide/services/kit/fault"
)

// Consumers builds the consumers of a service whose handlers all take
// the services' middleware chain (order's, inventory's): one kratosmq
// server on the process's client, then a Server over it (Consumers.Server).
type Consumers struct {
	mq     *kratosmq.Server
	base   []mqclient.Option
	m      *mqmetrics.Metrics
	faults *fault.Set
	log    *slog.Logger
}

// NewConsumers returns the builder of a service's consumers on the
// process's client mc: they log to l, register pkg/mqclient's consumer
// metrics on reg and honour the crash_after_effect switch of faults; opts
// are more consumer options (e.g. mqclient.WithConsumeFrom).
func NewConsumers(mc *mqclient.Client, reg prometheus.Registerer, faults *fault.Set, l *slog.Logger, opts ...mqclient.Option) (*Consumers, error) {
	m, err := mqmetrics.New(reg)
	if err != nil {
		return nil, err
	}
	base := []mqclient.Option{mqclient.WithClient(mc)}
	client := append([]mqclient.Option{mqclient.WithClient(mc), mqclient.WithLogger(l)}, opts...)
	mq := kratosmq.NewServer(kratosmq.WithClientOptions(client...), kratosmq.WithLogger(l))
	return &Consumers{mq: mq, base: base, m: m, faults: faults, log: l}, nil
}

// Subscribe subscribes h, for group, to topic's messages tagged with one
// of tags (every tag when there is none), inside the services' middleware,
// outermost first: a panic is recovered (middleware.Recover), the
// consumer span (pkg/mqclient/tracing), the group's metrics, the outcome
// logged (LogOutcome), the crash_after_effect fault (CrashAfterEffect);
// opts come after (e.g. mqclient.WithOrdered).
func (c *Consumers) Subscribe(group, topic string, tags []string, h mqclient.Handler, opts ...mqclient.Option) error {
	expr := "*"
	if len(tags) > 0 {
		expr = strings.Join(tags, " || ")
	}
	chain := mqclient.WithMiddleware(middleware.Recover(c.log), tracing.Middleware(tracing.Options{}), c.m.Middleware(group),
		LogOutcome(c.log, group), CrashAfterEffect(c.faults, fault.CrashAfterEffect))
	return c.mq.Subscribe(group, topic, expr, h, append([]mqclient.Option{chain}, opts...)...)
}

// Server returns the subscribed consumers as one Kratos server that
// makes sure topics exist on Start (NewServer).
func (c *Consumers) Server(topics ...string) *Server {
	return NewServer(c.mq, c.base, topics...)
}
