package protocol

// Offsets (codes 14, 15, 29, 30, 31, 32)

// QueryConsumerOffsetRequestHeader is QUERY_CONSUMER_OFFSET (14). All
// fields are required.
//
//rmq:codec
type QueryConsumerOffsetRequestHeader struct {
	ConsumerGroup string `rmq:"consumerGroup,required"`
	Topic         string `rmq:"topic,required"`
	QueueID       int32  `rmq:"queueId,required"`
}

// UpdateConsumerOffsetRequestHeader is UPDATE_CONSUMER_OFFSET (15). The
// first four fields are required.
//
// OnlyForward (tideOnlyForward, a Tide extension, omitted when false) asks
// the broker to ignore the commit if the group's stored offset of the
// queue is already higher. pkg/mqclient sets it on every commit except
// the first one after the broker moved its position back
// (PULL_OFFSET_MOVED): during a rebalance two members can own a queue for
// a moment, and the old owner's last commit, arriving after the new
// owner's, would otherwise move the group's offset back (redelivery, not
// loss). Apache RocketMQ brokers ignore the field and take every commit,
// as they do for the official client.
//
//rmq:codec
type UpdateConsumerOffsetRequestHeader struct {
	ConsumerGroup string `rmq:"consumerGroup,required"`
	Topic         string `rmq:"topic,required"`
	QueueID       int32  `rmq:"queueId,required"`
	CommitOffset  int64  `rmq:"commitOffset,required"`
	OnlyForward   bool   `rmq:"tideOnlyForward,omitempty"`
}

// QueueRequestHeader names one queue of a topic: the request header of
// GET_MAX_OFFSET (30), GET_MIN_OFFSET (31) and GET_EARLIEST_MSG_STORETIME
// (32). Both fields are required.
//
//rmq:codec
type QueueRequestHeader struct {
	Topic   string `rmq:"topic,required"`
	QueueID int32  `rmq:"queueId,required"`
}

// The Java names of QueueRequestHeader.
type (
	GetMaxOffsetRequestHeader            = QueueRequestHeader
	GetMinOffsetRequestHeader            = QueueRequestHeader
	GetEarliestMsgStoreTimeRequestHeader = QueueRequestHeader
)

// SearchOffsetRequestHeader is SEARCH_OFFSET_BY_TIMESTAMP (29). All fields
// are required; Timestamp is in ms.
//
//rmq:codec
type SearchOffsetRequestHeader struct {
	Topic     string `rmq:"topic,required"`
	QueueID   int32  `rmq:"queueId,required"`
	Timestamp int64  `rmq:"timestamp,required"`
}

// OffsetResponseHeader carries one offset (ext "offset", required): the
// response of QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET and
// SEARCH_OFFSET_BY_TIMESTAMP. rocketmq-client-go v2.1.2 ignores the
// response code of 29 and 30 and parses this field, so always set it.
//
//rmq:codec
type OffsetResponseHeader struct {
	Offset int64 `rmq:"offset,required"`
}

// The Java names of OffsetResponseHeader.
type (
	QueryConsumerOffsetResponseHeader = OffsetResponseHeader
	GetMaxOffsetResponseHeader        = OffsetResponseHeader
	GetMinOffsetResponseHeader        = OffsetResponseHeader
	SearchOffsetResponseHeader        = OffsetResponseHeader
)

// GetEarliestMsgStoreTimeResponseHeader is the response of
// GET_EARLIEST_MSG_STORETIME: the store timestamp (ms, required).
//
//rmq:codec
type GetEarliestMsgStoreTimeResponseHeader struct {
	Timestamp int64 `rmq:"timestamp,required"`
}
