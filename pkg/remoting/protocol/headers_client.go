package protocol

// Broker to client requests (codes 220, 221, 307, 309, 326)

// GetConsumerRunningInfoRequestHeader is GET_CONSUMER_RUNNING_INFO (307).
// Required: consumerGroup, clientId (lower-case d).
type GetConsumerRunningInfoRequestHeader struct {
	ConsumerGroup string
	ClientID      string
	JstackEnable  bool
}

// Encode implements Header.
func (h *GetConsumerRunningInfoRequestHeader) Encode() map[string]string {
	return map[string]string{"consumerGroup": h.ConsumerGroup, "clientId": h.ClientID, "jstackEnable": btoa(h.JstackEnable)}
}

// Decode implements Header.
func (h *GetConsumerRunningInfoRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = GetConsumerRunningInfoRequestHeader{
		ConsumerGroup: r.str("consumerGroup", true),
		ClientID:      r.str("clientId", true),
		JstackEnable:  r.bool("jstackEnable", false),
	}
	return r.err
}

// ConsumeMessageDirectlyRequestHeader is CONSUME_MESSAGE_DIRECTLY (309).
// Required: consumerGroup.
type ConsumeMessageDirectlyRequestHeader struct {
	ConsumerGroup string
	ClientID      string
	MsgID         string
	BrokerName    string
}

// Encode implements Header.
func (h *ConsumeMessageDirectlyRequestHeader) Encode() map[string]string {
	return map[string]string{
		"consumerGroup": h.ConsumerGroup, "clientId": h.ClientID,
		"msgId": h.MsgID, "brokerName": h.BrokerName,
	}
}

// Decode implements Header.
func (h *ConsumeMessageDirectlyRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = ConsumeMessageDirectlyRequestHeader{
		ConsumerGroup: r.str("consumerGroup", true),
		ClientID:      r.str("clientId", false),
		MsgID:         r.str("msgId", false),
		BrokerName:    r.str("brokerName", false),
	}
	return r.err
}

// ResetOffsetRequestHeader is RESET_CONSUMER_CLIENT_OFFSET (220) and the
// admin INVOKE_BROKER_TO_RESET_OFFSET (222). All fields are required.
type ResetOffsetRequestHeader struct {
	Topic     string
	Group     string
	Timestamp int64
	IsForce   bool
}

// Encode implements Header.
func (h *ResetOffsetRequestHeader) Encode() map[string]string {
	return map[string]string{"topic": h.Topic, "group": h.Group, "timestamp": itoa64(h.Timestamp), "isForce": btoa(h.IsForce)}
}

// Decode implements Header.
func (h *ResetOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = ResetOffsetRequestHeader{
		Topic:     r.str("topic", true),
		Group:     r.str("group", true),
		Timestamp: r.i64("timestamp", true),
		IsForce:   r.bool("isForce", true),
	}
	return r.err
}

// GetConsumerStatusRequestHeader is GET_CONSUMER_STATUS_FROM_CLIENT (221).
// Required: topic, group.
type GetConsumerStatusRequestHeader struct {
	Topic      string
	Group      string
	ClientAddr string
}

// Encode implements Header.
func (h *GetConsumerStatusRequestHeader) Encode() map[string]string {
	m := map[string]string{"topic": h.Topic, "group": h.Group}
	if h.ClientAddr != "" {
		m["clientAddr"] = h.ClientAddr
	}
	return m
}

// Decode implements Header.
func (h *GetConsumerStatusRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = GetConsumerStatusRequestHeader{
		Topic:      r.str("topic", true),
		Group:      r.str("group", true),
		ClientAddr: r.str("clientAddr", false),
	}
	return r.err
}

// ReplyMessageRequestHeader is PUSH_REPLY_MESSAGE_TO_CLIENT (326), broker
// to requester. Required: producerGroup, topic, defaultTopic,
// defaultTopicQueueNums, queueId, sysFlag, bornTimestamp, flag, bornHost,
// storeHost, storeTimestamp. Hosts are "ip:port" strings.
type ReplyMessageRequestHeader struct {
	ProducerGroup         string
	Topic                 string
	DefaultTopic          string
	DefaultTopicQueueNums int32
	QueueID               int32
	SysFlag               int32
	BornTimestamp         int64
	Flag                  int32
	Properties            string
	ReconsumeTimes        int32
	UnitMode              bool
	BornHost              string
	StoreHost             string
	StoreTimestamp        int64
}

// Encode implements Header.
func (h *ReplyMessageRequestHeader) Encode() map[string]string {
	return map[string]string{
		"producerGroup":         h.ProducerGroup,
		"topic":                 h.Topic,
		"defaultTopic":          h.DefaultTopic,
		"defaultTopicQueueNums": itoa32(h.DefaultTopicQueueNums),
		"queueId":               itoa32(h.QueueID),
		"sysFlag":               itoa32(h.SysFlag),
		"bornTimestamp":         itoa64(h.BornTimestamp),
		"flag":                  itoa32(h.Flag),
		"properties":            h.Properties,
		"reconsumeTimes":        itoa32(h.ReconsumeTimes),
		"unitMode":              btoa(h.UnitMode),
		"bornHost":              h.BornHost,
		"storeHost":             h.StoreHost,
		"storeTimestamp":        itoa64(h.StoreTimestamp),
	}
}

// Decode implements Header.
func (h *ReplyMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = ReplyMessageRequestHeader{
		ProducerGroup:         r.str("producerGroup", true),
		Topic:                 r.str("topic", true),
		DefaultTopic:          r.str("defaultTopic", true),
		DefaultTopicQueueNums: r.i32("defaultTopicQueueNums", true),
		QueueID:               r.i32("queueId", true),
		SysFlag:               r.i32("sysFlag", true),
		BornTimestamp:         r.i64("bornTimestamp", true),
		Flag:                  r.i32("flag", true),
		Properties:            r.str("properties", false),
		ReconsumeTimes:        r.i32("reconsumeTimes", false),
		UnitMode:              r.bool("unitMode", false),
		BornHost:              r.str("bornHost", true),
		StoreHost:             r.str("storeHost", true),
		StoreTimestamp:        r.i64("storeTimestamp", true),
	}
	return r.err
}
