package mq

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/tracing"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"github.com/tidemq/tide/services/kit/topics"
)

// SenderOptions say how NewSender builds a service's transactional sender.
type SenderOptions struct {
	// Group is the producer group: the broker sends check-backs to any
	// live member of it, and the fence rows record it.
	Group string
	// Topics are the topics the sender sends to. They are ensured before
	// it starts, and its producer heartbeats their brokers at Start, so
	// that a restarted instance answers the check-backs of half messages
	// its crashed predecessor left, before it sends anything (a topic
	// missing then is not retried).
	Topics []string
	// Ensure are further topics the service needs created before the
	// sender starts.
	Ensure []string
	// AfterCommit, when set, is called at txmsg's "after-commit" hook
	// point (after the local commit, before END_TRANSACTION): the
	// services' crash_after_commit fault.
	AfterCommit func()
	// Producer are further producer options, applied after those of every
	// producer (producerOptions) and Topics (a later WithLogger replaces
	// Logger; interceptors add up).
	Producer []mqclient.Option
	// Sender are further txmsg options, applied after the group, Logger,
	// Registerer and the hook.
	Sender []txmsg.Option
	// Stop bounds the sender's shutdown in cleanup.
	Stop time.Duration
	// Logger gets the sender's and its producer's records; Registerer its
	// metrics (txmsg.WithRegisterer).
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// NewSender builds the transactional sender (pkg/mqclient/txmsg) of a
// service on its database db (the fence table comes from its migrations)
// and the process's client mc, ensures o's topics (bounded by 30 s) and
// starts it (Start: cleanup shuts it down). Every event is a half message
// whose local transaction writes the service's change and the fence row;
// check-backs read the fence. Errors start with "data: ".
func NewSender(db *gorm.DB, mc *mqclient.Client, o SenderOptions) (*txmsg.Sender, func(), error) {
	popts := producerOptions(mc, o.Logger, mqclient.WithTopics(o.Topics...))
	sopts := append([]txmsg.Option{txmsg.WithGroup(o.Group), txmsg.WithLogger(o.Logger), txmsg.WithRegisterer(o.Registerer),
		txmsg.WithHook(func(point string) {
			if point == "after-commit" && o.AfterCommit != nil {
				o.AfterCommit()
			}
		}),
		txmsg.WithProducerOptions(append(popts, o.Producer...)...)}, o.Sender...)
	s, err := txmsg.New(db, sopts...)
	if err != nil {
		return nil, nil, fmt.Errorf("data: txmsg sender: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := topics.Ensure(ctx, On(mc), append(slices.Clone(o.Topics), o.Ensure...)...); err != nil {
		return nil, nil, fmt.Errorf("data: %w", err)
	}
	cleanup, err := Start(ctx, s, "txmsg sender", o.Stop, o.Logger)
	if err != nil {
		return nil, nil, err
	}
	return s, cleanup, nil
}

// producerOptions are the options every producer of a service has: on
// the process's client mc (On), logging to l, with the tracing send
// interceptor (a message carries the context of the span it is sent in,
// so consumer spans are its children); then more.
func producerOptions(mc *mqclient.Client, l *slog.Logger, more ...mqclient.Option) []mqclient.Option {
	return append(append(On(mc), mqclient.WithLogger(l),
		mqclient.WithSendInterceptors(tracing.SendInterceptor(tracing.Options{}))), more...)
}

// NewProducer starts a plain producer of group on the process's client mc
// (producerOptions, logging to l); cleanup shuts it down, waiting up to
// stop (Start). Errors start with "data: ".
func NewProducer(mc *mqclient.Client, group string, stop time.Duration, l *slog.Logger) (*mqclient.Producer, func(), error) {
	p, err := mqclient.NewProducer(producerOptions(mc, l, mqclient.WithProducerGroup(group))...)
	if err != nil {
		return nil, nil, fmt.Errorf("data: producer: %w", err)
	}
	cleanup, err := Start(context.Background(), p, "producer", stop, l)
	if err != nil {
		return nil, nil, err
	}
	return p, cleanup, nil
}
