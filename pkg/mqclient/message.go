package mqclient

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Queue identifies one queue of a topic on one broker.
type Queue = protocol.MessageQueue

// Message is what a producer sends. A Message is not modified by the
// producer (interceptors may change it in BeforeSend) and must not be
// changed while a send of it is running.
type Message struct {
	Topic string
	Body  []byte
	// Tag is the one filterable tag (RocketMQ TAGS).
	Tag string
	// Keys are business keys, indexed by the broker for queries.
	Keys []string
	// ShardingKey selects the queue by hash with the default selector, so
	// that messages with equal keys share a queue and keep their order;
	// ordered consumers also serialise on it.
	ShardingKey string
	// Properties are user properties. Names used by RocketMQ itself (upper
	// case, see protocol.Prop*) are overwritten by the fields above.
	Properties map[string]string
	// DelayLevel (1..18: 1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m
	// 30m 1h 2h) delays delivery on any RocketMQ 4.x broker.
	DelayLevel int
	// DeliverAt asks for delivery at an arbitrary time (RocketMQ 5 timer
	// messages, property TIMER_DELIVER_MS). Brokers without timer support
	// deliver at once. Use Producer.Recall with the SendResult to cancel.
	DeliverAt time.Time
	// Flag is the user flag stored with the message.
	Flag int32
}

// MessageExt is a message as delivered to a consumer. Handlers own it and
// may keep it.
type MessageExt struct {
	Message
	// MsgID is the client id (UNIQ_KEY), else the OffsetMsgID.
	MsgID string
	// OffsetMsgID is the broker id: store host and commit log offset.
	OffsetMsgID     string
	Queue           Queue
	QueueOffset     int64
	CommitLogOffset int64
	// ReconsumeTimes counts earlier failed deliveries.
	ReconsumeTimes int32
	BornTimestamp  time.Time
	StoreTimestamp time.Time
	BornHost       string
	StoreHost      string
	SysFlag        int32
}

// Key returns the ordering key: ShardingKey, else the first key, else "".
func (m *Message) Key() string {
	if m.ShardingKey != "" {
		return m.ShardingKey
	}
	if len(m.Keys) > 0 {
		return m.Keys[0]
	}
	return ""
}

// SendStatus is the broker's verdict on a stored message.
type SendStatus int

const (
	// SendOK: stored (and flushed/replicated if the broker waits for that).
	SendOK SendStatus = iota
	// SendFlushDiskTimeout: stored, but the synchronous flush timed out.
	SendFlushDiskTimeout
	// SendFlushSlaveTimeout: stored, but the slave did not confirm in time.
	SendFlushSlaveTimeout
	// SendSlaveNotAvailable: stored on the master, no slave available.
	SendSlaveNotAvailable
)

func (s SendStatus) String() string {
	switch s {
	case SendOK:
		return "SEND_OK"
	case SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return "SendStatus(" + strconv.Itoa(int(s)) + ")"
}

// SendResult describes a stored message (or batch).
type SendResult struct {
	Status SendStatus
	// MsgID is the client message id (UNIQ_KEY); for a batch, the ids of
	// its messages joined with ",".
	MsgID string
	// OffsetMsgID is the broker's id (comma-separated for a batch).
	OffsetMsgID   string
	Queue         Queue
	QueueOffset   int64
	TransactionID string
	// DeliverAt is the requested delivery time of a timer message.
	DeliverAt time.Time
}

var topicName = regexp.MustCompile(`^[%|a-zA-Z0-9_-]+$`)

func validTopic(t string) error {
	if t == "" || len(t) > protocol.MaxTopicLength || !topicName.MatchString(t) {
		return fmt.Errorf("%w: topic %q: only [%%|a-zA-Z0-9_-], 1..127 bytes", ErrInvalidMessage, t)
	}
	return nil
}

// properties builds the wire property map of m (UNIQ_KEY excluded).
func (m *Message) properties() map[string]string {
	p := make(map[string]string, len(m.Properties)+5)
	for k, v := range m.Properties {
		p[k] = v
	}
	if m.Tag != "" {
		p[protocol.PropTags] = m.Tag
	}
	if len(m.Keys) > 0 {
		p[protocol.PropKeys] = strings.Join(m.Keys, " ")
	}
	if m.ShardingKey != "" {
		p[protocol.PropShardingKey] = m.ShardingKey
	}
	if m.DelayLevel > 0 {
		p[protocol.PropDelayLevel] = strconv.Itoa(m.DelayLevel)
	}
	if !m.DeliverAt.IsZero() {
		p[protocol.PropTimerDeliverMS] = strconv.FormatInt(m.DeliverAt.UnixMilli(), 10)
	}
	return p
}

// reserved properties are decoded into fields and removed from Properties.
var reserved = []string{protocol.PropTags, protocol.PropKeys, protocol.PropShardingKey, protocol.PropDelayLevel, protocol.PropTimerDeliverMS}

// fromStored converts a decoded record into a MessageExt, inflating a
// compressed body. brokerName names the queue's broker.
func fromStored(r *protocol.MessageExt, brokerName string) *MessageExt {
	props := r.Properties
	m := &MessageExt{
		Message: Message{
			Topic: r.Topic, Body: r.Body, Flag: r.Flag,
			Tag:         props[protocol.PropTags],
			Keys:        strings.Fields(props[protocol.PropKeys]),
			ShardingKey: props[protocol.PropShardingKey],
		},
		MsgID:           r.MsgID(),
		OffsetMsgID:     r.OffsetMsgID(),
		Queue:           Queue{Topic: r.Topic, BrokerName: brokerName, QueueID: r.QueueID},
		QueueOffset:     r.QueueOffset,
		CommitLogOffset: r.CommitLogOffset,
		ReconsumeTimes:  r.ReconsumeTimes,
		BornTimestamp:   time.UnixMilli(r.BornTimestamp),
		StoreTimestamp:  time.UnixMilli(r.StoreTimestamp),
		BornHost:        r.BornHost.String(),
		StoreHost:       r.StoreHost.String(),
		SysFlag:         r.SysFlag,
	}
	if d, err := strconv.Atoi(props[protocol.PropDelayLevel]); err == nil {
		m.DelayLevel = d
	}
	if ms, err := strconv.ParseInt(props[protocol.PropTimerDeliverMS], 10, 64); err == nil {
		m.DeliverAt = time.UnixMilli(ms)
	}
	if len(props) > 0 {
		m.Properties = make(map[string]string, len(props))
		for k, v := range props {
			m.Properties[k] = v
		}
		for _, k := range reserved {
			delete(m.Properties, k)
		}
	}
	if r.SysFlag&protocol.SysFlagCompressed != 0 {
		if b, err := inflate(r.Body); err == nil {
			m.Body = b
		}
	}
	return m
}

func deflate(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := zlib.NewWriterLevel(&buf, 5)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func inflate(b []byte) ([]byte, error) {
	r, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}
