package protocol

import (
	"fmt"
	"strconv"
)

// Header is a typed request or response header: the RocketMQ
// CommandCustomHeader. Encode renders it as ext fields (every value a
// string, keys spelled exactly as the Java field names); Decode fills it
// from ext fields.
//
// Decode follows the Java header classes: a field marked @CFNotNull that is
// absent or empty is ErrMissingField; a present value that does not parse
// as its type is ErrBadField; optional numeric fields that are absent or
// empty decode as zero (unless a field's doc says otherwise). Unknown keys
// (for example the ACL fields AccessKey, Signature and SecurityToken) are
// ignored. Errors name the field and wrap the sentinel with %w.
//
// Headers are plain values with no internal locking.
type Header interface {
	Encode() map[string]string
	Decode(ext map[string]string) error
}

// ACL ext fields some clients add to every request. Brokers without ACL
// ignore them; header decoders never look at them.
const (
	ExtAccessKey     = "AccessKey"
	ExtSignature     = "Signature"
	ExtSecurityToken = "SecurityToken"
)

// extReader decodes ext fields and remembers the first error, so a
// Decode method reads like the field list of its header class.
type extReader struct {
	ext map[string]string
	err error
}

func (r *extReader) raw(name string, required bool) (string, bool) {
	v := r.ext[name]
	if v == "" {
		if required && r.err == nil {
			r.err = fmt.Errorf("%w: %s", ErrMissingField, name)
		}
		return "", false
	}
	return v, true
}

func (r *extReader) str(name string, required bool) string {
	v, _ := r.raw(name, required)
	return v
}

func (r *extReader) int(name string, required bool, bits int) int64 {
	v, ok := r.raw(name, required)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("%w: %s=%q is not an int%d", ErrBadField, name, v, bits)
		}
		return 0
	}
	return n
}

func (r *extReader) i32(name string, required bool) int32 { return int32(r.int(name, required, 32)) }
func (r *extReader) i64(name string, required bool) int64 { return r.int(name, required, 64) }

// i32Unset is i32 for an optional field whose absence means something
// else than 0 (Java Integer null): absent or empty decodes as -1.
func (r *extReader) i32Unset(name string) int32 {
	if r.ext[name] == "" {
		return -1
	}
	return r.i32(name, false)
}

func (r *extReader) bool(name string, required bool) bool {
	v, ok := r.raw(name, required)
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("%w: %s=%q is not a bool", ErrBadField, name, v)
		}
		return false
	}
	return b
}

func itoa32(v int32) string { return strconv.FormatInt(int64(v), 10) }
func itoa64(v int64) string { return strconv.FormatInt(v, 10) }
func btoa(v bool) string    { return strconv.FormatBool(v) }

// ---------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------
// Pull (code 11)

// PullSysFlag is the sysFlag of a pull request (Java PullSysFlag).
type PullSysFlag int32

// Pull sysFlag bits.
const (
	PullCommitOffset PullSysFlag = 1 << 0 // store commitOffset for the group (masters only)
	PullSuspend      PullSysFlag = 1 << 1 // hold the request when nothing is there (long polling)
	PullSubscription PullSysFlag = 1 << 2 // the request carries its subscription expression
	PullClassFilter  PullSysFlag = 1 << 3 // class filter mode (unsupported by Go clients)
	PullLitePull     PullSysFlag = 1 << 4 // lite pull consumer (Java 4.9)
)

// NewPullSysFlag builds a pull sysFlag from its bits.
func NewPullSysFlag(commitOffset, suspend, subscription, classFilter bool) PullSysFlag {
	var f PullSysFlag
	if commitOffset {
		f |= PullCommitOffset
	}
	if suspend {
		f |= PullSuspend
	}
	if subscription {
		f |= PullSubscription
	}
	if classFilter {
		f |= PullClassFilter
	}
	return f
}

// HasCommitOffset reports the COMMIT_OFFSET bit.
func (f PullSysFlag) HasCommitOffset() bool { return f&PullCommitOffset != 0 }

// HasSuspend reports the SUSPEND bit.
func (f PullSysFlag) HasSuspend() bool { return f&PullSuspend != 0 }

// HasSubscription reports the SUBSCRIPTION bit.
func (f PullSysFlag) HasSubscription() bool { return f&PullSubscription != 0 }

// HasClassFilter reports the CLASS_FILTER bit.
func (f PullSysFlag) HasClassFilter() bool { return f&PullClassFilter != 0 }

// HasLitePull reports the LITE_PULL bit.
func (f PullSysFlag) HasLitePull() bool { return f&PullLitePull != 0 }

// ClearCommitOffset returns f without the COMMIT_OFFSET bit (what a client
// does when it pulls from a slave).
func (f PullSysFlag) ClearCommitOffset() PullSysFlag { return f &^ PullCommitOffset }

// Expression types of subscriptions.
const (
	ExpressionTypeTag   = "TAG"
	ExpressionTypeSQL92 = "SQL92"
)

// PullMessageRequestHeader is the PULL_MESSAGE request. Required: every
// field except subscription and expressionType.
type PullMessageRequestHeader struct {
	ConsumerGroup        string
	Topic                string
	QueueID              int32
	QueueOffset          int64
	MaxMsgNums           int32
	SysFlag              PullSysFlag
	CommitOffset         int64
	SuspendTimeoutMillis int64
	Subscription         string
	SubVersion           int64
	ExpressionType       string
}

// Encode implements Header.
func (h *PullMessageRequestHeader) Encode() map[string]string {
	return map[string]string{
		"consumerGroup":        h.ConsumerGroup,
		"topic":                h.Topic,
		"queueId":              itoa32(h.QueueID),
		"queueOffset":          itoa64(h.QueueOffset),
		"maxMsgNums":           itoa32(h.MaxMsgNums),
		"sysFlag":              itoa32(int32(h.SysFlag)),
		"commitOffset":         itoa64(h.CommitOffset),
		"suspendTimeoutMillis": itoa64(h.SuspendTimeoutMillis),
		"subscription":         h.Subscription,
		"subVersion":           itoa64(h.SubVersion),
		"expressionType":       h.ExpressionType,
	}
}

// Decode implements Header.
func (h *PullMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = PullMessageRequestHeader{
		ConsumerGroup:        r.str("consumerGroup", true),
		Topic:                r.str("topic", true),
		QueueID:              r.i32("queueId", true),
		QueueOffset:          r.i64("queueOffset", true),
		MaxMsgNums:           r.i32("maxMsgNums", true),
		SysFlag:              PullSysFlag(r.i32("sysFlag", true)),
		CommitOffset:         r.i64("commitOffset", true),
		SuspendTimeoutMillis: r.i64("suspendTimeoutMillis", true),
		Subscription:         r.str("subscription", false),
		SubVersion:           r.i64("subVersion", true),
		ExpressionType:       r.str("expressionType", false),
	}
	return r.err
}

// PullMessageResponseHeader is the response of PULL_MESSAGE for codes 0,
// 19, 20 and 21. All fields are required: a client that misses
// nextBeginOffset jumps back to offset 0.
type PullMessageResponseHeader struct {
	SuggestWhichBrokerID int64
	NextBeginOffset      int64
	MinOffset            int64
	MaxOffset            int64
}

// Encode implements Header.
func (h *PullMessageResponseHeader) Encode() map[string]string {
	return map[string]string{
		"suggestWhichBrokerId": itoa64(h.SuggestWhichBrokerID),
		"nextBeginOffset":      itoa64(h.NextBeginOffset),
		"minOffset":            itoa64(h.MinOffset),
		"maxOffset":            itoa64(h.MaxOffset),
	}
}

// Decode implements Header.
func (h *PullMessageResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = PullMessageResponseHeader{
		SuggestWhichBrokerID: r.i64("suggestWhichBrokerId", true),
		NextBeginOffset:      r.i64("nextBeginOffset", true),
		MinOffset:            r.i64("minOffset", true),
		MaxOffset:            r.i64("maxOffset", true),
	}
	return r.err
}

// ---------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------
// Transactions (codes 37, 39)

// Values of EndTransactionRequestHeader.CommitOrRollback: the transaction
// bits of a message sysFlag.
const (
	TransactionUnknown  = SysFlagTxNotType  // 0: keep the half message, check back later
	TransactionCommit   = SysFlagTxCommit   // 8
	TransactionRollback = SysFlagTxRollback // 12
)

// EndTransactionRequestHeader is END_TRANSACTION (37). Required:
// producerGroup, tranStateTableOffset, commitLogOffset, commitOrRollback,
// msgId. Decode also rejects a commitOrRollback other than 0, 8 or 12
// (ErrBadField), as Java's checkFields does.
type EndTransactionRequestHeader struct {
	ProducerGroup        string
	TranStateTableOffset int64 // queue offset of the half message
	CommitLogOffset      int64 // commit log offset of the half message
	CommitOrRollback     int32
	FromTransactionCheck bool
	MsgID                string
	TransactionID        string // often empty
}

// Encode implements Header.
func (h *EndTransactionRequestHeader) Encode() map[string]string {
	return map[string]string{
		"producerGroup":        h.ProducerGroup,
		"tranStateTableOffset": itoa64(h.TranStateTableOffset),
		"commitLogOffset":      itoa64(h.CommitLogOffset),
		"commitOrRollback":     itoa32(h.CommitOrRollback),
		"fromTransactionCheck": btoa(h.FromTransactionCheck),
		"msgId":                h.MsgID,
		"transactionId":        h.TransactionID,
	}
}

// Decode implements Header.
func (h *EndTransactionRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = EndTransactionRequestHeader{
		ProducerGroup:        r.str("producerGroup", true),
		TranStateTableOffset: r.i64("tranStateTableOffset", true),
		CommitLogOffset:      r.i64("commitLogOffset", true),
		CommitOrRollback:     r.i32("commitOrRollback", true),
		FromTransactionCheck: r.bool("fromTransactionCheck", false),
		MsgID:                r.str("msgId", true),
		TransactionID:        r.str("transactionId", false),
	}
	if r.err != nil {
		return r.err
	}
	switch h.CommitOrRollback {
	case TransactionUnknown, TransactionCommit, TransactionRollback:
		return nil
	}
	return fmt.Errorf("%w: commitOrRollback=%d, want 0, 8 or 12", ErrBadField, h.CommitOrRollback)
}

// CheckTransactionStateRequestHeader is CHECK_TRANSACTION_STATE (39),
// broker to client. Required: tranStateTableOffset, commitLogOffset.
// rocketmq-client-go v2.1.2 trusts only the two offsets (its decoder
// mixes up the string fields).
type CheckTransactionStateRequestHeader struct {
	TranStateTableOffset int64
	CommitLogOffset      int64
	MsgID                string
	TransactionID        string
	OffsetMsgID          string
}

// Encode implements Header.
func (h *CheckTransactionStateRequestHeader) Encode() map[string]string {
	return map[string]string{
		"tranStateTableOffset": itoa64(h.TranStateTableOffset),
		"commitLogOffset":      itoa64(h.CommitLogOffset),
		"msgId":                h.MsgID,
		"transactionId":        h.TransactionID,
		"offsetMsgId":          h.OffsetMsgID,
	}
}

// Decode implements Header.
func (h *CheckTransactionStateRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = CheckTransactionStateRequestHeader{
		TranStateTableOffset: r.i64("tranStateTableOffset", true),
		CommitLogOffset:      r.i64("commitLogOffset", true),
		MsgID:                r.str("msgId", false),
		TransactionID:        r.str("transactionId", false),
		OffsetMsgID:          r.str("offsetMsgId", false),
	}
	return r.err
}

// ---------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------
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
