package protocol

// Send (codes 10, 310, 320, 324, 325)

// Default values rocketmq-client-go v2.1.2 hard-codes in single sends.
const (
	DefaultTopicTemplate  = "TBW102" // AUTO_CREATE_TOPIC_KEY_TOPIC
	DefaultTopicQueueNums = 4
)

// SendMessageRequestHeader is the long-name send header (codes 10 and 324;
// Java SendMessageRequestHeader). Required: producerGroup, topic,
// defaultTopic, defaultTopicQueueNums, queueId, sysFlag, bornTimestamp,
// flag.
type SendMessageRequestHeader struct {
	ProducerGroup         string
	Topic                 string
	DefaultTopic          string
	DefaultTopicQueueNums int32
	QueueID               int32 // negative: the broker picks a queue
	SysFlag               int32 // message sysFlag (SysFlag* constants)
	BornTimestamp         int64
	Flag                  int32
	Properties            string // encoded property string (EncodeProperties)
	ReconsumeTimes        int32
	UnitMode              bool
	// MaxReconsumeTimes is -1 when the sender did not set it (Java null:
	// use the group's retryMaxTimes); Encode omits negative values.
	MaxReconsumeTimes int32
	Batch             bool
	// BrokerName is the RocketMQ 5 "bname" / V2 "n" field; omitted when empty.
	BrokerName string
}

// Encode implements Header.
func (h *SendMessageRequestHeader) Encode() map[string]string {
	m := map[string]string{
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
		"batch":                 btoa(h.Batch),
	}
	if h.MaxReconsumeTimes >= 0 {
		m["maxReconsumeTimes"] = itoa32(h.MaxReconsumeTimes)
	}
	if h.BrokerName != "" {
		m["bname"] = h.BrokerName
	}
	return m
}

// Decode implements Header.
func (h *SendMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = SendMessageRequestHeader{
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
		MaxReconsumeTimes:     r.i32Unset("maxReconsumeTimes"),
		Batch:                 r.bool("batch", false),
		BrokerName:            r.str("bname", false),
	}
	return r.err
}

// V2 converts the header to its short-name form.
func (h *SendMessageRequestHeader) V2() *SendMessageRequestHeaderV2 {
	v := SendMessageRequestHeaderV2(*h)
	return &v
}

// SendMessageRequestHeaderV2 is the short-name send header (codes 310, 320
// and 325; Java SendMessageRequestHeaderV2): the same fields as
// SendMessageRequestHeader under the keys a..n, which saves bytes on every
// send. rocketmq-client-go v2.1.2 uses it only for batches (code 320).
//
//	a producerGroup  b topic          c defaultTopic  d defaultTopicQueueNums
//	e queueId        f sysFlag        g bornTimestamp h flag
//	i properties     j reconsumeTimes k unitMode      l maxReconsumeTimes
//	m batch          n brokerName
type SendMessageRequestHeaderV2 SendMessageRequestHeader

// V1 converts the header to its long-name form.
func (h *SendMessageRequestHeaderV2) V1() *SendMessageRequestHeader {
	v := SendMessageRequestHeader(*h)
	return &v
}

// Encode implements Header.
func (h *SendMessageRequestHeaderV2) Encode() map[string]string {
	m := map[string]string{
		"a": h.ProducerGroup,
		"b": h.Topic,
		"c": h.DefaultTopic,
		"d": itoa32(h.DefaultTopicQueueNums),
		"e": itoa32(h.QueueID),
		"f": itoa32(h.SysFlag),
		"g": itoa64(h.BornTimestamp),
		"h": itoa32(h.Flag),
		"i": h.Properties,
		"j": itoa32(h.ReconsumeTimes),
		"k": btoa(h.UnitMode),
		"m": btoa(h.Batch),
	}
	if h.MaxReconsumeTimes >= 0 {
		m["l"] = itoa32(h.MaxReconsumeTimes)
	}
	if h.BrokerName != "" {
		m["n"] = h.BrokerName
	}
	return m
}

// Decode implements Header. Required: a..h.
func (h *SendMessageRequestHeaderV2) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = SendMessageRequestHeaderV2{
		ProducerGroup:         r.str("a", true),
		Topic:                 r.str("b", true),
		DefaultTopic:          r.str("c", true),
		DefaultTopicQueueNums: r.i32("d", true),
		QueueID:               r.i32("e", true),
		SysFlag:               r.i32("f", true),
		BornTimestamp:         r.i64("g", true),
		Flag:                  r.i32("h", true),
		Properties:            r.str("i", false),
		ReconsumeTimes:        r.i32("j", false),
		UnitMode:              r.bool("k", false),
		MaxReconsumeTimes:     r.i32Unset("l"),
		Batch:                 r.bool("m", false),
		BrokerName:            r.str("n", false),
	}
	return r.err
}

// DecodeSendHeader decodes the send header of a request by its code: the
// short-name form for 310, 320 and 325, the long-name form otherwise (10,
// 324). A broker accepts all of them for sending.
func DecodeSendHeader(code int16, ext map[string]string) (*SendMessageRequestHeader, error) {
	switch code {
	case SendMessageV2, SendBatchMessage, SendReplyMessageV2:
		var v SendMessageRequestHeaderV2
		if err := v.Decode(ext); err != nil {
			return nil, err
		}
		return v.V1(), nil
	default:
		var h SendMessageRequestHeader
		if err := h.Decode(ext); err != nil {
			return nil, err
		}
		return &h, nil
	}
}

// Send response ext keys that are not part of the Java header class but
// set on the response directly.
const (
	ExtMsgRegion = "MSG_REGION"
	ExtTraceOn   = "TRACE_ON"
)

// SendMessageResponseHeader is the response of every send code. Required:
// msgId, queueId, queueOffset. MsgID is the offset message id (a
// comma-separated list for batches); rocketmq-client-go v2.1.2 parses it in
// the transaction flow, so it must be the 32-hex IPv4 form there.
type SendMessageResponseHeader struct {
	MsgID         string
	QueueID       int32
	QueueOffset   int64
	TransactionID string // omitted when empty (Java never fills it)
	MsgRegion     string // MSG_REGION; omitted when empty
	TraceOn       bool   // TRACE_ON, always written
}

// Encode implements Header.
func (h *SendMessageResponseHeader) Encode() map[string]string {
	m := map[string]string{
		"msgId":       h.MsgID,
		"queueId":     itoa32(h.QueueID),
		"queueOffset": itoa64(h.QueueOffset),
		ExtTraceOn:    btoa(h.TraceOn),
	}
	if h.TransactionID != "" {
		m["transactionId"] = h.TransactionID
	}
	if h.MsgRegion != "" {
		m[ExtMsgRegion] = h.MsgRegion
	}
	return m
}

// Decode implements Header.
func (h *SendMessageResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = SendMessageResponseHeader{
		MsgID:         r.str("msgId", true),
		QueueID:       r.i32("queueId", true),
		QueueOffset:   r.i64("queueOffset", true),
		TransactionID: r.str("transactionId", false),
		MsgRegion:     r.str(ExtMsgRegion, false),
		TraceOn:       r.bool(ExtTraceOn, false),
	}
	return r.err
}
