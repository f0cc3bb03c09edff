package protocol

// Topics and admin (codes 17, 215, 202, 208)

// CreateTopicRequestHeader is UPDATE_AND_CREATE_TOPIC (17; Java
// CreateTopicRequestHeader). Required: topic, defaultTopic, readQueueNums,
// writeQueueNums, perm, topicFilterType.
type CreateTopicRequestHeader struct {
	Topic           string
	DefaultTopic    string
	ReadQueueNums   int32
	WriteQueueNums  int32
	Perm            int32
	TopicFilterType string
	TopicSysFlag    int32
	Order           bool
}

// Encode implements Header.
func (h *CreateTopicRequestHeader) Encode() map[string]string {
	return map[string]string{
		"topic":           h.Topic,
		"defaultTopic":    h.DefaultTopic,
		"readQueueNums":   itoa32(h.ReadQueueNums),
		"writeQueueNums":  itoa32(h.WriteQueueNums),
		"perm":            itoa32(h.Perm),
		"topicFilterType": h.TopicFilterType,
		"topicSysFlag":    itoa32(h.TopicSysFlag),
		"order":           btoa(h.Order),
	}
}

// Decode implements Header.
func (h *CreateTopicRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = CreateTopicRequestHeader{
		Topic:           r.str("topic", true),
		DefaultTopic:    r.str("defaultTopic", true),
		ReadQueueNums:   r.i32("readQueueNums", true),
		WriteQueueNums:  r.i32("writeQueueNums", true),
		Perm:            r.i32("perm", true),
		TopicFilterType: r.str("topicFilterType", true),
		TopicSysFlag:    r.i32("topicSysFlag", false),
		Order:           r.bool("order", false),
	}
	return r.err
}

// TopicHeader carries only a topic (required): DELETE_TOPIC_IN_BROKER (215)
// and GET_TOPIC_STATS_INFO (202).
type TopicHeader struct {
	Topic string
}

// The Java names of TopicHeader.
type (
	DeleteTopicRequestHeader       = TopicHeader
	GetTopicStatsInfoRequestHeader = TopicHeader
)

// Encode implements Header.
func (h *TopicHeader) Encode() map[string]string { return map[string]string{"topic": h.Topic} }

// Decode implements Header.
func (h *TopicHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.Topic = r.str("topic", true)
	return r.err
}

// GetConsumeStatsRequestHeader is GET_CONSUME_STATS (208). Required:
// consumerGroup; an empty topic means every topic of the group.
type GetConsumeStatsRequestHeader struct {
	ConsumerGroup string
	Topic         string
}

// Encode implements Header.
func (h *GetConsumeStatsRequestHeader) Encode() map[string]string {
	m := map[string]string{"consumerGroup": h.ConsumerGroup}
	if h.Topic != "" {
		m["topic"] = h.Topic
	}
	return m
}

// Decode implements Header.
func (h *GetConsumeStatsRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = GetConsumeStatsRequestHeader{ConsumerGroup: r.str("consumerGroup", true), Topic: r.str("topic", false)}
	return r.err
}

// Message queries (codes 12, 33)

// ExtUniqueKeyQuery is the ext key that turns QUERY_MESSAGE into a lookup
// by UNIQ_KEY.
const ExtUniqueKeyQuery = "_UNIQUE_KEY_QUERY"

// QueryMessageRequestHeader is QUERY_MESSAGE (12). Required: topic, key,
// maxNum, beginTimestamp, endTimestamp. UniqueKeyQuery maps to the
// _UNIQUE_KEY_QUERY ext field, written only when true.
type QueryMessageRequestHeader struct {
	Topic          string
	Key            string
	MaxNum         int32
	BeginTimestamp int64
	EndTimestamp   int64
	UniqueKeyQuery bool
}

// Encode implements Header.
func (h *QueryMessageRequestHeader) Encode() map[string]string {
	m := map[string]string{
		"topic":          h.Topic,
		"key":            h.Key,
		"maxNum":         itoa32(h.MaxNum),
		"beginTimestamp": itoa64(h.BeginTimestamp),
		"endTimestamp":   itoa64(h.EndTimestamp),
	}
	if h.UniqueKeyQuery {
		m[ExtUniqueKeyQuery] = "true"
	}
	return m
}

// Decode implements Header.
func (h *QueryMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = QueryMessageRequestHeader{
		Topic:          r.str("topic", true),
		Key:            r.str("key", true),
		MaxNum:         r.i32("maxNum", true),
		BeginTimestamp: r.i64("beginTimestamp", true),
		EndTimestamp:   r.i64("endTimestamp", true),
		UniqueKeyQuery: r.bool(ExtUniqueKeyQuery, false),
	}
	return r.err
}

// QueryMessageResponseHeader is the response of QUERY_MESSAGE. Both
// fields are required.
type QueryMessageResponseHeader struct {
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyoffset int64
}

// Encode implements Header.
func (h *QueryMessageResponseHeader) Encode() map[string]string {
	return map[string]string{
		"indexLastUpdateTimestamp": itoa64(h.IndexLastUpdateTimestamp),
		"indexLastUpdatePhyoffset": itoa64(h.IndexLastUpdatePhyoffset),
	}
}

// Decode implements Header.
func (h *QueryMessageResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = QueryMessageResponseHeader{
		IndexLastUpdateTimestamp: r.i64("indexLastUpdateTimestamp", true),
		IndexLastUpdatePhyoffset: r.i64("indexLastUpdatePhyoffset", true),
	}
	return r.err
}

// ViewMessageRequestHeader is VIEW_MESSAGE_BY_ID (33): the commit log
// offset taken from an offset message id (required).
type ViewMessageRequestHeader struct {
	Offset int64
}

// Encode implements Header.
func (h *ViewMessageRequestHeader) Encode() map[string]string {
	return map[string]string{"offset": itoa64(h.Offset)}
}

// Decode implements Header.
func (h *ViewMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.Offset = r.i64("offset", true)
	return r.err
}
