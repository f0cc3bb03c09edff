package consume

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/services/kit/topics"
)

// Server is a service's consumers as one Kratos transport.Server: Start
// creates the topics it needs if no service has yet (topics.Ensure, with
// the admin options base), runs Before, then starts the subscribed
// kratosmq.Server; Stop drains the consumers (running handlers finish,
// offsets commit), then runs After. Running reports readiness.
type Server struct {
	mq     *kratosmq.Server
	base   []mqclient.Option
	topics []string
	// Before runs after the topics exist and before the consumers start
	// (e.g. an outbox relay); After runs once they stopped. Both optional.
	Before, After func(ctx context.Context) error
	running       atomic.Bool
}

// NewServer returns the Server of mq (its handlers subscribed) that
// ensures topics with the admin options base.
func NewServer(mq *kratosmq.Server, base []mqclient.Option, topics ...string) *Server {
	return &Server{mq: mq, base: base, topics: topics}
}

// Start implements transport.Server. An app stopped while it started is
// not a failure (kratosmq.ErrStopped).
func (s *Server) Start(ctx context.Context) error {
	if err := topics.Ensure(ctx, s.base, s.topics...); err != nil {
		return err
	}
	if s.Before != nil {
		if err := s.Before(ctx); err != nil {
			return err
		}
	}
	err := s.mq.Start(ctx)
	if errors.Is(err, kratosmq.ErrStopped) {
		return nil
	}
	if err == nil {
		s.running.Store(true)
	}
	return err
}

// Running reports whether the consumers started and were not stopped.
func (s *Server) Running() bool { return s.running.Load() }

// Stop implements transport.Server.
func (s *Server) Stop(ctx context.Context) error {
	s.running.Store(false)
	err := s.mq.Stop(ctx)
	if s.After != nil {
		err = errors.Join(err, s.After(ctx))
	}
	return err
}
