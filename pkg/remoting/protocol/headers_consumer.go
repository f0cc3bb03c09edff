package protocol

// Consumer (codes 36, 38, 40, 35)

// ConsumerSendMsgBackRequestHeader is CONSUMER_SEND_MSG_BACK (36).
// Required: offset, group, delayLevel.
//
//rmq:codec
type ConsumerSendMsgBackRequestHeader struct {
	Offset      int64  `rmq:"offset,required"` // commit log offset of the failed message
	Group       string `rmq:"group,required"`
	DelayLevel  int32  `rmq:"delayLevel,required"` // 0: broker decides; < 0: straight to the DLQ
	OriginMsgID string `rmq:"originMsgId"`
	OriginTopic string `rmq:"originTopic"`
	UnitMode    bool   `rmq:"unitMode"`
	// MaxReconsumeTimes is -1 when absent (use the group's retryMaxTimes);
	// Encode omits negative values.
	MaxReconsumeTimes int32 `rmq:"maxReconsumeTimes,nullneg"`
}

// ConsumerGroupHeader carries only a consumer group (required): the
// request of GET_CONSUMER_LIST_BY_GROUP (38) and NOTIFY_CONSUMER_IDS_CHANGED
// (40).
//
//rmq:codec
type ConsumerGroupHeader struct {
	ConsumerGroup string `rmq:"consumerGroup,required"`
}

// The Java names of ConsumerGroupHeader.
type (
	GetConsumerListByGroupRequestHeader   = ConsumerGroupHeader
	NotifyConsumerIDsChangedRequestHeader = ConsumerGroupHeader
)

// ProducerGroupHeader carries only a producer group (required): the
// request of GET_PRODUCER_CONNECTION_LIST (204).
//
//rmq:codec
type ProducerGroupHeader struct {
	ProducerGroup string `rmq:"producerGroup,required"`
}

// GetProducerConnectionListRequestHeader is ProducerGroupHeader's Java name.
type GetProducerConnectionListRequestHeader = ProducerGroupHeader

// UnregisterClientRequestHeader is UNREGISTER_CLIENT (35). Required:
// clientID (capital ID). Empty groups are omitted.
//
//rmq:codec
type UnregisterClientRequestHeader struct {
	ClientID      string `rmq:"clientID,required"`
	ProducerGroup string `rmq:"producerGroup,omitempty"`
	ConsumerGroup string `rmq:"consumerGroup,omitempty"`
}
