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
//
//rmq:codec typed
type SendMessageRequestHeader struct {
	ProducerGroup         string `rmq:"producerGroup,required,short=a"`
	Topic                 string `rmq:"topic,required,short=b"`
	DefaultTopic          string `rmq:"defaultTopic,required,short=c"`
	DefaultTopicQueueNums int32  `rmq:"defaultTopicQueueNums,required,short=d"`
	QueueID               int32  `rmq:"queueId,required,short=e"` // negative: the broker picks a queue
	SysFlag               int32  `rmq:"sysFlag,required,short=f"` // message sysFlag (SysFlag* constants)
	BornTimestamp         int64  `rmq:"bornTimestamp,required,short=g"`
	Flag                  int32  `rmq:"flag,required,short=h"`
	Properties            string `rmq:"properties,short=i"` // encoded property string (EncodeProperties)
	ReconsumeTimes        int32  `rmq:"reconsumeTimes,short=j"`
	UnitMode              bool   `rmq:"unitMode,short=k"`
	// MaxReconsumeTimes is -1 when the sender did not set it (Java null:
	// use the group's retryMaxTimes); Encode omits negative values.
	MaxReconsumeTimes int32 `rmq:"maxReconsumeTimes,nullneg,short=l"`
	Batch             bool  `rmq:"batch,short=m"`
	// BrokerName is the RocketMQ 5 "bname" / V2 "n" field; omitted when empty.
	BrokerName string `rmq:"bname,omitempty,short=n"`
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
//
//rmq:codec short typed
type SendMessageRequestHeaderV2 SendMessageRequestHeader

// V1 converts the header to its long-name form.
func (h *SendMessageRequestHeaderV2) V1() *SendMessageRequestHeader {
	v := SendMessageRequestHeader(*h)
	return &v
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
//
//rmq:codec append
type SendMessageResponseHeader struct {
	MsgID         string `rmq:"msgId,required"`
	QueueID       int32  `rmq:"queueId,required"`
	QueueOffset   int64  `rmq:"queueOffset,required"`
	TransactionID string `rmq:"transactionId,omitempty"` // Java never fills it
	MsgRegion     string `rmq:"MSG_REGION,omitempty"`    // ExtMsgRegion
	TraceOn       bool   `rmq:"TRACE_ON"`                // ExtTraceOn, always written
}
