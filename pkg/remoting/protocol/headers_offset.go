package protocol

// Offsets (codes 14, 15, 29, 30, 31, 32)

// QueryConsumerOffsetRequestHeader is QUERY_CONSUMER_OFFSET (14). All
// fields are required.
type QueryConsumerOffsetRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
}

// Encode implements Header.
func (h *QueryConsumerOffsetRequestHeader) Encode() map[string]string {
	return map[string]string{"consumerGroup": h.ConsumerGroup, "topic": h.Topic, "queueId": itoa32(h.QueueID)}
}

// Decode implements Header.
func (h *QueryConsumerOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = QueryConsumerOffsetRequestHeader{
		ConsumerGroup: r.str("consumerGroup", true),
		Topic:         r.str("topic", true),
		QueueID:       r.i32("queueId", true),
	}
	return r.err
}

// UpdateConsumerOffsetRequestHeader is UPDATE_CONSUMER_OFFSET (15). All
// fields are required.
type UpdateConsumerOffsetRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	CommitOffset  int64
}

// Encode implements Header.
func (h *UpdateConsumerOffsetRequestHeader) Encode() map[string]string {
	return map[string]string{
		"consumerGroup": h.ConsumerGroup, "topic": h.Topic,
		"queueId": itoa32(h.QueueID), "commitOffset": itoa64(h.CommitOffset),
	}
}

// Decode implements Header.
func (h *UpdateConsumerOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = UpdateConsumerOffsetRequestHeader{
		ConsumerGroup: r.str("consumerGroup", true),
		Topic:         r.str("topic", true),
		QueueID:       r.i32("queueId", true),
		CommitOffset:  r.i64("commitOffset", true),
	}
	return r.err
}

// QueueRequestHeader names one queue of a topic: the request header of
// GET_MAX_OFFSET (30), GET_MIN_OFFSET (31) and GET_EARLIEST_MSG_STORETIME
// (32). Both fields are required.
type QueueRequestHeader struct {
	Topic   string
	QueueID int32
}

// The Java names of QueueRequestHeader.
type (
	GetMaxOffsetRequestHeader            = QueueRequestHeader
	GetMinOffsetRequestHeader            = QueueRequestHeader
	GetEarliestMsgStoreTimeRequestHeader = QueueRequestHeader
)

// Encode implements Header.
func (h *QueueRequestHeader) Encode() map[string]string {
	return map[string]string{"topic": h.Topic, "queueId": itoa32(h.QueueID)}
}

// Decode implements Header.
func (h *QueueRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = QueueRequestHeader{Topic: r.str("topic", true), QueueID: r.i32("queueId", true)}
	return r.err
}

// SearchOffsetRequestHeader is SEARCH_OFFSET_BY_TIMESTAMP (29). All fields
// are required; Timestamp is in ms.
type SearchOffsetRequestHeader struct {
	Topic     string
	QueueID   int32
	Timestamp int64
}

// Encode implements Header.
func (h *SearchOffsetRequestHeader) Encode() map[string]string {
	return map[string]string{"topic": h.Topic, "queueId": itoa32(h.QueueID), "timestamp": itoa64(h.Timestamp)}
}

// Decode implements Header.
func (h *SearchOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = SearchOffsetRequestHeader{
		Topic:     r.str("topic", true),
		QueueID:   r.i32("queueId", true),
		Timestamp: r.i64("timestamp", true),
	}
	return r.err
}

// OffsetResponseHeader carries one offset (ext "offset", required): the
// response of QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET and
// SEARCH_OFFSET_BY_TIMESTAMP. rocketmq-client-go v2.1.2 ignores the
// response code of 29 and 30 and parses this field, so always set it.
type OffsetResponseHeader struct {
	Offset int64
}

// The Java names of OffsetResponseHeader.
type (
	QueryConsumerOffsetResponseHeader = OffsetResponseHeader
	GetMaxOffsetResponseHeader        = OffsetResponseHeader
	GetMinOffsetResponseHeader        = OffsetResponseHeader
	SearchOffsetResponseHeader        = OffsetResponseHeader
)

// Encode implements Header.
func (h *OffsetResponseHeader) Encode() map[string]string {
	return map[string]string{"offset": itoa64(h.Offset)}
}

// Decode implements Header.
func (h *OffsetResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.Offset = r.i64("offset", true)
	return r.err
}

// GetEarliestMsgStoreTimeResponseHeader is the response of
// GET_EARLIEST_MSG_STORETIME: the store timestamp (ms, required).
type GetEarliestMsgStoreTimeResponseHeader struct {
	Timestamp int64
}

// Encode implements Header.
func (h *GetEarliestMsgStoreTimeResponseHeader) Encode() map[string]string {
	return map[string]string{"timestamp": itoa64(h.Timestamp)}
}

// Decode implements Header.
func (h *GetEarliestMsgStoreTimeResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.Timestamp = r.i64("timestamp", true)
	return r.err
}
