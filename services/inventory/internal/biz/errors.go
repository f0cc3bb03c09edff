package biz

import (
	"github.com/go-kratos/kratos/v2/errors"

	"github.com/tidemq/tide/services/kit/api/apierr"
)

// Reasons of the errors of the inventory domain; INVALID_ARGUMENT is
// kit's (apierr).
const (
	ReasonProductNotFound     = "PRODUCT_NOT_FOUND"
	ReasonReservationNotFound = "RESERVATION_NOT_FOUND"
)

// Errors of the inventory domain. Match them with errors.Is (Kratos errors
// compare by code and reason).
var (
	// ErrProductNotFound: no product with that id.
	ErrProductNotFound = errors.NotFound(ReasonProductNotFound, "product not found")
	// ErrReservationNotFound: Sell for an order that has no reservation
	// (its OrderCreated was not applied yet). Consumers retry it.
	ErrReservationNotFound = errors.NotFound(ReasonReservationNotFound, "reservation not found")
	// ErrInvalidArgument: a request or event with missing or bad fields
	// (kit's apierr.ErrInvalidArgument).
	ErrInvalidArgument = apierr.ErrInvalidArgument
)
