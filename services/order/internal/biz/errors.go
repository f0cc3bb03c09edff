package biz

import "github.com/go-kratos/kratos/v2/errors"

// Reasons of the errors the order API returns.
const (
	ReasonOrderNotFound   = "ORDER_NOT_FOUND"
	ReasonInvalidArgument = "INVALID_ARGUMENT"
	ReasonInvalidState    = "INVALID_ORDER_STATE"
	ReasonUnavailable     = "ORDER_UNAVAILABLE"
)

var (
	// ErrOrderNotFound: no order with that id.
	ErrOrderNotFound = errors.NotFound(ReasonOrderNotFound, "order not found")
	// ErrInvalidArgument: the request is malformed (no user, no items,
	// a non-positive quantity or a negative price).
	ErrInvalidArgument = errors.BadRequest(ReasonInvalidArgument, "invalid order")
	// ErrInvalidState: the transition is not allowed from the order's
	// current status.
	ErrInvalidState = errors.Conflict(ReasonInvalidState, "order state does not allow this")
	// ErrUnavailable: the order could not be stored or published; the
	// caller may retry.
	ErrUnavailable = errors.ServiceUnavailable(ReasonUnavailable, "order service unavailable")
)
