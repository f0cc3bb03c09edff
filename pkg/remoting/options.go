package remoting

import (
	"context"
	"crypto/tls"
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
	// DefaultFrameReadTimeout bounds the arrival of one frame once its
	// length prefix has been read: a peer trickling a frame byte by byte
	// (slow loris) loses its connection, whatever IdleTimeout says.
	DefaultFrameReadTimeout = 60 * time.Second
	// DefaultHandshakeTimeout bounds a TLS handshake.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultMaxHeaderSize bounds the header part of a frame. A RocketMQ
	// header holds at most a 32 KiB properties string plus a few short
	// fields; JSON escaping may double it.
	DefaultMaxHeaderSize = 256 << 10
)

// Interceptor runs before the handler of a request (in the handler's
// goroutine, or on the read loop for an InlineHandler, so it must not
// block; within the in-flight bounds). A non-nil result is sent as the
// response and the handler is skipped; nil lets the request through. The
// broker's ACL is one. It must be safe for concurrent use.
type Interceptor func(ctx context.Context, c *Conn, req *protocol.Command) *protocol.Command

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
	// FrameReadTimeout bounds the time between a frame's length prefix and
	// its last byte. Default DefaultFrameReadTimeout; negative disables.
	FrameReadTimeout time.Duration
	// MaxConnections bounds the open connections; a connection accepted
	// beyond it is closed at once (and logged). 0 means no bound.
	MaxConnections int
	// MaxHeaderSize bounds a frame's header; a larger one is answered
	// SYSTEM_ERROR ("header too large"), the connection stays open.
	// Default DefaultMaxHeaderSize.
	MaxHeaderSize int
	// TLSConfig is the server's TLS configuration (it needs Certificates;
	// set ClientAuth and ClientCAs for mutual TLS). Handshakes are bounded
	// by DefaultHandshakeTimeout.
	TLSConfig *tls.Config
	// TLSMode says whether the port accepts plain clients, TLS clients or
	// both (TLSMode; SelfSignedTLS gives a certificate when none is
	// configured). Zero: TLSEnforcing with a TLSConfig, else TLSDisabled.
	TLSMode TLSMode
	// Interceptor, if set, sees every request with a registered handler
	// before the handler runs.
	Interceptor Interceptor
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
	case o.MaxConnections < 0:
		return fmt.Errorf("%w: MaxConnections %d < 0", ErrInvalidOptions, o.MaxConnections)
	case o.MaxHeaderSize < 0:
		return fmt.Errorf("%w: MaxHeaderSize %d < 0", ErrInvalidOptions, o.MaxHeaderSize)
	case o.TLSConfig != nil && len(o.TLSConfig.Certificates) == 0 && o.TLSConfig.GetCertificate == nil:
		return fmt.Errorf("%w: TLSConfig has no certificate", ErrInvalidOptions)
	case o.TLSMode != "" && o.TLSMode != TLSDisabled && o.TLSMode != TLSPermissive && o.TLSMode != TLSEnforcing:
		return fmt.Errorf("%w: TLSMode %q", ErrInvalidOptions, o.TLSMode)
	case (o.TLSMode == TLSPermissive || o.TLSMode == TLSEnforcing) && o.TLSConfig == nil:
		return fmt.Errorf("%w: TLSMode %s needs a TLSConfig", ErrInvalidOptions, o.TLSMode)
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
	if o.FrameReadTimeout == 0 {
		o.FrameReadTimeout = DefaultFrameReadTimeout
	}
	if o.MaxHeaderSize == 0 {
		o.MaxHeaderSize = DefaultMaxHeaderSize
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
	// TLSConfig, if set, makes the client dial TLS (set RootCAs to trust
	// a private CA, ServerName when dialling by IP, Certificates for
	// mutual TLS). The handshake is part of the dial.
	TLSConfig *tls.Config
	// RequestHook, if set, may modify every request (and oneway request)
	// this client sends, just before it is encoded: it gets a copy that
	// the transport owns. Request signing (ACL credentials) uses it.
	RequestHook func(req *protocol.Command)
	// JSONHeaders makes the client send its requests with JSON headers,
	// as rocketmq-client-go does. By default they carry the ROCKETMQ
	// binary header (serialize type 1, Java RocketMQSerializable), which
	// Tide and Apache RocketMQ servers decode alike and answer in kind;
	// it costs less to encode and decode. Responses are decoded in
	// either form whatever this says.
	JSONHeaders bool
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
