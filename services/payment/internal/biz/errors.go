package biz

import (
	"github.com/go-kratos/kratos/v2/errors"

	"github.com/tidemq/tide/services/kit/api/apierr"
)

// Reasons of the errors of the payment domain; INVALID_ARGUMENT and
// UNAVAILABLE are kit's (apierr).
const (
	ReasonIdempotencyKeyRequired = "IDEMPOTENCY_KEY_REQUIRED"
	ReasonIdempotencyKeyReused   = "IDEMPOTENCY_KEY_REUSED"
	ReasonIdempotencyInProgress  = "IDEMPOTENCY_KEY_IN_PROGRESS"
	ReasonAccountNotFound        = "ACCOUNT_NOT_FOUND"
	ReasonInsufficientBalance    = "INSUFFICIENT_BALANCE"
	ReasonOrderAlreadyPaid       = "ORDER_ALREADY_PAID"
	ReasonOrderCancelled         = "ORDER_CANCELLED"
	ReasonOrderNotFound          = "ORDER_NOT_FOUND"
	ReasonOrderNotOwned          = "ORDER_NOT_OWNED"
	ReasonAmountMismatch         = "AMOUNT_MISMATCH"
	ReasonOrderUnavailable       = "ORDER_SERVICE_UNAVAILABLE"
	ReasonPaymentNotFound        = "PAYMENT_NOT_FOUND"
	ReasonGatewayTimeout         = "GATEWAY_TIMEOUT"
)

// Errors of the payment domain (Kratos errors: HTTP status, reason).
// Match them with errors.Is.
var (
	// ErrInvalidArgument: kit's apierr.ErrInvalidArgument.
	ErrInvalidArgument = apierr.ErrInvalidArgument
	// ErrIdempotencyKeyRequired: POST /v1/payments without a key.
	ErrIdempotencyKeyRequired = errors.BadRequest(ReasonIdempotencyKeyRequired, "Idempotency-Key header is required")
	// ErrIdempotencyKeyReused: the key was used before with another body.
	ErrIdempotencyKeyReused = errors.Conflict(ReasonIdempotencyKeyReused, "idempotency key was used with a different request")
	// ErrIdempotencyInProgress: a request with the same key is running.
	ErrIdempotencyInProgress = errors.Conflict(ReasonIdempotencyInProgress, "a request with this idempotency key is in progress")
	ErrAccountNotFound       = errors.NotFound(ReasonAccountNotFound, "account not found")
	ErrInsufficientBalance   = errors.New(402, ReasonInsufficientBalance, "insufficient balance")
	// ErrOrderAlreadyPaid: the order has a payment made with another key.
	ErrOrderAlreadyPaid = errors.Conflict(ReasonOrderAlreadyPaid, "order already paid")
	// ErrOrderCancelled: the order was cancelled before the payment.
	ErrOrderCancelled = errors.Conflict(ReasonOrderCancelled, "order was cancelled")
	// ErrOrderNotFound: the order service does not know the order.
	ErrOrderNotFound = errors.NotFound(ReasonOrderNotFound, "order not found")
	// ErrOrderNotOwned: the order belongs to another user than the one
	// who pays.
	ErrOrderNotOwned = errors.Forbidden(ReasonOrderNotOwned, "order belongs to another user")
	// ErrAmountMismatch: the amount is not the order's total (metadata
	// order_total says what it is).
	ErrAmountMismatch = errors.BadRequest(ReasonAmountMismatch, "amount differs from the order's total")
	// ErrOrderUnavailable: the order service did not answer, so the order
	// could not be checked; nothing was debited. Retry with the same key.
	ErrOrderUnavailable = errors.ServiceUnavailable(ReasonOrderUnavailable, "order service unavailable; the order could not be checked")
	ErrPaymentNotFound  = errors.NotFound(ReasonPaymentNotFound, "payment not found")
	// ErrGatewayTimeout: the gateway did not confirm the capture; nothing
	// was debited. Retry with the same key.
	ErrGatewayTimeout = errors.GatewayTimeout(ReasonGatewayTimeout, "payment gateway timed out")
	// ErrUnavailable: a transient failure (database, broker); retry with
	// the same key.
	ErrUnavailable = apierr.Unavailable("payment temporarily unavailable")
	// ErrPaymentExists: a payment with this id (idempotency key) already
	// committed. Internal: CreatePayment answers with that payment.
	ErrPaymentExists = errors.Conflict("PAYMENT_EXISTS", "payment already exists")
	// ErrCommitUnknown: the local commit's outcome is unknown (connection
	// lost); the transactional message's check-back decides. Internal.
	ErrCommitUnknown = apierr.Unavailable("payment commit outcome unknown")
)

// final reports whether err is a business outcome that is stored with
// the idempotency key (a retry gets the same answer), as opposed to a
// transient failure that a retry may cure.
func final(err error) bool {
	for _, e := range []error{ErrAccountNotFound, ErrInsufficientBalance, ErrOrderAlreadyPaid, ErrOrderCancelled,
		ErrOrderNotFound, ErrOrderNotOwned, ErrAmountMismatch} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
