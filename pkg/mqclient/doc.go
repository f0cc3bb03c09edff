// Package mqclient is Tide's Go client for brokers that speak Apache
// RocketMQ 4.x's remoting protocol: Tide's own broker and Apache RocketMQ
// 4.x/5.x clusters (through their NameServers and brokers, not the 5.x
// proxy). It offers a Producer (sync, async, oneway, batch, delayed and
// timer messages, transactions), a PushConsumer (clustering or
// broadcasting, concurrent or ordered per key) and an Admin client.
//
// # Lifecycle
//
// Every client is built with New*(…Option), started with Start and ended
// with Shutdown. New validates options and does not touch the network;
// Start launches the background loops (route refresh every 30 s, heartbeat
// every 30 s, and for consumers rebalance every 20 s, offset commit every
// 5 s and ordered lock renewal every 20 s); Shutdown is idempotent, bounded
// by its context, and afterwards every call fails with ErrClosed. There
// are no package-level clients or globals.
//
// # One Client per process
//
// Producers, consumers and admins run on a Client (RocketMQ's
// MQClientInstance): the client id, the connections, the route cache, the
// fault table and one heartbeat carrying every producer and consumer
// group. Give WithClient(c) to every constructor to share one: a service
// then holds one connection per broker and sends one heartbeat round for
// all its groups. A member built without WithClient gets a private Client
// (nothing shared, as before Client existed), so existing code keeps
// working unchanged. Sharing is explicit rather than keyed on the client
// id as in RocketMQ's Java and Go clients, where members that meet under
// one id silently take the first one's options (NameServers, credentials).
// The Client is reference-counted: Client.Start and each member's Start
// take a reference, their Shutdowns release it, and the last release stops
// its loops and closes its connections; a closed Client cannot be
// restarted (ErrClosed). A member's Shutdown makes its own guarantees
// (handlers finished, offsets committed, locks released, its group
// unregistered once no other member of the Client uses it) and never
// closes connections another member uses. One Client runs at most one
// PushConsumer per consumer group (ErrDuplicateGroup). Transaction
// check-backs go to the producer of the half message's producer group;
// NOTIFY_CONSUMER_IDS_CHANGED rebalances the named group's consumer at
// once (the consumer is registered before its first heartbeat, which the
// broker answers with one). Options default to RocketMQ's values (defaultSettings
// is the single place they live) and are validated by the constructors.
//
// # Concurrency and blocking
//
// Producer, PushConsumer and Admin are safe for concurrent use. Calls
// block until the broker answers or their context is done; each request
// is also bounded by WithRequestTimeout (3 s) or, for sends, by
// WithSendTimeout (3 s per attempt). SendAsync blocks only while 10 000
// of its sends are pending; SendOneway only for the write. SendAsync and
// concurrent Send calls gather messages to one queue into one batch
// request while an earlier request to that broker is in flight
// (WithAutoBatch, on by default, where RocketMQ 5's autoBatch is off:
// measured to pay, see autobatch.go); a message to an idle broker goes at
// once, alone, and each caller still gets its own result. Handlers and
// callbacks run on client goroutines and must not block forever: a
// handler that never returns holds its key (ordered) and its queue's
// offset, and Shutdown waits for it until its context expires.
//
// # Routing and failures
//
// Routes come from the NameServers (tried in turn), are cached and
// refreshed every WithRouteRefreshInterval (30 s). A route is also
// re-fetched at once, without waiting for that refresh, when a send finds
// no writable queue (the topic's master is down or has not registered
// yet), when a broker cannot be dialled or closes the connection, when it
// answers TOPIC_NOT_EXIST and when a broker address is missing: at most
// once per 300 ms per topic, concurrent callers sharing one fetch (one
// place, Client.refreshRoute, which failover logic can reuse). So after a
// master restarts and registers with the NameServers (a Tide or RocketMQ
// broker registers as it starts, then every 30 s), sends to its topics
// succeed again within one throttle gap: about 0.1-0.3 s in
// TestProducerRecoversWhenMasterReturns (bounded at 5 s there), where
// before they failed with "no writable queue" until the next periodic
// refresh, up to 30 s. A send that finds no writable queue even after the
// re-fetch fails at once with ErrTopicNotFound; it does not wait for the
// master. Ordered consumers whose lock round failed (master down) retry it
// after 1 s instead of WithLockInterval, so they resume about a second
// after the master is back. Sync, async and oneway
// sends retry up to WithRetries times on transport errors and retryable
// codes (SYSTEM_ERROR, SYSTEM_BUSY, SERVICE_NOT_AVAILABLE, NO_PERMISSION,
// TOPIC_NOT_EXIST), on another broker when there is one (oneway sends only
// when the write failed). A broker that failed or answered slowly is
// isolated for a while (WithFaultIsolation). A master address whose send
// timed out or could not be dialled is not sent to again for one send
// timeout while its broker's route still names it: the send re-fetches the
// route every 300 ms and goes to the new master as soon as the NameServers
// name it (a controller-mode failover; a killed host answers nothing, so
// each attempt there would cost a whole timeout), or back to the old
// address once that timeout passed. Messages with a ShardingKey,
// a custom QueueSelector or SendTo keep their queue on retries, so that
// ordering is never traded for availability. A retried send whose first
// attempt timed out may be stored twice.
//
// # Delivery guarantees
//
// Delivery is at least once. Handlers must be idempotent; the
// middleware.Duplicate test mode helps prove it. A message is delivered
// again (a duplicate) only when:
//   - its handler returned an error (by design: retry);
//   - the consumer crashed, or Shutdown's context expired, before the
//     handler returned or before its offset was committed;
//   - its queue moved to another member while a message with a lower
//     offset of that queue was still pending (a queue's committed offset is
//     its lowest unfinished one, so finished messages above it are
//     redelivered to the new owner; this holds for ordered consumers too,
//     whose keys of one queue run in parallel: another key's message that
//     was pulled but not yet started holds the offset back);
//   - a producer retried a send that had in fact been stored.
//
// A message is never skipped: committed offsets never pass a message whose
// handler (or batch handler) has not returned nil, sent it to the retry
// topic or, for ordered consumers, to the dead-letter queue.
//
// # Ordered consumption
//
// WithOrdered locks each assigned queue at the broker (renewed every
// WithLockInterval; a queue whose lock was not confirmed for 30 s stops
// starting handlers, well before the broker's 60 s expiry lets another
// member take it). Within a queue, messages with the same key
// (Message.Key: ShardingKey, else the first of Keys, else "") are handled
// one at a time in queue order; different keys run in parallel. A failing
// message is retried in place with exponential backoff (WithRetryBackoff)
// and blocks only its own key; after WithMaxReconsumeTimes attempts it is
// sent to %DLQ%group and the key moves on. When a queue moves to another
// member, the old member finishes its running handlers, commits and only
// then unlocks, so no key is handled by two members at once, and the new
// member starts exactly where the old one stopped.
//
// Locks and dropped connections: the broker keeps a queue lock until it
// expires (60 s after its last renewal) or its holder unlocks it, not when
// the holder's connection closes (docs/broker.md), and the consumer takes
// its locks on a broker as lost the moment its connection to that broker
// closes (the broker may have restarted and forgotten them): it starts no
// handler on those queues and stops pulling them until it has locked them
// again, which it tries at once and then with a backoff. Handlers already
// running finish. So a member cut off from the broker and the member that
// takes its queues over never handle the same queue at once
// (TestOrderedConnectionDropNoOverlap).
//
// A lock regained after it was lost (refused, its connection closed, or
// not renewed for 30 s) is treated as a new assignment, since another
// member may have owned the queue meanwhile: the messages pulled before
// and not yet started are discarded, the handlers already running finish,
// and the queue resumes from the offset committed on the broker, as a new
// owner would. While its lock is not held a member commits nothing for the
// queue, so it never writes its stale position over the new owner's
// progress (TestOrderedRegainedLockResumesFromCommitted). What it finished
// since its last commit is redelivered (at least once). A refused lock is
// logged at Warn with the queue and the reason, once per change.
//
// # Batch consumption
//
// SubscribeBatch registers a BatchHandler, which gets up to
// WithConsumeBatchSize messages per call (default 1; RocketMQ's
// consumeMessageBatchMaxSize). A batch holds messages of one queue only,
// in queue order, and takes one WithConcurrency slot. It never waits to
// fill up: concurrent consumers cut batches from what one pull returned
// (so WithPullBatchSize bounds them too), and a retry-topic batch holds
// messages of one original topic only. Success acknowledges every message
// of the batch; an error redelivers every one of them as a failed Handler
// redelivers its one message (concurrent: each is sent back to the retry
// topic, those the broker refuses are retried locally together), so the
// handler must be idempotent per message, and a retried batch may be cut
// differently. Offsets never pass a message of an unfinished batch.
//
// With WithOrdered, a batch holds messages of one key only: the key's
// waiting messages in queue order, up to the batch size. Different keys
// still run in parallel and one key's batches one at a time, so per-key
// ordering is exactly that of single-message handlers. A failing batch is
// retried whole, in place; after WithMaxReconsumeTimes attempts its
// messages go to %DLQ%group in queue order (one the broker refuses stays,
// with those after it, and is retried). WithMiddleware does not wrap
// batch handlers.
//
// # Retries and dead letters
//
// A concurrent clustering consumer sends a failed message back to the
// broker (CONSUMER_SEND_MSG_BACK), which redelivers it through
// %RETRY%group after the delay of level 3+ReconsumeTimes (10 s, 30 s, 1 m,
// …), and moves it to %DLQ%group after WithMaxReconsumeTimes (16). If the
// broker refuses the send-back, the message is retried locally with
// backoff, never dropped. Broadcasting consumers log and drop failed
// messages, as RocketMQ does. Admin.Resend puts a dead letter back.
//
// # Offsets
//
// Clustering offsets live on the broker (QUERY/UPDATE_CONSUMER_OFFSET),
// broadcasting offsets in a JSON file under WithOffsetDir, written
// atomically. A group with no stored offset starts per WithConsumeFrom.
// Offsets are committed every WithCommitInterval, when a queue is taken
// away (after its handlers finish) and on Shutdown (after all handlers
// finish or its context expires).
//
// # Transactions
//
// NewTransactionProducer adds SendInTransaction: the half message, the
// local transaction and END_TRANSACTION in one call, plus a
// TransactionChecker the broker calls back for half messages whose outcome
// it did not learn. The checker must read durable state.
//
// # Wire compatibility
//
// Every byte is encoded by pkg/remoting/protocol. Single sends use code
// 310 (short header), batches 320; pulls set the SUBSCRIPTION bit and carry
// the expression, so brokers need no prior heartbeat to filter (a
// heartbeat is still sent to every broker as soon as its route is known).
// The client id is "ip@instance"; members of one group must have distinct
// ids (the default instance name includes the pid and a random suffix).
// AllocateAveragely and AllocateByCircle match RocketMQ's and
// rocketmq-client-go's, so mixed groups agree on queue ownership.
//
// Requests carry the ROCKETMQ binary header (serialize type 1, Java
// RocketMQSerializable: fixed fields, then length-prefixed ext key/values)
// rather than rocketmq-client-go's JSON one; sends and pulls are written
// from their typed headers without an ext-field map. Tide and Apache
// RocketMQ 4.x/5.x NameServers and brokers decode both types and answer
// in the type of the request, so this needs no feature negotiation;
// WithJSONHeaders sends JSON instead. Responses and broker-initiated
// requests are read in either type.
package mqclient
