// Package ordered applies the events of one business key (an order id) in
// version order, exactly once, on top of mqclient's ordered push consumer.
//
// # Guarantee
//
// Producer side, Stamp (or NewMessage) sets the message's ShardingKey to
// the business key, so every event of a key lands in one queue, and adds
// the key's version (property PropVersion): the event's sequence number in
// the service's own database (1 for the key's first event, then 2, 3, …).
// The producer must send the events of one key serially (wait for Send to
// return before sending the next version) from one place; the broker keeps
// the queue's order, nothing else does.
//
// Consumer side, a Guard keeps one row per key (tide_ordered_versions:
// scope, key, last_version) and a Guard.Handler applies a message only if
// its version is last_version+1: it locks the key's row, moves
// last_version forward with a compare-and-set UPDATE (… WHERE
// last_version = v-1) and runs the caller's Apply in the same gorm
// transaction. So the effect and the version commit together or not at
// all: after a crash between the commit and the acknowledgement the
// redelivered message is a duplicate and is acknowledged without effect.
// Use it with an ordered consumer (NewConsumer, or mqclient.WithOrdered),
// which hands a key's messages to one handler at a time, in queue order,
// across rebalances; the row lock also serialises a key if two consumers
// ever overlap.
//
// Each delivery ends in one Outcome:
//   - Applied: version = last+1, effect committed.
//   - Duplicate: version = last and the same body (SHA-256) as the applied
//     one: a redelivery or a producer retry. Acknowledged, no effect.
//   - Conflict: version = last with a different body: two producers used
//     the same version. Acknowledged, no effect, logged at WARN.
//   - Stale: version < last: a replay of an older event, or a regression
//     (an event that was overtaken). Acknowledged, no effect, WARN.
//   - Gap: version > last+1: versions are missing (never sent, dead
//     lettered, or sent concurrently out of order). The Policy decides.
//
// # Gap policy
//
// Strict (default): the message is not applied; the gap is recorded in
// tide_ordered_gaps (status "blocked", attempt count) and the handler
// returns an error wrapping ErrGap, so the ordered consumer retries it in
// place with backoff (mqclient.WithRetryBackoff) and, after
// mqclient.WithMaxReconsumeTimes attempts, moves it to %DLQ%group. The key
// stays parked: its later messages also find the gap and follow to the
// DLQ, until an operator calls Guard.Resolve (accepting the missing
// versions as done) and re-sends the dead letters in order
// (mqclient.Admin.Resend); the gap rows then read "resolved" (covered by
// Resolve) or "applied" (applied in order after it), never "blocked" for
// a version that was applied. Waiting only helps when the missing version can
// still arrive on another path; inside one queue it sits behind the
// blocked message, so strict mode is "stop and escalate", bounded by the
// consumer's retry budget.
//
// Lenient: the message is applied; Event.Skipped says how many versions
// were missing and a gap record (status "accepted") is written in the same
// transaction. Later messages of the key flow normally.
//
// # Failure model and limits
//
//   - A message whose Apply keeps failing (a poison message) blocks only
//     its key (other keys of the queue keep flowing) for the consumer's
//     retry budget, then goes to the DLQ; the key's next version then
//     meets a gap (strict: parked; lenient: applied with a gap record).
//   - Exactly-once effects need Apply to touch only the transaction it is
//     given (tx). Anything else (an HTTP call, another database) runs at
//     least once.
//   - Versions are per scope: two handlers of the same events (two
//     consumer groups, or two handlers of one group) need two scopes.
//   - Blocked time and blocked keys are measured per process.
//   - Changing the queue count of the topic remaps keys to queues and can
//     reorder in-flight events; the guard then reports gaps or stale
//     events instead of applying them out of order. Drain first.
//   - Deadlocks and lock-wait timeouts inside the transaction are returned
//     as errors, so the message is retried; nothing is committed.
//
// # What the service does
//
// Run Schema (or copy it into the service's migrations), stamp every event
// with its version when sending, create one Guard per handler and
// subscribe Guard.Handler on an ordered consumer. Guard is safe for
// concurrent use.
package ordered
