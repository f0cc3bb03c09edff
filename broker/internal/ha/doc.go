// Package ha replicates a master broker's commit log to its slaves
// (RocketMQ 4.x master/slave HA: HAService, HAConnection, HAClient), and
// defines the metadata a slave copies from its master. Stdlib only; it
// knows the store (broker/internal/store) but no broker or remoting code.
//
// # Roles
//
// A broker group is the brokers sharing a brokerName: brokerId 0 is the
// master (brokerRole ASYNC_MASTER or SYNC_MASTER), ids > 0 are slaves
// (brokerRole SLAVE). The master runs a Server on haListenPort (10912); a
// slave runs a Client against haMasterAddress, or the haServerAddr that
// its NameServer registration returns (Client.SetMasterAddress). Both
// stores must use the same mappedFileSizeCommitLog.
//
// # Protocol
//
// One TCP connection per slave, opened by the slave; no framing beyond
// the two fixed headers below (RocketMQ's own wire format, so its tools
// and knowledge carry over). All integers are big-endian.
//
//	slave                                               master
//	  | ---- report: max offset S (8 B) ------------------> |  handshake
//	  |                                                      |  S > master max: refuse, close
//	  |                                                      |  S < master min: start at min
//	  | <--- transfer: start=S, size=n, n bytes ------------ |
//	  |      (slave: start == own max? AppendRaw : drop)     |
//	  | ---- report: S+n (ack) ----------------------------> |  releases WaitSlaveAck <= S+n
//	  | <--- transfer: start=S+n, size=m, m bytes ---------- |
//	  | ---- report: S+n+m --------------------------------> |
//	  |              ... idle ...                            |
//	  | <--- heartbeat: start=next, size=0 (every 5 s idle)  |
//	  | ---- report: own max (every 5 s) ------------------> |
//
// Report, slave -> master, at connect, after applying what it has read,
// and every heartbeat interval:
//
//	+---------------------------+
//	| max physical offset int64 |   the end of the slave's commit log
//	+---------------------------+
//
// Transfer, master -> slave:
//
//	+--------------------+-----------+---------------------------+
//	| start offset int64 | size int32| size bytes of commit log  |
//	+--------------------+-----------+---------------------------+
//	   12-byte header; size 0 = heartbeat (no body)
//
// In controller mode the slave opens with a hello naming its controller
// id, and the transfer header carries the master's confirm offset after
// the size (20 bytes; layouts in protocol.go). The master sends an empty
// transfer whenever its confirm offset rose past the last one it sent, and
// the slave dispatches nothing past it (ClientOptions.OnConfirm,
// Client.ConfirmOffset): a slave serves only what every SyncStateSet
// member has.
//
// The body is the master's commit log exactly as it lies on disk: stored
// records and the blank filler (plus the unused rest) at a segment end.
// A transfer never crosses a segment end and holds up to MaxTransfer (32
// KiB) bytes cut at a record boundary; a single record larger than that
// goes whole in one transfer (at most 64 MiB, far above maxMessageSize).
// Cutting at record boundaries is this package's choice, not a protocol
// rule: it keeps a slave's commit log ending on a record, so a slave
// stopped between transfers never restarts with a torn record that its
// recovery could take for a whole one. The slave accepts any cut anyway
// (store.AppendRaw takes arbitrary byte ranges; its dispatcher waits for
// the rest of a record).
//
// # What the slave does with it
//
// The slave appends each transfer with store.AppendRaw(start, body),
// which writes the bytes at the same offsets as on the master (the commit
// logs are byte-identical) and wakes the store's dispatcher, which builds
// the consume queues and the index from the records exactly as on the
// master. A transfer whose start is not the slave's own commit log end is
// refused (ErrGap: it would leave a hole or a duplicate) and the slave
// reconnects, reporting its end again; the only exception is an empty
// slave, which takes the master's first offset (its oldest retained
// segment). So after any disconnect, or a restart of either side, the
// stream resumes from the slave's end: no gaps, no duplicates.
//
// # Guarantees
//
// ASYNC_MASTER: a send is acknowledged after the local write; slaves
// follow in the background (woken by Server.Notify, else by a 10 ms poll
// of the commit log end).
//
// SYNC_MASTER: the broker calls Server.WaitSlaveAck(ctx, end) with the
// end of the written run (CommitLogOffset + WroteBytes) after its own
// write (and flush, in SYNC_FLUSH). nil means at least one slave reported
// a commit log end >= end, i.e. it has appended those bytes (written into
// its page cache and handed to its dispatcher; the slave's own flush
// policy decides when they reach its disk, as in RocketMQ). Otherwise:
//
//	ErrSlaveNotAvailable  no slave past the handshake, or the best one is
//	                      more than MaxGapNotInSync (256 MiB) behind
//	                      -> SLAVE_NOT_AVAILABLE (11)
//	ErrFlushSlaveTimeout  no ack within SlaveTimeout (3 s)
//	                      -> FLUSH_SLAVE_TIMEOUT (12)
//
// Both leave the message stored on the master (the client sees a send
// status, not a failure, as with RocketMQ); it still reaches the slave
// when one catches up. Waiters are kept in a heap by offset: each ack
// releases exactly the waiters it covers, one wake-up each.
//
// # Failure behaviour
//
//   - Connection loss (either side): the master drops the connection's
//     goroutines; the slave reconnects with backoff (100 ms doubling to
//     5 s, back to 100 ms after a session that delivered data, at once
//     after SetMasterAddress) and resumes from its commit log end.
//   - Silence: the slave reconnects after ReadTimeout (20 s) without a
//     transfer or heartbeat; the master drops a slave silent for
//     ReadTimeout (it reports every 5 s); socket writes time out after
//     WriteTimeout.
//   - Slave ahead of the master (the master lost its tail, or the slave
//     belongs to another master): divergent histories. The master logs
//     an ERROR and closes the connection; the slave keeps retrying and
//     keeps being refused. Its store must be rebuilt (emptied) by an
//     operator; nothing is truncated automatically.
//   - Slave behind the master's retention: an empty slave starts at the
//     master's first retained segment; a slave holding older data
//     refuses the gap (ErrGap, logged on both sides, retried) and must be
//     rebuilt.
//   - Protocol violations (an ack going backwards or past what was sent,
//     a bad header, a transfer crossing a local segment end) close the
//     connection.
//
// # Limits
//
//   - Divergence is detected only when the slave is ahead at connect
//     time. A slave whose history differs below the master's end (e.g.
//     after a master crash lost data and new writes refilled the range)
//     is not detected: the protocol carries offsets, not checksums. In
//     controller mode the broker compares epoch files with the master
//     and truncates before it replicates, which covers that case.
//   - Acks count appended, not fsynced, bytes on the slave.
//   - The slave must not take writes of its own (store.SetReadOnly);
//     switching roles is the broker's (controller mode,
//     roleswitch.go): it closes the Client or Server and starts the other.
//   - Lag time (Status) is the store time of the oldest record the slave
//     lacks, read from the master's commit log; when the slave's offset is
//     not a record boundary, the time since it was last fully caught up.
//
// # Metadata
//
// Metadata (topic configs, consumer offsets, delay offsets, subscription
// groups) is what a slave copies from its master, at the latest every
// DefaultMetadataSyncInterval (a long poll the master answers early when
// its topics or groups change), so it can serve consumers; this package
// only defines it and its JSON encoding, the broker serves it over a
// request code.
//
// # Lifecycle
//
// NewServer/NewClient -> Start -> Close. Close the Server or Client
// before the store they use. Everything is safe for concurrent use.
package ha
