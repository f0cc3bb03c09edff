package kratosmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/go-kratos/kratos/v2/transport"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Errors.
var (
	// ErrStopped is returned by Start after Stop, and by Subscribe after
	// Start or Stop.
	ErrStopped = errors.New("kratosmq: server stopped")
	// ErrStarted is returned by Subscribe after Start.
	ErrStarted = errors.New("kratosmq: server already started")
)

var _ transport.Server = (*Server)(nil)

// Option configures a Server.
type Option func(*Server)

// WithClientOptions sets mqclient options applied to every consumer of
// the server before its per-group options (typically WithNameServers and
// WithLogger).
func WithClientOptions(opts ...mqclient.Option) Option {
	return func(s *Server) { s.common = append(s.common, opts...) }
}

// WithLogger sets the logger for lifecycle events (default slog.Default).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.logger = l } }

// Server is a Kratos transport.Server that owns push consumers: it
// creates them on Start and shuts them down (draining in-flight handlers
// and committing offsets) on Stop. It is safe for concurrent use.
type Server struct {
	common []mqclient.Option
	logger *slog.Logger

	mu        sync.Mutex
	groups    []*group // in Subscribe order
	consumers []*mqclient.PushConsumer
	started   bool
	stopped   bool
}

type group struct {
	name string
	opts []mqclient.Option
	subs []sub
}

type sub struct {
	topic, expr string
	h           mqclient.Handler
}

// NewServer returns a server with no subscriptions.
func NewServer(opts ...Option) *Server {
	s := &Server{logger: slog.Default()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Subscribe registers h for topic's messages matching expr ("*" or tags
// joined by "||") in consumer group. opts are consumer options of the
// group, applied after WithClientOptions; the options of every Subscribe
// call of one group apply, in call order, to that group's single
// consumer. Call it before Start. Invalid topics, groups or options are
// reported by Start.
func (s *Server) Subscribe(groupName, topic, expr string, h mqclient.Handler, opts ...mqclient.Option) error {
	if h == nil {
		return fmt.Errorf("kratosmq: nil handler for %s", topic)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopped:
		return ErrStopped
	case s.started:
		return ErrStarted
	}
	var g *group
	for _, x := range s.groups {
		if x.name == groupName {
			g = x
		}
	}
	if g == nil {
		g = &group{name: groupName}
		s.groups = append(s.groups, g)
	}
	g.opts = append(g.opts, opts...)
	g.subs = append(g.subs, sub{topic: topic, expr: expr, h: h})
	return nil
}

// Start creates and starts one consumer per group. It returns once all of
// them run, or the first error after shutting down those already started.
// ctx bounds the start (route lookups, first rebalance).
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	if s.started {
		return ErrStarted
	}
	s.started = true
	for _, g := range s.groups {
		c, err := s.startGroup(ctx, g)
		if err != nil {
			s.shutdownLocked(context.WithoutCancel(ctx))
			s.stopped = true
			return err
		}
		s.consumers = append(s.consumers, c)
		s.logger.Info("kratosmq: consumer started", "group", g.name, "subscriptions", len(g.subs))
	}
	return nil
}

func (s *Server) startGroup(ctx context.Context, g *group) (*mqclient.PushConsumer, error) {
	opts := append(append([]mqclient.Option(nil), s.common...), g.opts...)
	c, err := mqclient.NewPushConsumer(g.name, opts...)
	if err != nil {
		return nil, fmt.Errorf("kratosmq: group %s: %w", g.name, err)
	}
	for _, sb := range g.subs {
		if err := c.Subscribe(sb.topic, sb.expr, sb.h); err != nil {
			return nil, fmt.Errorf("kratosmq: group %s: %w", g.name, err)
		}
	}
	if err := c.Start(ctx); err != nil {
		c.Shutdown(ctx)
		return nil, fmt.Errorf("kratosmq: group %s: %w", g.name, err)
	}
	return c, nil
}

// Stop shuts every consumer down concurrently: pulling stops, running
// handlers finish (until ctx is done; then their contexts are cancelled
// and their messages will be redelivered), offsets are committed and the
// consumers leave their groups. It waits while Start is still running.
// It returns the joined Shutdown errors (ctx's error if handlers were
// still running). Safe to call more than once and before Start.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	return s.shutdownLocked(ctx)
}

func (s *Server) shutdownLocked(ctx context.Context) error {
	cs := s.consumers
	s.consumers = nil
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Shutdown(ctx); err != nil {
				errs[i] = fmt.Errorf("kratosmq: group %s: %w", c.Group(), err)
			}
			s.logger.Info("kratosmq: consumer stopped", "group", c.Group(), "err", errs[i])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
