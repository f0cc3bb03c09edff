// Package delay runs an action for a business key at a time ("cancel
// order 42 at 12:30 unless it was paid"), lets the service recall it, and
// makes the action a conditional, exactly-once state transition.
//
// # Pieces
//
//   - Scheduler.Schedule sends a timer message (mqclient.Message.DeliverAt,
//     RocketMQ 5 timer semantics, served by Tide's broker) for
//     Action{Topic, Key, At, Payload} and returns a Handle, a string to
//     store with the business row.
//   - Scheduler.Recall(handle) cancels it through Tide's TideRecallTimer
//     request, naming the timer's topic (under ACL the account needs PUB
//     on it, and the recall cancels only that topic's timer), and says
//     what happened: Recalled (it will never fire; a repeated recall
//     answers Recalled again, the broker's recall is idempotent),
//     AlreadyFired, or NotFound (nothing pending or remembered, e.g.
//     after a broker restart).
//   - Handler (the consumer side) and Sweeper (the backstop) both run Fire:
//     Check and Act in one gorm transaction, so the action happens only if
//     the state still calls for it, and a late, duplicate or redundant
//     firing (after payment, or after the sweeper already acted) is a
//     no-op.
//
// # Guarantee
//
// Never early: Tide's broker delivers a timer only when its clock reads
// At or later, and Handler refuses (ErrEarly, redelivered later) a message
// that arrives before At on the consumer's clock, which also protects
// against brokers that ignore timers and deliver at once. At least once:
// timers survive broker restarts (checkpointed; a crash may deliver a
// timer twice, never lose it). Lateness is the broker's timer precision
// (100 ms poll, usually a few ms) plus its backlog plus consumer lag;
// tide_delay_lateness_seconds measures it. Exactly one effect per key:
// Check must read the state with a lock (SELECT … FOR UPDATE) and Act
// must change it so that Check then answers false; both run in one
// transaction.
//
// Recall is an optimisation, not a correctness mechanism: a recall and a
// delivery never both win at the broker, but AlreadyFired and NotFound
// (e.g. after a broker restart, which forgets finished timers) mean the
// handler may still run, and Check then makes it a no-op.
//
// # Creating the timer atomically with the order
//
// Schedule is a network call; it cannot join the order's database
// transaction. Two ways to never have "order without timer":
//
//  1. Send the timer as a transactional message (mqclient
//     SendInTransaction with DeliverAt set): the order insert is the local
//     transaction and the check-back reads it. Store the handle afterwards
//     (or recompute it: the handle is only needed for recall).
//  2. Commit the order, then Schedule and store the handle; run a Sweeper
//     whose query finds overdue orders still in the initial state (the
//     crash between commit and Schedule, or a lost timer, leaves exactly
//     those). This is the simple default; the Sweeper is required with it.
//
// # Brokers without timers (fallback)
//
// Scheduler.Start checks the brokers: a broker without timers (Apache
// RocketMQ 4.x, or Tide with tideExtensions=false) would store a timer
// message and deliver it at once, so Start refuses it with ErrNoTimers
// naming the broker, unless delay levels are configured.
// WithDelayLevels(levels…) sends delay levels instead (any RocketMQ 4.x
// broker): the smallest level not shorter than At−now is chosen, so the
// action fires up to one level step late, never early; a delay beyond the
// longest level is refused with ErrDelayTooLong (chain it or rely on the
// Sweeper). The levels must equal the broker's messageDelayLevel. Level
// messages cannot be recalled (ErrNotRecallable); Check makes their firing
// a no-op. Level delays are relative to the broker's receive time; At is
// the producer's clock, and Handler checks it on the consumer's clock.
//
// # Limits
//
//   - A timer more than WithMaxDelay (default 72 h, Tide's
//     timerMaxDelaySec) ahead is refused with ErrDelayTooLong.
//   - Absolute times: producer and consumer clocks must agree with the
//     broker's within the precision you need (NTP); a producer clock
//     ahead of the broker makes timers fire later, never earlier than At
//     on the consumer (Handler's check).
//   - Recall needs the broker that stored the timer to be reachable; its
//     address is looked up by broker name from the NameServers.
//   - Subscribe Handler on a concurrent (not ordered) consumer; a refused
//     early message comes back through the retry topic (10 s, 30 s, …).
package delay
