package mqclient

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"net/netip"
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
// may keep it. The Bodies of the messages of one pull may share one
// buffer (the pull's response): a handler that keeps a few small bodies of
// a large pull for long should copy them, so as not to keep it all.
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

// validName reports whether s is a non-empty string of RocketMQ's name
// characters [%|a-zA-Z0-9_-] (checked on every send: a loop, not a regexp).
func validName(s string) bool { return s != "" && protocol.BadNameByte(s) < 0 }

func validTopic(t string) error {
	if t == "" || len(t) > protocol.MaxTopicLength || !validName(t) {
		return fmt.Errorf("%w: topic %q: only [%%|a-zA-Z0-9_-], 1..127 bytes", ErrInvalidMessage, t)
	}
	return nil
}

// properties builds the wire property map of m (UNIQ_KEY excluded).
func (m *Message) properties() map[string]string {
	if len(m.Properties) == 0 && m.Tag == "" && len(m.Keys) == 0 && m.ShardingKey == "" &&
		m.DelayLevel <= 0 && m.DeliverAt.IsZero() {
		return nil // none: the producer keeps no map (props.go)
	}
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
	m.DelayLevel, m.DeliverAt = delayFields(props[protocol.PropDelayLevel], props[protocol.PropTimerDeliverMS])
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

// delayFields parses the DELAY and TIMER_DELIVER_MS properties; a missing
// or unparsable one leaves its field zero. Empty values are not parsed
// (strconv allocates its error).
func delayFields(delay, deliverMS string) (level int, at time.Time) {
	if delay != "" {
		if d, err := strconv.Atoi(delay); err == nil {
			level = d
		}
	}
	if deliverMS != "" {
		if ms, err := strconv.ParseInt(deliverMS, 10, 64); err == nil {
			at = time.UnixMilli(ms)
		}
	}
	return level, at
}

// recordDecoder converts the records of one response body into
// MessageExts: the same result as protocol.DecodeStored and fromStored
// (which the tests check), with three allocations per message (its offset
// id and its property map) instead of a dozen: the MessageExts of a body
// are one array and their property strings one string (props), allocated
// once per body. The Body of each message aliases the body it decodes
// (capped at its length, so an append reallocates), so that body must be
// a buffer nobody else writes, as a remoting response's is. The topic
// string and host strings are shared between the messages of a body.
//
// Each message still belongs to whoever holds it: no two share writable
// memory (a Body is capped, the shared strings are immutable), so a
// handler may keep, change or hand on any of them. Keeping one keeps its
// pull's array and strings reachable, as its aliased Body already keeps
// the pull's response body.
type recordDecoder struct {
	brokerName string
	topic      string // the expected topic, reused for records naming it
	hosts      [4]hostName
	nhosts     int
	props      strings.Builder // the property strings of the body, one after the other
}

type hostName struct {
	ap netip.AddrPort
	s  string
}

// host returns ap as a string, reusing the strings of the last few hosts.
func (d *recordDecoder) host(ap netip.AddrPort) string {
	for _, h := range d.hosts[:d.nhosts] {
		if h.ap == ap {
			return h.s
		}
	}
	s := ap.String()
	if d.nhosts < len(d.hosts) {
		d.hosts[d.nhosts] = hostName{ap, s}
		d.nhosts++
	}
	return s
}

// recordProps are the properties of one record: the reserved ones apart,
// the others in user (nil if there are none).
type recordProps struct {
	tag, keys, sharding, delay, deliverMS, uniq string
	user                                        map[string]string
	any                                         bool // at least one valid piece
}

// parseProps splits a property string once, without a map for the
// reserved properties. For a repeated name the last value wins, as in
// protocol.DecodeProperties.
func parseProps(s string) recordProps {
	var p recordProps
	for len(s) > 0 {
		var k, v string
		var ok bool
		if k, v, s, ok = protocol.NextProperty(s); !ok {
			continue
		}
		p.any = true
		switch k {
		case protocol.PropTags:
			p.tag = v
			continue
		case protocol.PropKeys:
			p.keys = v
			continue
		case protocol.PropShardingKey:
			p.sharding = v
			continue
		case protocol.PropDelayLevel:
			p.delay = v
			continue
		case protocol.PropTimerDeliverMS:
			p.deliverMS = v
			continue
		case protocol.PropUniqKey:
			p.uniq = v
		}
		if p.user == nil {
			p.user = make(map[string]string, 2)
		}
		p.user[k] = v
	}
	if p.any && p.user == nil {
		p.user = map[string]string{} // fromStored's map, emptied of reserved names
	}
	return p
}

// propString returns b as a string that shares the body's property
// buffer (one allocation per body when decodePull sized it): a Builder
// only appends, so the bytes under an earlier String never change.
func (d *recordDecoder) propString(b []byte) string {
	start := d.props.Len()
	d.props.Write(b)
	return d.props.String()[start:]
}

// decode converts one record that protocol.ViewRecord accepted as v into
// m; rec holds its bytes. keep, when not nil, is asked about the record's
// tag before anything is allocated for it; decode reports false, leaving
// m as it was, if it says no.
func (d *recordDecoder) decode(m *MessageExt, v *protocol.RecordView, rec []byte, keep func(tag string) bool) bool {
	var p recordProps
	if len(v.Properties) > 0 {
		p = parseProps(d.propString(v.Properties))
	}
	if keep != nil && !keep(p.tag) {
		return false
	}
	topic := d.topic
	if string(v.Topic) != topic {
		topic = string(v.Topic)
	}
	var body []byte
	if v.BodyLength > 0 {
		end := v.BodyOffset + v.BodyLength
		body = rec[v.BodyOffset:end:end]
	}
	born, store := protocol.RecordHosts(rec, v.SysFlag)
	*m = MessageExt{
		Message: Message{
			Topic: topic, Body: body, Flag: v.Flag,
			Tag: p.tag, Keys: strings.Fields(p.keys), ShardingKey: p.sharding,
			Properties: p.user,
		},
		OffsetMsgID:     protocol.OffsetMsgID(store, v.PhysicalOffset),
		Queue:           Queue{Topic: topic, BrokerName: d.brokerName, QueueID: v.QueueID},
		QueueOffset:     v.QueueOffset,
		CommitLogOffset: v.PhysicalOffset,
		ReconsumeTimes:  v.ReconsumeTimes,
		BornTimestamp:   time.UnixMilli(v.BornTimestamp),
		StoreTimestamp:  time.UnixMilli(v.StoreTimestamp),
		BornHost:        d.host(born),
		StoreHost:       d.host(store),
		SysFlag:         v.SysFlag,
	}
	m.MsgID = p.uniq
	if m.MsgID == "" {
		m.MsgID = m.OffsetMsgID
	}
	m.DelayLevel, m.DeliverAt = delayFields(p.delay, p.deliverMS)
	if v.SysFlag&protocol.SysFlagCompressed != 0 {
		if b, err := inflate(body); err == nil {
			m.Body = b
		}
	}
	return true
}

// decodePull converts the records of a pull response body of queue q: those
// at queue offset from or later whose tag keep accepts (keep nil: all),
// each retry message under its original topic. It stops at the first bad
// record with its error; n counts the records before it (skipped ones
// included) and last is the queue offset of the last of them.
func decodePull(body []byte, q Queue, from int64, keep func(tag string) bool) (msgs []*MessageExt, n int, last int64, err error) {
	d := recordDecoder{brokerName: q.BrokerName, topic: q.Topic}
	count, propBytes := measureRecords(body)
	d.props.Grow(propBytes)
	msgs = make([]*MessageExt, 0, count)
	slab := make([]MessageExt, count)
	for len(body) > 0 {
		v, verr := protocol.ViewRecord(body, false)
		if verr != nil {
			return msgs, n, last, verr
		}
		rec := body[:v.Size:v.Size]
		body = body[v.Size:]
		n, last = n+1, v.QueueOffset
		if v.QueueOffset < from {
			continue
		}
		m := &slab[len(msgs)]
		if !d.decode(m, &v, rec, keep) {
			continue
		}
		if rt := m.Properties[protocol.PropRetryTopic]; rt != "" && strings.HasPrefix(m.Topic, RetryTopicPrefix) {
			m.Topic = rt
		}
		msgs = append(msgs, m)
	}
	return msgs, n, last, nil
}

// measureRecords counts the records of body that decode (at least what
// decodePull returns) and the bytes of their property strings: the sizes
// of its result, its array of MessageExts and its property buffer.
func measureRecords(body []byte) (n, propBytes int) {
	for len(body) > 0 {
		v, err := protocol.ViewRecord(body, false)
		if err != nil {
			break
		}
		body = body[v.Size:]
		n++
		propBytes += len(v.Properties)
	}
	return n, propBytes
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
