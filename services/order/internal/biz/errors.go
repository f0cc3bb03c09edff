package biz

import (
	"github.com/go-kratos/kratos/v2/errors"

	"github.com/tidemq/tide/services/kit/api/apierr"
)

// Reasons of the errors of the order domain; INVALID_ARGUMENT is kit's
// (apierr).
const (
	ReasonOrderNotFound   = "ORDER_NOT_FOUND"
	ReasonInvalidState    = "INVALID_ORDER_STATE"
	ReasonUnavailable     = "ORDER_UNAVAILABLE"
	ReasonProductNotFound = "PRODUCT_NOT_FOUND"
	ReasonPriceMismatch   = "PRICE_MISMATCH"
	ReasonInventoryDown   = "INVENTORY_UNAVAILABLE"
)

var (
	// ErrOrderNotFound: no order with that id.
	ErrOrderNotFound = errors.NotFound(ReasonOrderNotFound, "order not found")
	// ErrInvalidArgument: the request is malformed (no user, no items,
	// a non-positive quantity or a negative price).
	ErrInvalidArgument = errors.BadRequest(apierr.ReasonInvalidArgument, "invalid order")
	// ErrInvalidState: the transition is not allowed from the order's
	// current status.
	ErrInvalidState = errors.Conflict(ReasonInvalidState, "order state does not allow this")
	// ErrUnavailable: the order could not be stored or published; the
	// caller may retry.
	ErrUnavailable = errors.ServiceUnavailable(ReasonUnavailable, "order service unavailable")
	// ErrProductNotFound: an item names a product the catalog does not
	// have (metadata product_id).
	ErrProductNotFound = errors.NotFound(ReasonProductNotFound, "product not found in the catalog")
	// ErrPriceMismatch: an item's unit_price is not the catalog's
	// (metadata product_id, unit_price, catalog_price). Omit unit_price
	// to take the catalog's.
	ErrPriceMismatch = errors.BadRequest(ReasonPriceMismatch, "unit_price differs from the catalog's price")
	// ErrInventoryUnavailable: the catalog (the inventory service) did
	// not answer, so the order could not be priced; nothing was created.
	// The caller may retry.
	ErrInventoryUnavailable = errors.ServiceUnavailable(ReasonInventoryDown, "inventory service unavailable; the order could not be priced")
)
