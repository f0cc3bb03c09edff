package protocol

// Broker to client requests (codes 220, 221, 307, 309, 326)

// GetConsumerRunningInfoRequestHeader is GET_CONSUMER_RUNNING_INFO (307).
// Required: consumerGroup, clientId (lower-case d).
//
//rmq:codec
type GetConsumerRunningInfoRequestHeader struct {
	ConsumerGroup string `rmq:"consumerGroup,required"`
	ClientID      string `rmq:"clientId,required"`
	JstackEnable  bool   `rmq:"jstackEnable"`
}

// ConsumeMessageDirectlyRequestHeader is CONSUME_MESSAGE_DIRECTLY (309).
// Required: consumerGroup.
//
//rmq:codec
type ConsumeMessageDirectlyRequestHeader struct {
	ConsumerGroup string `rmq:"consumerGroup,required"`
	ClientID      string `rmq:"clientId"`
	MsgID         string `rmq:"msgId"`
	BrokerName    string `rmq:"brokerName"`
}

// ResetOffsetRequestHeader is RESET_CONSUMER_CLIENT_OFFSET (220) and the
// admin INVOKE_BROKER_TO_RESET_OFFSET (222). All fields are required.
//
//rmq:codec
type ResetOffsetRequestHeader struct {
	Topic     string `rmq:"topic,required"`
	Group     string `rmq:"group,required"`
	Timestamp int64  `rmq:"timestamp,required"`
	IsForce   bool   `rmq:"isForce,required"`
}

// GetConsumerStatusRequestHeader is GET_CONSUMER_STATUS_FROM_CLIENT (221).
// Required: topic, group.
//
//rmq:codec
type GetConsumerStatusRequestHeader struct {
	Topic      string `rmq:"topic,required"`
	Group      string `rmq:"group,required"`
	ClientAddr string `rmq:"clientAddr,omitempty"`
}

// ReplyMessageRequestHeader is PUSH_REPLY_MESSAGE_TO_CLIENT (326), broker
// to requester. Required: producerGroup, topic, defaultTopic,
// defaultTopicQueueNums, queueId, sysFlag, bornTimestamp, flag, bornHost,
// storeHost, storeTimestamp. Hosts are "ip:port" strings.
//
//rmq:codec
type ReplyMessageRequestHeader struct {
	ProducerGroup         string `rmq:"producerGroup,required"`
	Topic                 string `rmq:"topic,required"`
	DefaultTopic          string `rmq:"defaultTopic,required"`
	DefaultTopicQueueNums int32  `rmq:"defaultTopicQueueNums,required"`
	QueueID               int32  `rmq:"queueId,required"`
	SysFlag               int32  `rmq:"sysFlag,required"`
	BornTimestamp         int64  `rmq:"bornTimestamp,required"`
	Flag                  int32  `rmq:"flag,required"`
	Properties            string `rmq:"properties"`
	ReconsumeTimes        int32  `rmq:"reconsumeTimes"`
	UnitMode              bool   `rmq:"unitMode"`
	BornHost              string `rmq:"bornHost,required"`
	StoreHost             string `rmq:"storeHost,required"`
	StoreTimestamp        int64  `rmq:"storeTimestamp,required"`
}
