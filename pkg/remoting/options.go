package remoting

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Defaults applied to zero option fields. They live here and nowhere else.
const (
	// DefaultMaxConcurrentRequests bounds the handlers running at once in
	// one Server (or for one Client's server-initiated requests).
	DefaultMaxConcurrentRequests = 65536
	// DefaultMaxConcurrentRequestsPerConn bounds the handlers running at
	// once for one connection. Long-polling pull handlers that block hold
	// a slot each, so the bound is generous.
	DefaultMaxConcurrentRequestsPerConn = 4096
	// DefaultWriteTimeout bounds one write to a peer that does not read.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultDialTimeout bounds connection set-up in the Client.
	DefaultDialTimeout = 5 * time.Second
)

// ServerOptions configures a Server. The zero value is valid: every zero
// field takes the default named in its comment.
type ServerOptions struct {
	// MaxFrameSize is the largest frame (length prefix excluded) a peer may
	// send; a connection that announces a larger one is closed. Default
	// protocol.DefaultMaxFrameSize (16 MiB, as RocketMQ).
	MaxFrameSize int
	// Logger receives connection and error events. Default slog.Default().
	Logger *slog.Logger
	// MaxConcurrentRequests bounds the handlers running at once in the
	// whole server. When reached, requests are answered SYSTEM_BUSY.
	// Default DefaultMaxConcurrentRequests.
	MaxConcurrentRequests int
	// MaxConcurrentRequestsPerConn bounds the handlers running at once for
	// one connection. Default DefaultMaxConcurrentRequestsPerConn.
	MaxConcurrentRequestsPerConn int
	// IdleTimeout closes a connection on which nothing arrived for that
	// long; it also detects half-open connections. 0 disables it (the
	// default: RocketMQ clients may stay quiet for a long time).
	IdleTimeout time.Duration
	// WriteTimeout bounds each write; a peer that does not read for that
	// long has its connection closed. Default DefaultWriteTimeout; a
	// negative value disables it.
	WriteTimeout time.Duration
}

// Validate reports the first invalid field.
func (o ServerOptions) Validate() error {
	switch {
	case o.MaxFrameSize < 0:
		return fmt.Errorf("%w: MaxFrameSize %d < 0", ErrInvalidOptions, o.MaxFrameSize)
	case o.MaxConcurrentRequests < 0:
		return fmt.Errorf("%w: MaxConcurrentRequests %d < 0", ErrInvalidOptions, o.MaxConcurrentRequests)
	case o.MaxConcurrentRequestsPerConn < 0:
		return fmt.Errorf("%w: MaxConcurrentRequestsPerConn %d < 0", ErrInvalidOptions, o.MaxConcurrentRequestsPerConn)
	case o.IdleTimeout < 0:
		return fmt.Errorf("%w: IdleTimeout %v < 0", ErrInvalidOptions, o.IdleTimeout)
	}
	return nil
}

func (o ServerOptions) withDefaults() ServerOptions {
	if o.MaxFrameSize == 0 {
		o.MaxFrameSize = protocol.DefaultMaxFrameSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxConcurrentRequests == 0 {
		o.MaxConcurrentRequests = DefaultMaxConcurrentRequests
	}
	if o.MaxConcurrentRequestsPerConn == 0 {
		o.MaxConcurrentRequestsPerConn = DefaultMaxConcurrentRequestsPerConn
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	return o
}

// ClientOptions configures a Client. The zero value is valid.
type ClientOptions struct {
	// DialTimeout bounds connection set-up (the call's context may cut it
	// shorter). Default DefaultDialTimeout.
	DialTimeout time.Duration
	// MaxFrameSize is the largest frame accepted from a server. Default
	// protocol.DefaultMaxFrameSize.
	MaxFrameSize int
	// Logger receives connection and error events. Default slog.Default().
	Logger *slog.Logger
	// MaxConcurrentRequests bounds the handlers (Client.Handle) running at
	// once for server-initiated requests. Default
	// DefaultMaxConcurrentRequests; per connection
	// DefaultMaxConcurrentRequestsPerConn.
	MaxConcurrentRequests int
	// IdleTimeout closes a connection on which nothing arrived for that
	// long; the next call redials. 0 disables it (the default).
	IdleTimeout time.Duration
	// WriteTimeout bounds each write. Default DefaultWriteTimeout; a
	// negative value disables it.
	WriteTimeout time.Duration
}

// Validate reports the first invalid field.
func (o ClientOptions) Validate() error {
	switch {
	case o.DialTimeout < 0:
		return fmt.Errorf("%w: DialTimeout %v < 0", ErrInvalidOptions, o.DialTimeout)
	case o.MaxFrameSize < 0:
		return fmt.Errorf("%w: MaxFrameSize %d < 0", ErrInvalidOptions, o.MaxFrameSize)
	case o.MaxConcurrentRequests < 0:
		return fmt.Errorf("%w: MaxConcurrentRequests %d < 0", ErrInvalidOptions, o.MaxConcurrentRequests)
	case o.IdleTimeout < 0:
		return fmt.Errorf("%w: IdleTimeout %v < 0", ErrInvalidOptions, o.IdleTimeout)
	}
	return nil
}

func (o ClientOptions) withDefaults() ClientOptions {
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.MaxFrameSize == 0 {
		o.MaxFrameSize = protocol.DefaultMaxFrameSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxConcurrentRequests == 0 {
		o.MaxConcurrentRequests = DefaultMaxConcurrentRequests
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	return o
}
