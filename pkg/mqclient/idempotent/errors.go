package idempotent

import "errors"

var (
	// ErrPayloadMismatch: the business key was already used by a message
	// (or request) with a different payload fingerprint. It is never
	// treated as a duplicate: it is logged at error level, counted, and by
	// default returned so that the message goes to retry and then the DLQ
	// (see Options.AckMismatch).
	ErrPayloadMismatch = errors.New("idempotent: same key, different payload")
	// ErrInProgress: another delivery of the same key holds the Redis
	// claim right now. Retry later; the message is not done.
	ErrInProgress = errors.New("idempotent: key is being processed by another delivery")
	// ErrTransient: the database reported a deadlock or a lock wait
	// timeout (or a record vanished under cleanup). Nothing was applied;
	// retry later.
	ErrTransient = errors.New("idempotent: transient database conflict")
	// ErrRedisUnavailable: Redis failed and the policy is FailClosedRetry.
	ErrRedisUnavailable = errors.New("idempotent: redis unavailable")
	// ErrBadKey: the Key function failed or returned an empty or too long
	// key (more than MaxKeyLen bytes).
	ErrBadKey = errors.New("idempotent: bad business key")
	// ErrInvalidOptions: Validate rejected the options.
	ErrInvalidOptions = errors.New("idempotent: invalid options")
)
