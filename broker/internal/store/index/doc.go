// Package index maps message keys (every KEYS value and UNIQ_KEY, as
// "topic#key") to commit log offsets, queryable by key and store time
// range, in RocketMQ's IndexFile format. Files are named by their creation
// time (yyyyMMddHHmmssSSS); a new one starts when the current one is full.
//
// File layout (big-endian):
//
//	+-----------------------------------------------+
//	| header 40 bytes                               |
//	|   beginTimestamp 8 | endTimestamp 8           |
//	|   beginPhyOffset 8 | endPhyOffset 8           |
//	|   hashSlotCount 4  | indexCount 4 (starts 1)  |
//	+-----------------------------------------------+
//	| slots: slotNum x 4 bytes, each the index of   |
//	| the newest entry hashed there (0 = empty)     |
//	+-----------------------------------------------+
//	| entries: indexNum x 20 bytes                  |
//	|   keyHash 4 | commitLogOffset 8 |             |
//	|   timeDiff 4 (s since begin) | prevIndex 4    |
//	+-----------------------------------------------+
//
// Entry 0 is never used, so a slot or prevIndex of 0 ends a chain.
package index
