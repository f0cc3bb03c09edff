// Package commitlog is the single append-only log of stored message
// records (rocketmq-protocol.md §4.1) shared by all topics, kept in
// fixed-size preallocated segment files named by their starting offset.
//
// A record that does not fit in the rest of a segment (plus the 8 bytes a
// filler needs) is preceded by a blank filler (size = rest of the segment,
// BlankMagic) and starts the next segment, as in RocketMQ:
//
//	segment N                                segment N+1
//	+--------+--------+-----+---------------++--------+------
//	| record | record | ... | size | 0xCBD4 || record | ...
//	+--------+--------+-----+---------------++--------+------
//	                         blank filler (to the end of N)
//
// Appends are serialized by one lock; reads go straight to the mapped
// segments below the published write position and never take it.
package commitlog
