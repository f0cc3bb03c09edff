package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// JSON request and response bodies of the broker codes. Field names are
// the Java ones, copied exactly (clientID in heartbeats, clientId in lock
// bodies). Each body type has an Encode method and a Decode<Type>
// function; decoders wrap ErrMalformed.
//
// Java serialises maps keyed by MessageQueue with fastjson, which writes
// the key object itself as the map key:
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:5}}
//
// That is not valid JSON, but it is what Java tools and rocketmq-client-go
// v2.1.2 expect (the client also accepts gson's array of pairs). Tide writes
// the fastjson form and reads fastjson, gson and plain string-keyed maps.

// MessageQueue identifies one queue of a topic on one broker.
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// Key returns the canonical string form "topic@brokerName@queueId", usable
// as a map key or file name component. ParseMessageQueueKey inverts it.
func (q MessageQueue) Key() string {
	return q.Topic + "@" + q.BrokerName + "@" + strconv.FormatInt(int64(q.QueueID), 10)
}

// String returns Key.
func (q MessageQueue) String() string { return q.Key() }

// Less orders queues by topic, broker name and queue id: the order
// clients use when they allocate queues.
func (q MessageQueue) Less(o MessageQueue) bool {
	if q.Topic != o.Topic {
		return q.Topic < o.Topic
	}
	if q.BrokerName != o.BrokerName {
		return q.BrokerName < o.BrokerName
	}
	return q.QueueID < o.QueueID
}

// ParseMessageQueueKey parses the form Key returns. The topic cannot
// contain '@'; the broker name may.
func ParseMessageQueueKey(s string) (MessageQueue, error) {
	i := strings.IndexByte(s, '@')
	j := strings.LastIndexByte(s, '@')
	if i < 0 || j <= i {
		return MessageQueue{}, fmt.Errorf("%w: message queue key %q", ErrMalformed, s)
	}
	id, err := strconv.ParseInt(s[j+1:], 10, 32)
	if err != nil {
		return MessageQueue{}, fmt.Errorf("%w: message queue key %q: bad queue id", ErrMalformed, s)
	}
	return MessageQueue{Topic: s[:i], BrokerName: s[i+1 : j], QueueID: int32(id)}, nil
}

// SortMessageQueues sorts queues with MessageQueue.Less.
func SortMessageQueues(qs []MessageQueue) {
	sort.Slice(qs, func(i, j int) bool { return qs[i].Less(qs[j]) })
}

// appendJSON writes the queue as fastjson does: keys in alphabetical order.
func (q MessageQueue) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"brokerName":`...)
	dst = appendJSONString(dst, q.BrokerName)
	dst = append(dst, `,"queueId":`...)
	dst = strconv.AppendInt(dst, int64(q.QueueID), 10)
	dst = append(dst, `,"topic":`...)
	dst = appendJSONString(dst, q.Topic)
	return append(dst, '}')
}

func decodeBody(what string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformed, what, err)
	}
	return nil
}

// mustMarshal is json.Marshal for values without floats, channels or
// funcs, on which encoding/json cannot fail.
func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// ---------------------------------------------------------------------------
// Heartbeat (code 34)

// Consumer description values used in heartbeats.
const (
	ConsumeActively  = "CONSUME_ACTIVELY"  // pull consumer
	ConsumePassively = "CONSUME_PASSIVELY" // push consumer

	MessageModelClustering   = "CLUSTERING"
	MessageModelBroadcasting = "BROADCASTING"

	ConsumeFromLastOffset  = "CONSUME_FROM_LAST_OFFSET"
	ConsumeFromFirstOffset = "CONSUME_FROM_FIRST_OFFSET"
	ConsumeFromTimestamp   = "CONSUME_FROM_TIMESTAMP"
)

// SubAll is the subscription expression that matches every tag.
const SubAll = "*"

// HeartbeatData is the body of HEART_BEAT.
type HeartbeatData struct {
	ClientID        string         `json:"clientID"`
	ProducerDataSet []ProducerData `json:"producerDataSet"`
	ConsumerDataSet []ConsumerData `json:"consumerDataSet"`
}

// ProducerData names one producer group of a client.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// ConsumerData describes one consumer group of a client.
type ConsumerData struct {
	GroupName           string             `json:"groupName"`
	ConsumeType         string             `json:"consumeType"`
	MessageModel        string             `json:"messageModel"`
	ConsumeFromWhere    string             `json:"consumeFromWhere"`
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// SubscriptionData is one topic subscription of a consumer group.
// SubVersion is a version that grows with every change: Java clients send
// milliseconds, rocketmq-client-go nanoseconds.
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"`
	TagsSet         []string `json:"tagsSet"`
	CodeSet         CodeSet  `json:"codeSet"`
	SubVersion      int64    `json:"subVersion"`
	ExpressionType  string   `json:"expressionType"`
}

// CodeSet is the set of tag hash codes of a subscription. It encodes as
// JSON numbers (the Java form) and decodes numbers as well as the decimal
// strings rocketmq-client-go v2.1.2 sends.
type CodeSet []int64

// UnmarshalJSON implements json.Unmarshaler.
func (c *CodeSet) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = nil
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(CodeSet, 0, len(raw))
	for _, r := range raw {
		s := string(r)
		if len(s) >= 2 && s[0] == '"' {
			if err := json.Unmarshal(r, &s); err != nil {
				return err
			}
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return fmt.Errorf("codeSet element %s is not an integer", r)
		}
		out = append(out, n)
	}
	*c = out
	return nil
}

// Contains reports whether code is in the set.
func (c CodeSet) Contains(code int64) bool {
	for _, v := range c {
		if v == code {
			return true
		}
	}
	return false
}

// NewSubscriptionData builds a TAG subscription the way clients do: an
// empty expression or "*" subscribes to everything (empty sets); otherwise
// the expression is split on "||", each tag is trimmed, empty and repeated
// tags are dropped, and each tag's Java hash (TagsHashCode) goes into
// CodeSet in the same order.
func NewSubscriptionData(topic, expr string) SubscriptionData {
	s := SubscriptionData{
		Topic: topic, SubString: strings.TrimSpace(expr), ExpressionType: ExpressionTypeTag,
		TagsSet: []string{}, CodeSet: CodeSet{},
	}
	if s.SubString == "" || s.SubString == SubAll {
		s.SubString = SubAll
		return s
	}
	for _, t := range strings.Split(s.SubString, "||") {
		t = strings.TrimSpace(t)
		if t == "" || containsString(s.TagsSet, t) {
			continue
		}
		s.TagsSet = append(s.TagsSet, t)
		s.CodeSet = append(s.CodeSet, TagsHashCode(t))
	}
	return s
}

func containsString(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

// MatchesAll reports whether the subscription accepts every message.
func (s *SubscriptionData) MatchesAll() bool {
	return s.ClassFilterMode || s.SubString == SubAll || s.SubString == ""
}

// MatchesTagsCode is the broker-side TAG filter on a consume-queue tags
// code: everything passes for "*" and class-filter subscriptions,
// otherwise the code must be in CodeSet.
func (s *SubscriptionData) MatchesTagsCode(code int64) bool {
	return s.MatchesAll() || s.CodeSet.Contains(code)
}

// MatchesTag is the exact client-side filter on a message's tag.
func (s *SubscriptionData) MatchesTag(tag string) bool {
	return s.MatchesAll() || containsString(s.TagsSet, tag)
}

// Encode returns the heartbeat as JSON, with [] for empty sets.
func (h *HeartbeatData) Encode() []byte {
	c := *h
	if c.ProducerDataSet == nil {
		c.ProducerDataSet = []ProducerData{}
	}
	if c.ConsumerDataSet == nil {
		c.ConsumerDataSet = []ConsumerData{}
	}
	return mustMarshal(c)
}

// DecodeHeartbeatData parses a heartbeat body.
func DecodeHeartbeatData(data []byte) (*HeartbeatData, error) {
	var h HeartbeatData
	if err := decodeBody("heartbeat", data, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// ---------------------------------------------------------------------------
// Locks (codes 41, 42)

// LockBatchRequestBody is the body of LOCK_BATCH_MQ and UNLOCK_BATCH_MQ.
type LockBatchRequestBody struct {
	ConsumerGroup string         `json:"consumerGroup"`
	ClientID      string         `json:"clientId"`
	MQSet         []MessageQueue `json:"mqSet"`
}

// UnlockBatchRequestBody is the body of UNLOCK_BATCH_MQ (the same shape).
type UnlockBatchRequestBody = LockBatchRequestBody

// Encode returns the body as JSON.
func (b *LockBatchRequestBody) Encode() []byte {
	c := *b
	if c.MQSet == nil {
		c.MQSet = []MessageQueue{}
	}
	return mustMarshal(c)
}

// DecodeLockBatchRequestBody parses a lock or unlock request body.
func DecodeLockBatchRequestBody(data []byte) (*LockBatchRequestBody, error) {
	var b LockBatchRequestBody
	if err := decodeBody("lock batch request", data, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// LockBatchResponseBody is the response of LOCK_BATCH_MQ: the queues now
// locked by the caller.
type LockBatchResponseBody struct {
	LockOKMQSet []MessageQueue `json:"lockOKMQSet"`
}

// Encode returns the body as JSON.
func (b *LockBatchResponseBody) Encode() []byte {
	c := *b
	if c.LockOKMQSet == nil {
		c.LockOKMQSet = []MessageQueue{}
	}
	return mustMarshal(c)
}

// DecodeLockBatchResponseBody parses a lock response body. An empty body
// means nothing was locked.
func DecodeLockBatchResponseBody(data []byte) (*LockBatchResponseBody, error) {
	var b LockBatchResponseBody
	if len(bytes.TrimSpace(data)) == 0 {
		return &b, nil
	}
	if err := decodeBody("lock batch response", data, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// ---------------------------------------------------------------------------
// Consumer list (code 38)

// GetConsumerListByGroupResponseBody is the response body of
// GET_CONSUMER_LIST_BY_GROUP.
type GetConsumerListByGroupResponseBody struct {
	ConsumerIDList []string `json:"consumerIdList"`
}

// Encode returns the body as JSON.
func (b *GetConsumerListByGroupResponseBody) Encode() []byte {
	c := *b
	if c.ConsumerIDList == nil {
		c.ConsumerIDList = []string{}
	}
	return mustMarshal(c)
}

// DecodeGetConsumerListByGroupResponseBody parses the consumer id list.
func DecodeGetConsumerListByGroupResponseBody(data []byte) (*GetConsumerListByGroupResponseBody, error) {
	var b GetConsumerListByGroupResponseBody
	if err := decodeBody("consumer list", data, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// ---------------------------------------------------------------------------
// Subscription groups (code 201)

// SubscriptionGroupConfig is a broker's configuration of one consumer group.
type SubscriptionGroupConfig struct {
	GroupName                      string `json:"groupName"`
	ConsumeEnable                  bool   `json:"consumeEnable"`
	ConsumeFromMinEnable           bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool   `json:"consumeBroadcastEnable"`
	RetryQueueNums                 int32  `json:"retryQueueNums"`
	RetryMaxTimes                  int32  `json:"retryMaxTimes"`
	BrokerID                       int64  `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64  `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIDsChangedEnable bool   `json:"notifyConsumerIdsChangedEnable"`
}

// DefaultSubscriptionGroupConfig returns the Java defaults for a group
// (rocketmq-protocol.md §5.3).
func DefaultSubscriptionGroupConfig(group string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{
		GroupName:                      group,
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		ConsumeBroadcastEnable:         true,
		RetryQueueNums:                 1,
		RetryMaxTimes:                  16,
		BrokerID:                       MasterID,
		WhichBrokerWhenConsumeSlowly:   1,
		NotifyConsumerIDsChangedEnable: true,
	}
}

// SubscriptionGroupWrapper is the body of GET_ALL_SUBSCRIPTIONGROUP_CONFIG
// (standard JSON; rocketmq-client-go decodes it with encoding/json).
type SubscriptionGroupWrapper struct {
	SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	DataVersion            DataVersion                        `json:"dataVersion"`
}

// Encode returns the body as JSON.
func (w *SubscriptionGroupWrapper) Encode() []byte {
	c := *w
	if c.SubscriptionGroupTable == nil {
		c.SubscriptionGroupTable = map[string]SubscriptionGroupConfig{}
	}
	return mustMarshal(c)
}

// DecodeSubscriptionGroupWrapper parses a subscription group table.
func DecodeSubscriptionGroupWrapper(data []byte) (*SubscriptionGroupWrapper, error) {
	var w SubscriptionGroupWrapper
	if err := decodeBody("subscription group wrapper", data, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// ---------------------------------------------------------------------------
// Bodies with MessageQueue-keyed maps (codes 202, 208, 220, 307)

// ResetOffsetBody is the body of RESET_CONSUMER_CLIENT_OFFSET (220): the
// offset to reset each queue to.
type ResetOffsetBody struct {
	OffsetTable map[MessageQueue]int64
}

// Encode returns the body in fastjson form.
func (b *ResetOffsetBody) Encode() []byte {
	dst, _ := appendMQMap(append([]byte(nil), `{"offsetTable":`...), b.OffsetTable) // ints cannot fail
	return append(dst, '}')
}

// DecodeResetOffsetBody parses a reset-offset body (fastjson, gson or
// string-keyed form).
func DecodeResetOffsetBody(data []byte) (*ResetOffsetBody, error) {
	fields, err := splitObject(data)
	if err != nil {
		return nil, fmt.Errorf("reset offset body: %w", err)
	}
	var b ResetOffsetBody
	if b.OffsetTable, err = decodeMQMap[int64](fields["offsetTable"]); err != nil {
		return nil, fmt.Errorf("reset offset body: %w", err)
	}
	return &b, nil
}

// TopicOffset is the offset range of one queue in a TopicStatsTable.
type TopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// TopicStatsTable is the response body of GET_TOPIC_STATS_INFO (202).
type TopicStatsTable struct {
	OffsetTable map[MessageQueue]TopicOffset
}

// Encode returns the body in fastjson form.
func (t *TopicStatsTable) Encode() []byte {
	dst, _ := appendMQMap(append([]byte(nil), `{"offsetTable":`...), t.OffsetTable) // ints cannot fail
	return append(dst, '}')
}

// DecodeTopicStatsTable parses a topic stats body.
func DecodeTopicStatsTable(data []byte) (*TopicStatsTable, error) {
	fields, err := splitObject(data)
	if err != nil {
		return nil, fmt.Errorf("topic stats: %w", err)
	}
	var t TopicStatsTable
	if t.OffsetTable, err = decodeMQMap[TopicOffset](fields["offsetTable"]); err != nil {
		return nil, fmt.Errorf("topic stats: %w", err)
	}
	return &t, nil
}

// OffsetWrapper is the progress of a group on one queue.
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`   // queue max offset
	ConsumerOffset int64 `json:"consumerOffset"` // the group's committed offset
	LastTimestamp  int64 `json:"lastTimestamp"`  // store time of the last consumed message
}

// ConsumeStats is the response body of GET_CONSUME_STATS (208).
type ConsumeStats struct {
	OffsetTable map[MessageQueue]OffsetWrapper
	ConsumeTps  float64
}

// TotalDiff returns the group's lag: the sum over queues of broker offset
// minus consumer offset (Java computeTotalDiff).
func (s *ConsumeStats) TotalDiff() int64 {
	var d int64
	for _, w := range s.OffsetTable {
		d += w.BrokerOffset - w.ConsumerOffset
	}
	return d
}

// Encode returns the body in fastjson form. It fails only on a NaN or
// infinite ConsumeTps.
func (s *ConsumeStats) Encode() ([]byte, error) {
	tps, err := json.Marshal(s.ConsumeTps)
	if err != nil {
		return nil, fmt.Errorf("%w: consumeTps: %v", ErrMalformed, err)
	}
	dst := append([]byte(nil), `{"consumeTps":`...)
	dst = append(dst, tps...)
	dst = append(dst, `,"offsetTable":`...)
	if dst, err = appendMQMap(dst, s.OffsetTable); err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// DecodeConsumeStats parses a consume stats body.
func DecodeConsumeStats(data []byte) (*ConsumeStats, error) {
	fields, err := splitObject(data)
	if err != nil {
		return nil, fmt.Errorf("consume stats: %w", err)
	}
	var s ConsumeStats
	if s.OffsetTable, err = decodeMQMap[OffsetWrapper](fields["offsetTable"]); err != nil {
		return nil, fmt.Errorf("consume stats: %w", err)
	}
	if raw := fields["consumeTps"]; raw != nil {
		if err := decodeBody("consume stats consumeTps", raw, &s.ConsumeTps); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// ProcessQueueInfo is a client's view of one assigned queue, reported in
// ConsumerRunningInfo.
type ProcessQueueInfo struct {
	CommitOffset            int64 `json:"commitOffset"`
	CachedMsgMinOffset      int64 `json:"cachedMsgMinOffset"`
	CachedMsgMaxOffset      int64 `json:"cachedMsgMaxOffset"`
	CachedMsgCount          int32 `json:"cachedMsgCount"`
	CachedMsgSizeInMiB      int32 `json:"cachedMsgSizeInMiB"`
	TransactionMsgMinOffset int64 `json:"transactionMsgMinOffset"`
	TransactionMsgMaxOffset int64 `json:"transactionMsgMaxOffset"`
	TransactionMsgCount     int32 `json:"transactionMsgCount"`
	Locked                  bool  `json:"locked"`
	TryUnlockTimes          int64 `json:"tryUnlockTimes"`
	LastLockTimestamp       int64 `json:"lastLockTimestamp"`
	Dropped                 bool  `json:"dropped"`
	LastPullTimestamp       int64 `json:"lastPullTimestamp"`
	LastConsumeTimestamp    int64 `json:"lastConsumeTimestamp"`
}

// ConsumeStatus is a client's consumption rates for one topic.
type ConsumeStatus struct {
	PullRT            float64 `json:"pullRT"`
	PullTPS           float64 `json:"pullTPS"`
	ConsumeRT         float64 `json:"consumeRT"`
	ConsumeOKTPS      float64 `json:"consumeOKTPS"`
	ConsumeFailedTPS  float64 `json:"consumeFailedTPS"`
	ConsumeFailedMsgs int64   `json:"consumeFailedMsgs"`
}

// ConsumerRunningInfo is the client's reply body to
// GET_CONSUMER_RUNNING_INFO (307).
type ConsumerRunningInfo struct {
	Properties      map[string]string
	SubscriptionSet []SubscriptionData
	MQTable         map[MessageQueue]ProcessQueueInfo
	StatusTable     map[string]ConsumeStatus
	Jstack          string
}

// Encode returns the body in fastjson form. It fails only on NaN or
// infinite rates in StatusTable.
func (r *ConsumerRunningInfo) Encode() ([]byte, error) {
	props, subs, status := r.Properties, r.SubscriptionSet, r.StatusTable
	if props == nil {
		props = map[string]string{}
	}
	if subs == nil {
		subs = []SubscriptionData{}
	}
	if status == nil {
		status = map[string]ConsumeStatus{}
	}
	st, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("%w: statusTable: %v", ErrMalformed, err)
	}
	dst := append([]byte(nil), `{"jstack":`...)
	dst = appendJSONString(dst, r.Jstack)
	dst = append(dst, `,"mqTable":`...)
	if dst, err = appendMQMap(dst, r.MQTable); err != nil {
		return nil, err
	}
	dst = append(dst, `,"properties":`...)
	dst = append(dst, mustMarshal(props)...)
	dst = append(dst, `,"statusTable":`...)
	dst = append(dst, st...)
	dst = append(dst, `,"subscriptionSet":`...)
	dst = append(dst, mustMarshal(subs)...)
	return append(dst, '}'), nil
}

// DecodeConsumerRunningInfo parses a running-info body, including the one
// rocketmq-client-go v2.1.2 writes.
func DecodeConsumerRunningInfo(data []byte) (*ConsumerRunningInfo, error) {
	fields, err := splitObject(data)
	if err != nil {
		return nil, fmt.Errorf("consumer running info: %w", err)
	}
	var r ConsumerRunningInfo
	if r.MQTable, err = decodeMQMap[ProcessQueueInfo](fields["mqTable"]); err != nil {
		return nil, fmt.Errorf("consumer running info: %w", err)
	}
	for _, f := range []struct {
		key string
		v   any
	}{{"properties", &r.Properties}, {"subscriptionSet", &r.SubscriptionSet}, {"statusTable", &r.StatusTable}, {"jstack", &r.Jstack}} {
		if raw := fields[f.key]; raw != nil {
			if err := decodeBody("consumer running info "+f.key, raw, f.v); err != nil {
				return nil, err
			}
		}
	}
	return &r, nil
}

// appendMQMap writes m as a fastjson object with MessageQueue keys, in
// queue order.
func appendMQMap[V any](dst []byte, m map[MessageQueue]V) ([]byte, error) {
	keys := make([]MessageQueue, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	SortMessageQueues(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = k.appendJSON(dst)
		dst = append(dst, ':')
		v, err := json.Marshal(m[k])
		if err != nil {
			return nil, fmt.Errorf("%w: queue map value of %s: %v", ErrMalformed, k, err)
		}
		dst = append(dst, v...)
	}
	return append(dst, '}'), nil
}

// decodeMQMap parses a MessageQueue-keyed map in any of the forms: a
// fastjson object with object keys, a gson array of [key, value] pairs,
// or an object with string keys (a JSON-encoded queue or a Key string).
// A missing (nil) or null value gives an empty map.
func decodeMQMap[V any](raw []byte) (map[MessageQueue]V, error) {
	m := map[MessageQueue]V{}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return m, nil
	}
	if raw[0] == '[' {
		var pairs [][]json.RawMessage
		if err := json.Unmarshal(raw, &pairs); err != nil {
			return nil, fmt.Errorf("%w: queue map: %v", ErrMalformed, err)
		}
		for _, p := range pairs {
			if len(p) != 2 {
				return nil, fmt.Errorf("%w: queue map pair of %d elements", ErrMalformed, len(p))
			}
			var k MessageQueue
			var v V
			if err := json.Unmarshal(p[0], &k); err != nil {
				return nil, fmt.Errorf("%w: queue map key: %v", ErrMalformed, err)
			}
			if err := json.Unmarshal(p[1], &v); err != nil {
				return nil, fmt.Errorf("%w: queue map value: %v", ErrMalformed, err)
			}
			m[k] = v
		}
		return m, nil
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("%w: queue map is neither object nor array", ErrMalformed)
	}
	i := skipSpace(raw, 1)
	if i < len(raw) && raw[i] == '}' {
		return m, nil
	}
	for {
		end, err := skipValue(raw, i)
		if err != nil {
			return nil, err
		}
		k, err := parseMQKey(raw[i:end])
		if err != nil {
			return nil, err
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, fmt.Errorf("%w: queue map: missing ':'", ErrMalformed)
		}
		i = skipSpace(raw, i+1)
		if end, err = skipValue(raw, i); err != nil {
			return nil, err
		}
		var v V
		if err := json.Unmarshal(raw[i:end], &v); err != nil {
			return nil, fmt.Errorf("%w: queue map value: %v", ErrMalformed, err)
		}
		m[k] = v
		i = skipSpace(raw, end)
		if i >= len(raw) {
			return nil, fmt.Errorf("%w: queue map not closed", ErrTruncated)
		}
		if raw[i] == '}' {
			if skipSpace(raw, i+1) != len(raw) {
				return nil, fmt.Errorf("%w: data after queue map", ErrMalformed)
			}
			return m, nil
		}
		if raw[i] != ',' {
			return nil, fmt.Errorf("%w: queue map: unexpected %q", ErrMalformed, raw[i])
		}
		i = skipSpace(raw, i+1)
	}
}

func parseMQKey(b []byte) (MessageQueue, error) {
	var k MessageQueue
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return k, fmt.Errorf("%w: queue map key: %v", ErrMalformed, err)
		}
		if strings.HasPrefix(strings.TrimSpace(s), "{") {
			b = []byte(s)
		} else {
			return ParseMessageQueueKey(s)
		}
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return k, fmt.Errorf("%w: queue map key: %v", ErrMalformed, err)
	}
	return k, nil
}

// splitObject splits a top-level JSON object with string keys into its raw
// values, tolerating fastjson's non-string keys inside those values.
func splitObject(b []byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, fmt.Errorf("%w: body is not a JSON object", ErrMalformed)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		if skipSpace(b, i+1) != len(b) {
			return nil, fmt.Errorf("%w: data after the object", ErrMalformed)
		}
		return out, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, fmt.Errorf("%w: object key at byte %d is not a string", ErrMalformed, i)
		}
		end, err := skipValue(b, i)
		if err != nil {
			return nil, err
		}
		var key string
		if err := json.Unmarshal(b[i:end], &key); err != nil {
			return nil, fmt.Errorf("%w: object key: %v", ErrMalformed, err)
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, fmt.Errorf("%w: missing ':' after key %q", ErrMalformed, key)
		}
		i = skipSpace(b, i+1)
		if end, err = skipValue(b, i); err != nil {
			return nil, err
		}
		out[key] = b[i:end]
		i = skipSpace(b, end)
		if i >= len(b) {
			return nil, fmt.Errorf("%w: object not closed", ErrTruncated)
		}
		if b[i] == '}' {
			if skipSpace(b, i+1) != len(b) {
				return nil, fmt.Errorf("%w: data after the object", ErrMalformed)
			}
			return out, nil
		}
		if b[i] != ',' {
			return nil, fmt.Errorf("%w: unexpected %q at byte %d", ErrMalformed, b[i], i)
		}
		i = skipSpace(b, i+1)
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON-like value starting at b[i]:
// a string, a balanced object or array (whose contents are not checked),
// or a bare literal.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, fmt.Errorf("%w: value expected", ErrTruncated)
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("%w: unterminated string", ErrTruncated)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := skipValue(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("%w: unbalanced object or array", ErrTruncated)
	case '}', ']', ',', ':':
		return 0, fmt.Errorf("%w: value expected at byte %d", ErrMalformed, i)
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ':' &&
			b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		return j, nil
	}
}
