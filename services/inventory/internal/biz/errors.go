package biz

import (
	"github.com/go-kratos/kratos/v2/errors"
)

// Reasons of the errors the API returns.
const (
	ReasonProductNotFound     = "PRODUCT_NOT_FOUND"
	ReasonReservationNotFound = "RESERVATION_NOT_FOUND"
	ReasonInvalidArgument     = "INVALID_ARGUMENT"
)

// Errors of the inventory domain. Match them with errors.Is (Kratos errors
// compare by code and reason).
var (
	// ErrProductNotFound: no product with that id.
	ErrProductNotFound = errors.NotFound(ReasonProductNotFound, "product not found")
	// ErrReservationNotFound: Sell for an order that has no reservation
	// (its OrderCreated was not applied yet). Consumers retry it.
	ErrReservationNotFound = errors.NotFound(ReasonReservationNotFound, "reservation not found")
	// ErrInvalidArgument: a request or event with missing or bad fields.
	ErrInvalidArgument = errors.BadRequest(ReasonInvalidArgument, "invalid argument")
)
