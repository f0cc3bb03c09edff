package protocol

import "time"

// Tide extension request codes, for operations RocketMQ 4.x has no request
// for (used by mqadmin and the console through mqclient.Admin). They live
// far above RocketMQ's range; a RocketMQ broker answers them
// REQUEST_CODE_NOT_SUPPORTED.
const (
	// TideListHalfMessages: body of the response = HalfMessages (JSON
	// array of the pending and parked half messages).
	TideListHalfMessages int16 = 10001
	// TideResumeHalfCheck: HalfActionRequestHeader (tranStateTableOffset,
	// operator); restarts checks of a parked half message.
	TideResumeHalfCheck int16 = 10002
	// TideForceEndTransaction: HalfActionRequestHeader with
	// commitOrRollback 8 or 12; decides a pending or parked half message.
	TideForceEndTransaction int16 = 10003
	// TideRecallTimer: RecallTimerRequestHeader (handle = the UNIQ_KEY of
	// a timer message, topic = its topic); the timer never fires after
	// SUCCESS.
	TideRecallTimer int16 = 10004
	// TideGetMetadata: a slave asks its master for topics, consumer
	// offsets, subscription groups and delay progress (BrokerMetadata body).
	TideGetMetadata int16 = 10005
	// TideHAStatus: the broker's replication state (HAStatus body: role,
	// max offset, per-slave acked offset and lag in bytes and time).
	TideHAStatus int16 = 10006
)

// Tide extension response codes.
const (
	// TideAlreadyDelivered answers TideRecallTimer for a timer that fired
	// before the recall.
	TideAlreadyDelivered int16 = 10101
)

// System topic names and prefixes (RocketMQ's TopicValidator and MixAll,
// plus Tide's timer topic). Clients never send to the schedule, timer and
// transaction topics directly.
const (
	// RetryTopicPrefix + group is a group's retry topic.
	RetryTopicPrefix = "%RETRY%"
	// DLQTopicPrefix + group is a group's dead-letter topic.
	DLQTopicPrefix = "%DLQ%"
	// ScheduleTopic holds delay-level messages until they are due; its
	// consume-queue tags codes are delivery timestamps.
	ScheduleTopic = "SCHEDULE_TOPIC_XXXX"
	// TimerTopic parks messages with an arbitrary delivery time (Tide's
	// timing wheel); its consume-queue tags codes are delivery times too.
	TimerTopic = "rmq_sys_wheel_timer"
	// TransHalfTopic holds prepared (half) transaction messages.
	TransHalfTopic = "RMQ_SYS_TRANS_HALF_TOPIC"
	// TransOpHalfTopic records the decisions about half messages.
	TransOpHalfTopic = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	// TransCheckMaxTimeTopic receives half messages whose checks ran out.
	TransCheckMaxTimeTopic = "TRANS_CHECK_MAX_TIME_TOPIC"
	// TraceTopic is the default message-trace topic.
	TraceTopic = "RMQ_SYS_TRACE_TOPIC"
	// SelfTestTopic, BenchmarkTopic and OffsetMovedEventTopic are created
	// by RocketMQ brokers for tools.
	SelfTestTopic         = "SELF_TEST_TOPIC"
	BenchmarkTopic        = "BenchmarkTest"
	OffsetMovedEventTopic = "OFFSET_MOVED_EVENT"
	// ReplyTopicSuffix ends a cluster's request-reply topic.
	ReplyTopicSuffix = "_REPLY_TOPIC"
)

// PropTimerOutMS is the property holding a timer message's absolute
// delivery time (Unix ms, decimal) once the broker accepted it, RocketMQ
// 5's TIMER_OUT_MS.
const PropTimerOutMS = "TIMER_OUT_MS"

// RetryTopic returns group's retry topic.
func RetryTopic(group string) string { return RetryTopicPrefix + group }

// DLQTopic returns group's dead-letter topic.
func DLQTopic(group string) string { return DLQTopicPrefix + group }

// ---------------------------------------------------------------------------
// Half messages (codes 10001-10003)

// HalfMessage is one entry of the TideListHalfMessages body: a pending or
// parked half message.
type HalfMessage struct {
	QueueOffset     int64     `json:"queueOffset"` // offset in RMQ_SYS_TRANS_HALF_TOPIC: the handle of 10002/10003
	CommitLogOffset int64     `json:"commitLogOffset"`
	ProducerGroup   string    `json:"producerGroup"`
	Topic           string    `json:"topic"` // the real topic
	MsgID           string    `json:"msgId"` // UNIQ_KEY
	StoreTime       time.Time `json:"storeTime"`
	Checks          int       `json:"checks"`    // check requests sent so far
	NextCheck       time.Time `json:"nextCheck"` // zero when parked
	Parked          bool      `json:"parked"`    // checks exhausted; waits for an operator
}

// EncodeHalfMessages returns the TideListHalfMessages body (a JSON array,
// [] when there are none).
func EncodeHalfMessages(hs []HalfMessage) []byte {
	if hs == nil {
		hs = []HalfMessage{}
	}
	return mustMarshal(hs)
}

// DecodeHalfMessages parses a TideListHalfMessages body.
func DecodeHalfMessages(data []byte) ([]HalfMessage, error) {
	var hs []HalfMessage
	if err := decodeBody("half messages", data, &hs); err != nil {
		return nil, err
	}
	return hs, nil
}

// HalfActionRequestHeader is the header of TideResumeHalfCheck and
// TideForceEndTransaction. Required: tranStateTableOffset.
//
//rmq:codec
type HalfActionRequestHeader struct {
	TranStateTableOffset int64 `rmq:"tranStateTableOffset,required"` // HalfMessage.QueueOffset
	// CommitOrRollback is SysFlagTxCommit or SysFlagTxRollback for
	// TideForceEndTransaction; 0 (omitted) for TideResumeHalfCheck.
	CommitOrRollback int32 `rmq:"commitOrRollback,omitempty"`
	// Operator names who acts, for the broker's audit log; optional.
	Operator string `rmq:"operator,omitempty"`
}

// ---------------------------------------------------------------------------
// Timer recall (code 10004)

// RecallTimerRequestHeader is the header of TideRecallTimer. Required:
// handle.
//
//rmq:codec
type RecallTimerRequestHeader struct {
	Handle string `rmq:"handle,required"` // UNIQ_KEY of the timer message
	// Topic is the timer's topic: the recall cancels only a timer of that
	// topic, and under ACL needs PUB on it. Empty: an operator's recall in
	// any topic (admin-only under ACL).
	Topic string `rmq:"topic,omitempty"`
}

// ---------------------------------------------------------------------------
// Slave metadata (code 10005)

// GetMetadataRequestHeader is the optional header of TideGetMetadata. A
// slave names itself and the topic and subscription group data versions
// it has applied (its confirmation of the previous answer: a master that
// answers a topic creation only once its in-sync slaves have the topic
// reads them), and may ask the master to hold the request up to
// HoldMillis until either table's version differs from those (a long
// poll: a new topic reaches the slaves at once, not at the next tick).
// Without the header (HoldMillis 0) the master answers at once, as
// before; a master that does not know the header ignores it.
//
//rmq:codec
type GetMetadataRequestHeader struct {
	BrokerID        int64 `rmq:"brokerId,omitempty"`
	TopicsCounter   int64 `rmq:"topicsCounter,omitempty"`
	TopicsTimestamp int64 `rmq:"topicsTimestamp,omitempty"`
	GroupsCounter   int64 `rmq:"groupsCounter,omitempty"`
	GroupsTimestamp int64 `rmq:"groupsTimestamp,omitempty"`
	HoldMillis      int64 `rmq:"holdMillis,omitempty"`
}

// BrokerMetadata is what a slave copies from its master besides the commit
// log (RocketMQ's SlaveSynchronize: topic configs, consumer offsets, delay
// offsets, subscription groups), so that it can serve consumers: the body
// of the TideGetMetadata response.
//
// Body layout: one JSON object,
//
//	{"topics":       <TopicConfigSerializeWrapper>,
//	 "offsets":      {"<topic>@<group>": {"<queueId>": offset, ...}, ...},
//	 "delayOffsets": {"<delayLevel>": offset, ...},
//	 "groups":       <SubscriptionGroupWrapper>,
//	 "timerCheckpoint": "<base64>",   (omitted when the master has none)
//	 "acl":          <PlainACLConfig>} (omitted when the master has ACL off)
//
// timerCheckpoint is the master's timer service checkpoint, byte for byte
// as its file config/timerCheckpoint holds it (the layout is documented
// beside broker/internal/timer's encoder); a slave writes it to its own
// file, so a promoted slave resumes the timers where the master was.
//
// acl is the master's plain ACL document as it enforces it (secrets
// included: the request is admin-only, use TLS between brokers on an
// untrusted network); a slave with aclEnable writes it to its own ACL file
// and reloads, so a promoted slave enforces the master's accounts. A
// master without aclEnable, or from before this field, sends none, and
// the slave keeps its own file.
type BrokerMetadata struct {
	Topics          TopicConfigSerializeWrapper `json:"topics"`
	Offsets         map[string]map[string]int64 `json:"offsets"`
	DelayOffsets    map[string]int64            `json:"delayOffsets"`
	Groups          SubscriptionGroupWrapper    `json:"groups"`
	TimerCheckpoint []byte                      `json:"timerCheckpoint,omitempty"`
	ACL             *PlainACLConfig             `json:"acl,omitempty"`
}

// Encode returns the JSON body. Nil maps encode as empty objects.
func (m *BrokerMetadata) Encode() []byte {
	c := *m
	c.fill()
	return mustMarshal(c)
}

// fill replaces nil maps by empty ones.
func (m *BrokerMetadata) fill() {
	if m.Topics.TopicConfigTable == nil {
		m.Topics.TopicConfigTable = map[string]TopicConfig{}
	}
	if m.Offsets == nil {
		m.Offsets = map[string]map[string]int64{}
	}
	if m.DelayOffsets == nil {
		m.DelayOffsets = map[string]int64{}
	}
	if m.Groups.SubscriptionGroupTable == nil {
		m.Groups.SubscriptionGroupTable = map[string]SubscriptionGroupConfig{}
	}
}

// DecodeBrokerMetadata parses a body made by Encode. Every map of the
// result is non-nil, so the caller can replace its tables with them
// directly. A body that does not parse is ErrMalformed.
func DecodeBrokerMetadata(b []byte) (*BrokerMetadata, error) {
	var m BrokerMetadata
	if err := decodeBody("broker metadata", b, &m); err != nil {
		return nil, err
	}
	m.fill()
	for k, q := range m.Offsets {
		if q == nil {
			m.Offsets[k] = map[string]int64{}
		}
	}
	return &m, nil
}

// ---------------------------------------------------------------------------
// Replication status (code 10006)

// HAStatus is the body of the TideHAStatus response.
type HAStatus struct {
	BrokerName   string          `json:"brokerName"`
	BrokerID     int64           `json:"brokerId"`
	Role         string          `json:"role"` // ASYNC_MASTER, SYNC_MASTER or SLAVE
	MaxPhyOffset int64           `json:"maxPhyOffset"`
	Server       *HAServerStatus `json:"server,omitempty"` // a master's view
	Client       *HAClientStatus `json:"client,omitempty"` // a slave's view
}

// HAServerStatus is a master's view of replication.
type HAServerStatus struct {
	Addr      string          `json:"addr"`      // HA listen address
	MaxOffset int64           `json:"maxOffset"` // master commit log end
	Acked     int64           `json:"acked"`     // highest offset any slave acked
	Slaves    []HASlaveStatus `json:"slaves"`
}

// HASlaveStatus is one slave connection as its master sees it.
type HASlaveStatus struct {
	Addr           string    `json:"addr"`               // the slave's remote address
	BrokerID       int64     `json:"brokerId,omitempty"` // its controller id (controller mode), 0 otherwise
	ConnectedSince time.Time `json:"connectedSince"`     // when its connection was accepted
	Ready          bool      `json:"ready"`              // it reported its offset and is being streamed
	AckedOffset    int64     `json:"ackedOffset"`        // end of what it confirmed to have
	SentOffset     int64     `json:"sentOffset"`         // end of what was sent to it
	LastAck        time.Time `json:"lastAck"`            // its last report
	LagBytes       int64     `json:"lagBytes"`           // master max offset - acked
	// LagTime is how long the oldest message it lacks has been stored on
	// the master (0 when caught up).
	LagTime time.Duration `json:"lagTimeNs"`
}

// HAClientStatus is a slave's view of its connection to the master.
type HAClientStatus struct {
	MasterAddr     string    `json:"masterAddr"`
	Connected      bool      `json:"connected"`
	ConnectedSince time.Time `json:"connectedSince"` // zero when not connected
	MaxOffset      int64     `json:"maxOffset"`      // own commit log end
	// ConfirmOffset: controller mode, the master's confirm offset last
	// received (the slave dispatches, so serves, nothing past it).
	ConfirmOffset int64     `json:"confirmOffset,omitempty"`
	LastReport    time.Time `json:"lastAck"`     // last offset report (ack) sent to the master
	LastReceive   time.Time `json:"lastReceive"` // last transfer or heartbeat received
	Sessions      int64     `json:"sessions"`    // connections established so far
}

// Encode returns the JSON body.
func (s *HAStatus) Encode() []byte { return mustMarshal(s) }

// DecodeHAStatus parses a TideHAStatus body.
func DecodeHAStatus(data []byte) (*HAStatus, error) {
	var s HAStatus
	if err := decodeBody("ha status", data, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ---------------------------------------------------------------------------
// Broker runtime info (code 28)

// DecodeRuntimeInfo parses a GET_BROKER_RUNTIME_INFO body: the broker's
// runtime figures by name (msgPutTotal, msgGetTotal, ...).
func DecodeRuntimeInfo(data []byte) (map[string]string, error) {
	kv, err := DecodeKVTable(data)
	if err != nil {
		return nil, err
	}
	return kv.Table, nil
}
