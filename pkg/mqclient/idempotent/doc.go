// Package idempotent makes message handlers and API calls effectively
// once: the side effect of a (consumer group, handler, business key) is
// applied at most once and the message is eventually acknowledged.
//
// # The guarantee
//
// Consumer.Wrap runs the effect in a gorm transaction whose first
// statement inserts a dedup record under a unique key (group, handler,
// key), with a SHA-256 fingerprint of the payload. The record and the
// effect commit together ("change instead of check"): a record exists if
// and only if the effect committed. A redelivery then hits the unique key
// and is acknowledged without running the effect; a concurrent delivery
// waits on the record's row lock and then sees the duplicate. The same key
// with a different fingerprint is not a duplicate: it is ErrPayloadMismatch
// (logged at error level, counted, returned for retry/DLQ unless
// Options.AckMismatch).
//
// Redis is only a fast path and a short in-progress claim, never the
// source of truth. Before the transaction one Lua call checks a "done"
// marker (a duplicate is acked without touching the database) and takes a
// claim (SET NX PX ClaimTTL), a lease its holder renews while the effect
// runs: of two concurrent deliveries exactly one proceeds, the other
// waits for the claim to end and is then acknowledged (done) or proceeds
// (the holder failed). The done marker is set only after the commit; on
// any failure the claim is released, and a crashed consumer's claim
// expires within ClaimTTL, which the redelivery waits out inside the same
// delivery: it is processed rather than dropped, and never spends its
// reconsume attempts (or lands in the DLQ) on an orphaned claim.
//
// # Failure model
//
//   - Crash after the claim, before the commit: the transaction rolls back;
//     the redelivery waits (at most ClaimTTL) for the orphaned claim to
//     expire, then applies the effect, whatever the retry delays.
//   - Crash after the commit, before the ack: the redelivery finds the
//     record (after the same wait) and is acked without a second effect.
//   - Redis down: Options.RedisPolicy decides, per handler: FailClosedDB
//     (default; the database alone still guarantees at most once),
//     FailClosedRetry (ErrRedisUnavailable: retry later), FailOpen
//     (proceed unclaimed). Redis losing keys (restart, failover, eviction,
//     expiry) never causes a second effect: the record holds. A hung
//     Redis (no answer) counts as down after Options.RedisTimeout per
//     call, whatever the go-redis client's options: a client without
//     ContextTimeoutEnabled ignores context deadlines, so its call is
//     abandoned at the deadline (it ends at the client's own read
//     timeout, holding a pool connection until then). Build the client
//     with ContextTimeoutEnabled: true to avoid that.
//   - Deadlocks and lock wait timeouts on the dedup insert (InnoDB gap and
//     shared locks when concurrent inserts of one key meet a rollback) are
//     ErrTransient: retried, never taken as "done".
//   - A commit whose outcome is unknown (connection lost) is returned as an
//     error; the redelivery finds out from the record.
//
// # Limits and what the user must do
//
//   - All database work of the effect must go through the tx it is given,
//     and the dedup table must be in the same database as the business
//     data. Effects outside the database (HTTP calls, e-mails) are
//     serialised per key but may repeat if the process dies after them
//     and before the commit; make them idempotent downstream (pass the key
//     along).
//   - Choose Key so that the same business event always gives the same
//     key, even when resent with a new message id.
//   - Keep records at least as long as a message can come back: retry
//     schedule + DLQ retention + manual replays (Cleaner.Retention).
//   - ClaimTTL (10 s) is how long an orphaned claim delays its key; the
//     holder renews it, so it needs not exceed the longest effect. A
//     claim lost anyway (Redis evicted it or failed over) is safe (the row
//     lock serialises) and counted as claims_lost{expired}. A delivery
//     blocks for up to ClaimTTL while another holds its key; only a live
//     holder working longer than that makes it return ErrInProgress.
//   - A Redis-only Consumer (nil db) has no durable record: only for
//     non-critical handlers.
//
// Schema returns the table to put in your migrations; Migrate creates it.
// Store gives API handlers the same guarantee for Idempotency-Key headers,
// storing and replaying the original response. Cleaner deletes old
// records in small batches.
//
// # Metrics
//
// With Options.Registerer: idempotent_dedup_hits_total{source=redis|db},
// idempotent_redis_fallbacks_total{policy},
// idempotent_payload_mismatches_total,
// idempotent_claims_lost_total{reason=busy|expired},
// idempotent_effects_applied_total and idempotent_transient_errors_total,
// all labelled with group and handler.
package idempotent
