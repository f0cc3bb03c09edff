// Package remoting is Tide's RocketMQ 4.x remoting transport: a TCP Server
// that serves requests by code and a Client that multiplexes requests over
// one connection per address. Frames and headers are encoded by package
// protocol; this package moves them.
//
// # Wire rules
//
// A response carries its request's opaque and has flag bit 0 set. A
// request with flag bit 1 (oneway) gets no response, even if its handler
// returns one; every other request gets exactly one response, including
// the "oneway" calls of rocketmq-client-go v2.1.2, which never set bit 1.
// The Server answers unknown codes REQUEST_CODE_NOT_SUPPORTED ("request
// type N not supported"), a full in-flight bound or a shutdown SYSTEM_BUSY,
// and a handler panic or an undecodable header SYSTEM_ERROR. A frame longer
// than MaxFrameSize, or an undecodable frame whose opaque cannot be
// recovered, closes that connection only (the checks and the SYSTEM_ERROR
// answer are package protocol's CheckFrameLength, CheckHeaderLength and
// InspectBadFrame). Responses nobody waits for (late ones, after a
// timeout) are dropped and logged at debug level.
//
// Both ends of a connection are symmetric: the server may push requests to a
// client on the connection the client opened (Conn.Invoke, used for
// transaction check-back and NOTIFY_CONSUMER_IDS_CHANGED), and the client
// serves them with the handlers given to Client.Handle; unknown codes are
// logged and ignored there, as rocketmq-client-go does.
//
// # Concurrency
//
// Server, Client and Conn are safe for concurrent use. Each connection has
// one reader goroutine; every request runs its handler in a goroutine of its
// own, bounded per connection and per Server (or Client), except the
// requests an InlineHandler serves on the reader goroutine itself (those
// that cannot block: see InlineHandler). Their responses are gathered and
// written in one write once the requests already received are served
// (before a read that would wait for the socket, or at 64 KiB), which
// saves a goroutine hand-off per request and a write syscall per
// response; their in-flight slots are held until that write. Writes on a
// connection are ordered and coalesced without a lock held across I/O and
// without a writer goroutine: the caller that finds the connection idle
// writes its frame itself; frames sent while a write is in progress queue
// up, and the first of them writes the whole queue in one syscall (writev
// on TCP, one copied buffer on TLS) when that write ends. Every call that
// writes (Invoke, InvokeAsync, InvokeOneway, Reply) returns only once its
// frame is written or has failed, so a failed write fails that call, and
// frames of calls that follow one another go out in that order. A write
// waits for at most the write in progress and its own batch, each bounded
// by WriteTimeout (a peer that stops reading has its connection closed,
// failing the queued frames too), plus, when 4 MiB are already queued, the
// time until they are taken (backpressure). Invoke blocks until the
// response arrives or its context is done; InvokeAsync and InvokeOneway
// block only for the write. Conn.TryInvokeOneway is for frames that may be
// dropped (notifications): bounded by its own short timeout, it gives up
// (ErrWriteBusy, ErrTimeout) rather than wait on a peer that stops reading.
//
// # Ownership
//
// A request handed to a Handler belongs to the handler: its Body aliases a
// buffer read for that frame alone and may be kept. A command returned by a
// handler, or passed to Conn.Reply, belongs to the transport afterwards. A
// request passed to Invoke, InvokeAsync or InvokeOneway is neither
// modified nor retained: the transport encodes a copy carrying its own
// opaque and flag, so the caller may reuse it once the call returns (but
// must not change it while the call runs). A response returned by Invoke
// or given to a callback belongs to the caller.
//
// # Closing
//
// Server.Shutdown stops accepting, answers new requests SYSTEM_BUSY, waits
// for running handlers (bounded by its context), then closes every
// connection and waits for the connection goroutines and OnDisconnect hooks;
// Serve then returns nil. Client.Close and Conn.Close fail every pending
// call with an error wrapping ErrClosed (each InvokeAsync callback is
// called once with it) and cancel the contexts of running handlers. Frames
// still queued fail with that error and later writes fail at once; a write
// already in progress completes or fails on its own (its frame may or may
// not reach the peer). Client.Close waits for its reader goroutines, not for handlers. A Client
// redials an address on the next call after its connection closed.
//
// # Limits and TLS
//
// ServerOptions bound what one peer may cost (docs/security.md): frame
// size (memory grows with the bytes received, not the length announced),
// header size (SYSTEM_ERROR "header too large"), open connections (closed
// on accept), handlers in flight per connection and per server
// (SYSTEM_BUSY), the time a started frame may take (FrameReadTimeout),
// silence (IdleTimeout) and a peer that does not read (WriteTimeout).
// ServerOptions.TLSMode (RocketMQ's tls.server.mode) says whether a Server
// port takes plain clients, TLS clients or both: it reads the first byte
// of each connection (0x16 starts a TLS handshake) and refuses the kind
// the mode does not take; TLSConfig alone makes it TLS-only (handshakes
// bounded). ClientOptions.TLSConfig makes a Client dial TLS. ServerOptions.Interceptor sees every request before its handler
// (the broker's ACL); ClientOptions.RequestHook may amend every request a
// Client sends (request signing).
//
// # Errors
//
// Transport errors wrap the sentinels ErrClosed, ErrTimeout (which also
// matches context.DeadlineExceeded), ErrDial and ErrInvalidOptions. Invoke
// returns a response whatever its code; resp.Err() turns a non-SUCCESS code
// into a *protocol.Error, and errors.Is(resp.Err(), ErrServerBusy) tests
// for SYSTEM_BUSY.
package remoting
