package protocol

// Consumer (codes 36, 38, 40, 35)

// ConsumerSendMsgBackRequestHeader is CONSUMER_SEND_MSG_BACK (36).
// Required: offset, group, delayLevel.
type ConsumerSendMsgBackRequestHeader struct {
	Offset      int64 // commit log offset of the failed message
	Group       string
	DelayLevel  int32 // 0: broker decides; < 0: straight to the DLQ
	OriginMsgID string
	OriginTopic string
	UnitMode    bool
	// MaxReconsumeTimes is -1 when absent (use the group's retryMaxTimes);
	// Encode omits negative values.
	MaxReconsumeTimes int32
}

// Encode implements Header.
func (h *ConsumerSendMsgBackRequestHeader) Encode() map[string]string {
	m := map[string]string{
		"offset":      itoa64(h.Offset),
		"group":       h.Group,
		"delayLevel":  itoa32(h.DelayLevel),
		"originMsgId": h.OriginMsgID,
		"originTopic": h.OriginTopic,
		"unitMode":    btoa(h.UnitMode),
	}
	if h.MaxReconsumeTimes >= 0 {
		m["maxReconsumeTimes"] = itoa32(h.MaxReconsumeTimes)
	}
	return m
}

// Decode implements Header.
func (h *ConsumerSendMsgBackRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = ConsumerSendMsgBackRequestHeader{
		Offset:            r.i64("offset", true),
		Group:             r.str("group", true),
		DelayLevel:        r.i32("delayLevel", true),
		OriginMsgID:       r.str("originMsgId", false),
		OriginTopic:       r.str("originTopic", false),
		UnitMode:          r.bool("unitMode", false),
		MaxReconsumeTimes: r.i32Unset("maxReconsumeTimes"),
	}
	return r.err
}

// ConsumerGroupHeader carries only a consumer group (required): the
// request of GET_CONSUMER_LIST_BY_GROUP (38) and NOTIFY_CONSUMER_IDS_CHANGED
// (40).
type ConsumerGroupHeader struct {
	ConsumerGroup string
}

// The Java names of ConsumerGroupHeader.
type (
	GetConsumerListByGroupRequestHeader   = ConsumerGroupHeader
	NotifyConsumerIDsChangedRequestHeader = ConsumerGroupHeader
)

// Encode implements Header.
func (h *ConsumerGroupHeader) Encode() map[string]string {
	return map[string]string{"consumerGroup": h.ConsumerGroup}
}

// Decode implements Header.
func (h *ConsumerGroupHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.ConsumerGroup = r.str("consumerGroup", true)
	return r.err
}

// UnregisterClientRequestHeader is UNREGISTER_CLIENT (35). Required:
// clientID (capital ID). Empty groups are omitted.
type UnregisterClientRequestHeader struct {
	ClientID      string
	ProducerGroup string
	ConsumerGroup string
}

// Encode implements Header.
func (h *UnregisterClientRequestHeader) Encode() map[string]string {
	m := map[string]string{"clientID": h.ClientID}
	if h.ProducerGroup != "" {
		m["producerGroup"] = h.ProducerGroup
	}
	if h.ConsumerGroup != "" {
		m["consumerGroup"] = h.ConsumerGroup
	}
	return m
}

// Decode implements Header.
func (h *UnregisterClientRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = UnregisterClientRequestHeader{
		ClientID:      r.str("clientID", true),
		ProducerGroup: r.str("producerGroup", false),
		ConsumerGroup: r.str("consumerGroup", false),
	}
	return r.err
}
