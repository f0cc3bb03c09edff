package remoting

import (
	"context"
	"errors"
	"fmt"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Sentinel errors of the transport. Errors returned by this package wrap
// them with %w, so test them with errors.Is.
var (
	// ErrClosed: the Server, Client or Conn is closed, or the connection
	// broke while a call was waiting for its response.
	ErrClosed = errors.New("remoting: closed")
	// ErrTimeout: the call's context deadline passed before the response
	// arrived. Errors matching it also match context.DeadlineExceeded.
	ErrTimeout = errors.New("remoting: timeout")
	// ErrServerBusy matches (errors.Is) the error of any SYSTEM_BUSY
	// response: errors.Is(resp.Err(), ErrServerBusy). A Server answers
	// SYSTEM_BUSY when its in-flight limits are reached or it is shutting
	// down. Invoke itself returns responses unchanged, whatever their code.
	ErrServerBusy error = &protocol.Error{Code: protocol.SystemBusy, Remark: "server busy"}
	// ErrDial: the connection to the remote address could not be set up.
	ErrDial = errors.New("remoting: dial failed")
	// ErrHeaderTooLarge: a frame's header exceeds MaxHeaderSize. It is
	// protocol.ErrHeaderTooLarge, which the frame check wraps.
	ErrHeaderTooLarge = protocol.ErrHeaderTooLarge
	// ErrTooManyConnections: a connection was refused because the
	// server's MaxConnections were open.
	ErrTooManyConnections = errors.New("remoting: too many connections")
	// ErrWriteBusy: Conn.TryInvokeOneway found another write in progress
	// or queued on the connection and sent nothing.
	ErrWriteBusy = errors.New("remoting: connection busy writing")
	// ErrInvalidOptions: Options.Validate rejected a field.
	ErrInvalidOptions = errors.New("remoting: invalid options")
)

// ctxError turns the error of a done context into the error a call
// returns: ErrTimeout and context.DeadlineExceeded for a deadline,
// context.Canceled for a cancellation.
func ctxError(ctx context.Context, what string) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %s: %w", ErrTimeout, what, err)
	}
	return fmt.Errorf("remoting: %s: %w", what, err)
}
