// Package txmsg is the transactional outbox of Tide services built on
// RocketMQ half messages, with a fenced check-back: a message is published
// if and only if a gorm (MySQL/MariaDB, InnoDB) transaction commits.
//
// # How it works
//
// Sender.Send(ctx, msg, key, fn):
//
//  1. sends msg as a half message (stored, invisible to consumers),
//     carrying key (property TIDE_TX_KEY, also in Keys) and a random
//     attempt id (TIDE_TX_ATTEMPT);
//  2. begins a database transaction, inserts the fence row
//     (tx_key=key, attempt, status "committed") first, runs fn(tx), commits;
//  3. sends COMMIT to the broker if and only if the database COMMIT
//     succeeded, ROLLBACK otherwise. If the COMMIT's outcome is unknown
//     (connection lost), nothing is sent and Send returns an error wrapping
//     mqclient.ErrTransactionUnknown.
//
// When the broker has no decision after transactionTimeOut (the producer
// died, END_TRANSACTION was lost, or the outcome was unknown) it asks a
// live producer of the group (Sender.Check), which INSERTs a rollback
// marker under the same key:
//
//   - the business transaction is still open: InnoDB makes the insert wait
//     on the key (the fence) until that transaction ends;
//   - the insert succeeds: no transaction committed the key and none ever
//     can (its own fence insert now hits a duplicate key, so it rolls back
//     and Send returns ErrFenced): ROLLBACK;
//   - duplicate key: the committed row decides: "committed" by this
//     message's attempt: COMMIT; "rolled_back" or another attempt: ROLLBACK.
//
// # Guarantee
//
// The message becomes visible if and only if the fence row of its attempt
// committed, i.e. if and only if fn's writes committed; never for a
// rolled-back, never-started or still-open transaction, and at most one
// visible copy per Send (the broker applies the first decision only). The
// forbidden state "committed but rolled back" cannot occur: a check only
// answers ROLLBACK after its marker made the commit impossible. Delivery
// of the visible message is at least once (consumers must be idempotent).
//
// Fail closed: lock wait timeouts, deadlocks, connection errors, timeouts,
// a missing or unreadable row and a message without the properties all
// answer UNKNOWN, never COMMIT; the broker asks again after
// transactionCheckInterval, at most transactionCheckMax times, then parks
// the half message for an operator.
//
// # Bounds
//
// One check waits at most WithCheckTimeout (default 2 s, whole seconds):
// the session's innodb_lock_wait_timeout is set to it for the fence insert
// (and reset before the connection returns to the pool), and the check runs
// under a context of the same length, itself within the producer's request
// timeout (3 s). A business transaction that stays open longer than that
// makes the check answer UNKNOWN; it is checked again later, so a
// transaction may stay open for up to transactionCheckMax check intervals.
// A check that gives up can still leave its marker committed (the server
// finishes the insert); that only happens after the business transaction
// rolled back, so it is consistent.
//
// # Failure model (tested with a producer killed by SIGKILL)
//
//   - killed (or stalled) after the half message, before the transaction
//     began: the check fences the key and rolls back; a stalled Send
//     returns ErrFenced. Send again with the same key: it uses the key's
//     next transaction key (key#2, ...) and commits;
//   - killed inside the transaction: the database rolls it back, the check
//     fences and rolls back;
//   - killed after the database COMMIT, before END_TRANSACTION: the check
//     commits; the message is visible once;
//   - database unreachable during checks: UNKNOWN until it is back;
//   - a late END_TRANSACTION contradicting the check's decision, or a
//     duplicate one: ignored by the broker (first decision wins), and the
//     fence agrees with the first decision.
//   - the half message's answer lost (timeout, broker restart): the
//     producer retries it into the same queue, and a Tide broker stores it
//     once (mqclient's idempotent sends, on by default here as in every
//     mqclient producer; TestSendsAreIdempotent). Apache RocketMQ has no
//     such check: there a retried half message can be stored twice.
//
// # What the user must do
//
//   - Create the fence table (Schema, or Migrate) in the same database as
//     the business tables; write everything through the tx given to fn.
//   - Choose a key per business operation (e.g. "payment-42", at most
//     MaxKeyLen bytes, not ending in '#' and digits); a key that committed
//     is refused afterwards (ErrKeyCommitted) until Cleanup removes its
//     rows. After ErrFenced, send again with the same key: Send keeps one
//     fence row per attempt (key, key#2, key#3, ...) and picks the next.
//   - Run every instance with the same producer group (WithGroup), database
//     and table: check-backs go to any live instance of the group.
//   - Run Cleanup periodically; keep rows longer than every possible check
//     (see Cleanup).
//   - Keep fn short: the fence row's lock is held until COMMIT.
//
// # Limits
//
//   - The check-back must reach an instance that knows the broker. Pass
//     WithProducerOptions(mqclient.WithTopics(topics...)) so that a freshly
//     started (or restarted) instance heartbeats the brokers of its topics
//     at Start and answers check-backs of half messages left by a crashed
//     instance before it sends anything itself; without it, an instance
//     learns its brokers on its first Send.
//   - Isolation: the fence relies on InnoDB's unique-key locking; it works
//     under REPEATABLE READ and READ COMMITTED. Other databases are not
//     supported.
//   - No Redis fence is offered: Redis loses keys on restart or failover
//     (no durable, synchronous commit shared with the business transaction),
//     so a Redis fence could answer ROLLBACK for a committed transaction.
//   - Messages with a ShardingKey enter their queue at COMMIT time, not at
//     Send time: ordering among transactional messages follows commit order.
//
// Metrics (WithRegisterer): tide_txmsg_checks_total{outcome="commit"|
// "rollback"|"unknown"} and tide_txmsg_sends_total{outcome="committed"|
// "rolled_back"|"fenced"|"unknown"|"failed"}.
package txmsg
