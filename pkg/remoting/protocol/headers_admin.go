package protocol

// Topics and admin (codes 17, 215, 202, 208)

// CreateTopicRequestHeader is UPDATE_AND_CREATE_TOPIC (17; Java
// CreateTopicRequestHeader). Required: topic, defaultTopic, readQueueNums,
// writeQueueNums, perm, topicFilterType.
//
//rmq:codec
type CreateTopicRequestHeader struct {
	Topic           string `rmq:"topic,required"`
	DefaultTopic    string `rmq:"defaultTopic,required"`
	ReadQueueNums   int32  `rmq:"readQueueNums,required"`
	WriteQueueNums  int32  `rmq:"writeQueueNums,required"`
	Perm            int32  `rmq:"perm,required"`
	TopicFilterType string `rmq:"topicFilterType,required"`
	TopicSysFlag    int32  `rmq:"topicSysFlag"`
	Order           bool   `rmq:"order"`
}

// TopicHeader carries only a topic (required): DELETE_TOPIC_IN_BROKER (215)
// and GET_TOPIC_STATS_INFO (202).
//
//rmq:codec
type TopicHeader struct {
	Topic string `rmq:"topic,required"`
}

// The Java names of TopicHeader.
type (
	DeleteTopicRequestHeader       = TopicHeader
	GetTopicStatsInfoRequestHeader = TopicHeader
)

// GetConsumeStatsRequestHeader is GET_CONSUME_STATS (208). Required:
// consumerGroup; an empty topic means every topic of the group.
//
//rmq:codec
type GetConsumeStatsRequestHeader struct {
	ConsumerGroup string `rmq:"consumerGroup,required"`
	Topic         string `rmq:"topic,omitempty"`
}

// Message queries (codes 12, 33)

// ExtUniqueKeyQuery is the ext key that turns QUERY_MESSAGE into a lookup
// by UNIQ_KEY.
const ExtUniqueKeyQuery = "_UNIQUE_KEY_QUERY"

// QueryMessageRequestHeader is QUERY_MESSAGE (12). Required: topic, key,
// maxNum, beginTimestamp, endTimestamp. UniqueKeyQuery maps to the
// _UNIQUE_KEY_QUERY ext field, written only when true.
//
//rmq:codec
type QueryMessageRequestHeader struct {
	Topic          string `rmq:"topic,required"`
	Key            string `rmq:"key,required"`
	MaxNum         int32  `rmq:"maxNum,required"`
	BeginTimestamp int64  `rmq:"beginTimestamp,required"`
	EndTimestamp   int64  `rmq:"endTimestamp,required"`
	UniqueKeyQuery bool   `rmq:"_UNIQUE_KEY_QUERY,omitempty"`
}

// QueryMessageResponseHeader is the response of QUERY_MESSAGE. Both
// fields are required.
//
//rmq:codec
type QueryMessageResponseHeader struct {
	IndexLastUpdateTimestamp int64 `rmq:"indexLastUpdateTimestamp,required"`
	IndexLastUpdatePhyoffset int64 `rmq:"indexLastUpdatePhyoffset,required"`
}

// ViewMessageRequestHeader is VIEW_MESSAGE_BY_ID (33): the commit log
// offset taken from an offset message id (required).
//
//rmq:codec
type ViewMessageRequestHeader struct {
	Offset int64 `rmq:"offset,required"`
}
