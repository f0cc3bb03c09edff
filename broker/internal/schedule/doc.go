// Package schedule implements RocketMQ 4.x delay levels (rocketmq-protocol.md
// §5.2): a message sent with property DELAY = n > 0 is stored in
// SCHEDULE_TOPIC_XXXX queue n-1 (Divert) and put back into its real topic
// and queue as a new message once its level's delay has passed (Service).
//
// # Guarantee
//
// Never early: a message of level n is delivered only when the clock reads
// at least its due time, the later of the consume-queue tags code the store
// computed (store time + the store's delay of level n) and store time +
// Options.Levels[n-1]. Lateness is bounded by the poll interval (100 ms by
// default; Notify from the dispatch listener makes newly stored messages
// visible sooner), the time to put the messages due before it in the same
// level, and put failures (retried every RetryBackoff, never skipped).
// Within a level, delivery follows store order.
//
// Delivered messages are new messages (new commit log and queue offsets,
// new store time) with the original body, flag, properties (minus DELAY,
// REAL_TOPIC, REAL_QID), sysFlag, born time and host, store host,
// reconsume times and UNIQ_KEY (so the client-visible msgId is unchanged).
//
// # Failure model
//
// Delivery is at-least-once. Per-level progress (the next queue offset to
// deliver) advances in memory only after the put of the message returned,
// and is persisted every FlushInterval (default 10 s) and at Stop. A crash
// between a put and the next persist delivers the messages in that window
// again after restart; a clean Stop + restart delivers nothing twice and
// loses nothing. A message whose record is no longer readable (removed by
// retention, or corrupt) is logged, counted in Stats().Skipped and skipped;
// so is a record without REAL_TOPIC/REAL_QID. With ASYNC_FLUSH, a machine
// crash (not a process crash) can lose delivered messages whose progress
// was already persisted, as with any ASYNC_FLUSH write.
//
// Stop must run before the store is closed: puts then fail with
// store.ErrShuttingDown and are retried until Stop.
//
// # Limits
//
// The level table is fixed at start; changing it between runs re-times
// messages already waiting (the due time is recomputed from the new table
// and the old tags code, whichever is later). Levels above the table are
// clamped to the last level by Divert. Half and rollback transaction
// records are never diverted.
//
// # Persisted file
//
// Options.OffsetPath (config/delayOffset.json), RocketMQ's shape, written
// atomically by package jsonfile:
//
//	{"offsetTable": {"1": 12, "2": 0, ...}}   level -> next queue offset
package schedule
