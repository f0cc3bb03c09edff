// Package timer delivers messages at arbitrary times (RocketMQ 5 timer
// messages) on top of the commit log, and lets producers recall them.
//
// # Protocol
//
// A producer sets one of TIMER_DELAY_SEC or TIMER_DELAY_MS (relative to the
// broker's receive time, so producer clock skew does not matter) or
// TIMER_DELIVER_MS (absolute Unix ms, producer clock); if several are set
// the first in that order wins. Service.Accept, called by the send path
// before storing, computes the delivery time at, writes it to TIMER_OUT_MS,
// drops the three request properties and DELAY (a timer replaces a delay
// level), and moves the message to topic rmq_sys_wheel_timer queue 0 with
// REAL_TOPIC/REAL_QID. The store sets the consume-queue tags code of that
// unit to at. A time more than MaxDelay (timerMaxDelaySec, default 3 days)
// ahead is refused with ErrDelayTooLong, a malformed value with ErrBadTimer
// (both MESSAGE_ILLEGAL). A time not in the future (at <= receive time) is
// delivered directly: Accept leaves the topic alone.
//
// Recall handle: the timer message's UNIQ_KEY, i.e. the msgId the
// producer's send result carries. Two ways to recall:
//
//   - a message to the same topic with TIMER_DEL_UNIQKEY = handle
//     (RocketMQ 5's convention); Accept turns it into a recall marker in
//     the timer topic; the send result only says the marker is stored, the
//     outcome is logged and counted;
//   - Service.Recall(ctx, topic, handle) (Tide's TideRecallTimer request),
//     which stores the same marker and returns the outcome: nil (recalled,
//     never delivered), ErrAlreadyDelivered, or ErrNotFound (see Recall).
//
// A marker is bound to a topic: it recalls only timers whose real topic
// is the marker's (the topic of the recall message, or Recall's topic),
// so whoever may send to one topic cannot cancel another topic's timers
// by knowing their handles. Recall with an empty topic (an operator's
// recall, admin-only on the broker) matches any topic.
//
// A marker applies to the timers stored before it. Recall and delivery run
// on the same goroutine, so the race has exactly one winner: a recall
// processed before the timer's delivery cancels it for good (the marker is
// in the commit log and survives restarts); one processed after returns
// ErrAlreadyDelivered. Consumers must still be idempotent (see below).
//
// # Design
//
// One goroutine scans the timer queue from a checkpoint, in store order,
// and keeps the pending timers in memory: a binary min-heap of 24-byte
// entries (delivery time, commit log offset, UNIQ_KEY hash) ordered by
// (delivery time, store order), an index from key hash to offset for
// recalls, and the list of pending offsets in store order (8 bytes) for
// checkpoints: about 74 bytes per pending timer measured
// (BenchmarkPendingMillion), so a million pending timers take ~75 MB. A
// heap rather than RocketMQ 5's disk-backed timing wheel: everything else
// already lives in the commit log, a heap is exact to the millisecond (no
// slot rounding, which in RocketMQ can fire up to one slot early) and
// O(log n) is nothing at this scale (~2 µs per add+pop at 1M). Due timers
// are delivered by re-reading the record and putting the restored message
// (new offsets and store time; body, flag, properties incl. UNIQ_KEY and
// TIMER_OUT_MS, sysFlag, born time/host and reconsume times kept).
//
// # Guarantee
//
// Never early: a timer is put only when the service clock reads at least
// TIMER_OUT_MS, so the delivered message's store time is >= its TIMER_OUT_MS.
// Timers due at the same millisecond are delivered in store order.
// Lateness is bounded by the poll interval (100 ms; Notify from the
// dispatch listener makes new timers visible at once; the goroutine never
// sleeps past the next due time), the backlog of timers
// due before it (each delivery is one record read and one put, BatchSize
// at a time between scans), and put failures (retried every RetryBackoff,
// never skipped). Stats().Lateness has the distribution (histogram,
// Quantile for p50/p99) and Stats().Pending the backlog.
//
// # Failure model
//
// At-least-once delivery. The checkpoint is written every FlushInterval
// (1 s) when something changed and at Stop. After a crash the service
// restarts from the last checkpoint: timers delivered after it are
// delivered again (duplicates, never losses), recall markers stored after
// it are applied again (recalls are never lost). A clean Stop + restart
// delivers nothing twice (but see Failover below). A timer whose record is unreadable (removed by
// retention, corrupt) is logged and counted in Stats().Skipped. With
// ASYNC_FLUSH a machine crash can lose timers or deliveries the store had
// not flushed, like any ASYNC_FLUSH write. Stop must run before the store
// is closed. Recall outcomes are remembered for the last OutcomeMemory
// delivered/recalled handles of this process only: after a restart, a
// recall of a timer finished before it gets ErrNotFound.
//
// Failover: with Options.Replicated (controller mode: the confirm offset)
// the checkpoint lists a delivered timer as still pending until its
// delivered copy is below that offset. A slave keeps a copy of its
// master's checkpoint (Checkpoint, ReplaceCheckpoint, Reload on
// promotion), so a promoted slave delivers again only the timers of the
// last checkpoint interval and those whose copies it may lack, never
// one the old master had not delivered. The same rule makes a clean
// Stop + restart deliver again the timers whose copies were not yet
// confirmed at Stop.
//
// # Limits
//
// The timer record must outlive the wait: keep fileReservedTime (hours)
// well above timerMaxDelaySec, and the disk below the forced-cleanup ratio;
// unlike RocketMQ 5, Tide does not re-write long timers to keep their
// records young. Recalled timers stay in the heap (as tombstones) until
// their delivery time. Timers without UNIQ_KEY cannot be recalled.
// Half (prepared) and rollback transaction records are left alone by
// Accept: the commit path (END_TRANSACTION) should call Accept on the
// committed message.
//
// # Persisted file
//
// Options.CheckpointPath (config/timerCheckpoint) plus the previous version
// as .bak, replaced atomically (checkpoint.go has the byte layout). It
// says: every timer below queue offset "done" is finished; between done
// and "scan" exactly the listed commit log offsets are pending; scanning
// resumes at scan. Restoring reads the consume queue from done to scan
// and the records of the listed timers only. Missing file: scan the whole
// timer queue (first start). Undecodable file and .bak: New fails with
// ErrBadCheckpoint; deleting both rescans everything, redelivering every
// timer still in the store.
package timer
