// Package store is the broker's message store: the facade over the commit
// log, the consume queues, the index, the checkpoint, the dispatcher that
// builds consume queues and index from the commit log, flushing, crash
// recovery and retention (RocketMQ's DefaultMessageStore).
//
// Layout under storePathRootDir (rocketmq-protocol.md §5.9):
//
//	commitlog/<20-digit offset>                     segments of mappedFileSizeCommitLog
//	consumequeue/<topic>/<queueId>/<20-digit offset> units of 20 bytes
//	index/<yyyyMMddHHmmssSSS>                        hash index files
//	checkpoint                                       what is durable (package checkpoint)
//	abort                                            present while open: crash detection
//
// Lock order: commit log append lock -> Store.offMu; Store.cqMu is never
// held while taking the append lock.
package store
