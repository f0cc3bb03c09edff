// Package apierr holds the error reasons that more than one service's
// API answers with, and the Kratos errors built on them. It imports only
// Kratos' errors, so a service's biz and data layers return these
// without depending on a transport (kit/api builds the servers and uses
// the same reasons for its input contract). A service keeps its domain
// reasons and their messages (ORDER_NOT_FOUND, INSUFFICIENT_BALANCE, ...)
// in its own biz/errors.go.
//
// Kratos errors match by code and reason (errors.Is), so a service's
// error with one of these reasons and a message of its own still
// matches the shared one.
package apierr

import "github.com/go-kratos/kratos/v2/errors"

// Reasons shared by the services' APIs; clients see them in the
// "reason" of the error body (HTTP) or the status details (gRPC).
const (
	// ReasonInvalidArgument: a field is missing, too long, out of range,
	// of the wrong JSON type or unknown (400, gRPC InvalidArgument).
	// Metadata "field", where set, names it (a path such as
	// items[0].quantity).
	ReasonInvalidArgument = "INVALID_ARGUMENT"
	// ReasonUnavailable: a transient failure (database, broker); the
	// caller may retry (503).
	ReasonUnavailable = "UNAVAILABLE"
)

// ErrInvalidArgument is INVALID_ARGUMENT with the message "invalid
// argument" (400); callers add the field with WithMetadata.
var ErrInvalidArgument = errors.BadRequest(ReasonInvalidArgument, "invalid argument")

// Unavailable returns the UNAVAILABLE error (503) with message msg.
func Unavailable(msg string) *errors.Error {
	return errors.ServiceUnavailable(ReasonUnavailable, msg)
}
