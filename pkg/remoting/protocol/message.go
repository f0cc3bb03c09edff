package protocol

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/netip"
	"slices"
	"strings"
)

// Magic codes of stored records.
const (
	MessageMagic = int32(-626843481) // 0xDAA320A7: a message record
	BlankMagic   = int32(-875286124) // 0xCBD43194: filler at the end of a commit log segment
)

// The magic codes as unsigned words, for writing them.
const (
	messageMagicU32 uint32 = 0xDAA320A7
	blankMagicU32   uint32 = 0xCBD43194
)

// Message sysFlag bits (MessageSysFlag).
const (
	SysFlagCompressed     int32 = 0x1
	SysFlagMultiTags      int32 = 0x2
	SysFlagTxNotType      int32 = 0x0
	SysFlagTxPrepared     int32 = 0x4
	SysFlagTxCommit       int32 = 0x8
	SysFlagTxRollback     int32 = 0xC
	SysFlagTxMask         int32 = 0xC
	SysFlagBornHostV6     int32 = 0x10
	SysFlagStoreHostV6    int32 = 0x20
	SysFlagCompressionMsk int32 = 0x700
)

// TxType returns the transaction bits of a sysFlag.
func TxType(sysFlag int32) int32 { return sysFlag & SysFlagTxMask }

// Property keys (MessageConst). See rocketmq-protocol.md §4.5.
const (
	PropKeys                     = "KEYS"
	PropTags                     = "TAGS"
	PropWaitStoreMsgOK           = "WAIT"
	PropDelayLevel               = "DELAY"
	PropUniqKey                  = "UNIQ_KEY"
	PropTransactionPrepared      = "TRAN_MSG"
	PropProducerGroup            = "PGROUP"
	PropTransactionID            = "__transactionId__"
	PropRealTopic                = "REAL_TOPIC"
	PropRealQueueID              = "REAL_QID"
	PropRetryTopic               = "RETRY_TOPIC"
	PropOriginMessageID          = "ORIGIN_MESSAGE_ID"
	PropMaxReconsumeTimes        = "MAX_RECONSUME_TIMES"
	PropReconsumeTime            = "RECONSUME_TIME"
	PropConsumeStartTime         = "CONSUME_START_TIME"
	PropMinOffset                = "MIN_OFFSET"
	PropMaxOffset                = "MAX_OFFSET"
	PropTransactionCheckTimes    = "TRANSACTION_CHECK_TIMES"
	PropCheckImmunityTimeSeconds = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	PropTranPreparedQueueOffset  = "TRAN_PREPARED_QUEUE_OFFSET"
	PropCluster                  = "CLUSTER"
	PropMsgRegion                = "MSG_REGION"
	PropTraceSwitch              = "TRACE_ON"
	PropCorrelationID            = "CORRELATION_ID"
	PropReplyToClient            = "REPLY_TO_CLIENT"
	PropTTL                      = "TTL"
	PropMsgType                  = "MSG_TYPE"
	PropArriveTime               = "ARRIVE_TIME"
	PropPushReplyTime            = "PUSH_REPLY_TIME"
	PropShardingKey              = "SHARDING_KEY"
	// RocketMQ 5 timer properties, honoured by Tide's broker for
	// arbitrary-time delivery.
	PropTimerDeliverMS = "TIMER_DELIVER_MS"
	PropTimerDelaySec  = "TIMER_DELAY_SEC"
	PropTimerDelayMS   = "TIMER_DELAY_MS"
)

// Property string separators.
const (
	NameValueSeparator = '\x01'
	PropertySeparator  = '\x02'
)

// EncodeProperties renders properties as name 0x01 value 0x02 ... with the
// trailing 0x02 Java and Go both leave. Keys are sorted for determinism;
// empty keys and values are skipped, as the Go client does.
func EncodeProperties(props map[string]string) string {
	if len(props) == 0 {
		return ""
	}
	var kb [24]string // on the stack for the usual handful of properties
	keys := kb[:0]
	n := 0
	for k, v := range props {
		if k == "" || v == "" {
			continue
		}
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(n)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(NameValueSeparator)
		b.WriteString(props[k])
		b.WriteByte(PropertySeparator)
	}
	return b.String()
}

// DecodeProperties parses a property string. Pieces that are not exactly
// name 0x01 value are ignored, like the Go client does; it never fails.
func DecodeProperties(s string) map[string]string {
	m := make(map[string]string, strings.Count(s, string(PropertySeparator))+1)
	for len(s) > 0 {
		var k, v string
		var ok bool
		if k, v, s, ok = NextProperty(s); ok {
			m[k] = v
		}
	}
	return m
}

// NextProperty splits the first piece (up to the next 0x02) off a
// non-empty property string s and returns its name and value and the
// rest of s. ok is false for a piece DecodeProperties ignores: one that is
// not exactly a non-empty name, 0x01 and a value. name and value are
// substrings of s; nothing is allocated. Iterating with it until rest is
// empty sees the pieces DecodeProperties puts in its map, in order (for a
// repeated name the last one is the map's).
func NextProperty(s string) (name, value, rest string, ok bool) {
	piece := s
	if i := strings.IndexByte(s, PropertySeparator); i >= 0 {
		piece, rest = s[:i], s[i+1:]
	}
	j := strings.IndexByte(piece, NameValueSeparator)
	if j <= 0 || strings.IndexByte(piece[j+1:], NameValueSeparator) >= 0 {
		return "", "", rest, false
	}
	return piece[:j], piece[j+1:], rest, true
}

// PropertyValue returns one property from an encoded property string
// without building a map (the dispatcher's hot path).
func PropertyValue(s, key string) (string, bool) {
	for len(s) > 0 {
		var piece string
		if i := strings.IndexByte(s, PropertySeparator); i >= 0 {
			piece, s = s[:i], s[i+1:]
		} else {
			piece, s = s, ""
		}
		if len(piece) > len(key) && piece[len(key)] == NameValueSeparator && piece[:len(key)] == key {
			return piece[len(key)+1:], true
		}
	}
	return "", false
}

// Message is what a producer sends: topic, user flag, properties and body.
type Message struct {
	Topic      string
	Flag       int32
	Properties map[string]string
	Body       []byte
}

// Property returns the named property ("" when absent).
func (m *Message) Property(k string) string {
	if m.Properties == nil {
		return ""
	}
	return m.Properties[k]
}

// SetProperty sets a property, allocating the map when needed.
func (m *Message) SetProperty(k, v string) {
	if m.Properties == nil {
		m.Properties = map[string]string{}
	}
	m.Properties[k] = v
}

// Tags returns the TAGS property.
func (m *Message) Tags() string { return m.Property(PropTags) }

// Keys returns the space-separated KEYS property split into keys.
func (m *Message) Keys() []string { return strings.Fields(m.Property(PropKeys)) }

// MessageExt is a stored message: the record the broker appends to its
// commit log and returns in pulls, queries and check-backs.
type MessageExt struct {
	Message
	StoreSize                 int32
	BodyCRC                   int32
	QueueID                   int32
	QueueOffset               int64
	CommitLogOffset           int64
	SysFlag                   int32
	BornTimestamp             int64
	BornHost                  netip.AddrPort
	StoreTimestamp            int64
	StoreHost                 netip.AddrPort
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
}

// OffsetMsgID returns the offset message id of the record (store host and
// commit log offset).
func (m *MessageExt) OffsetMsgID() string { return OffsetMsgID(m.StoreHost, m.CommitLogOffset) }

// MsgID returns UNIQ_KEY when present, else the offset id, as clients do.
func (m *MessageExt) MsgID() string {
	if id := m.Property(PropUniqKey); id != "" {
		return id
	}
	return m.OffsetMsgID()
}

// Stored record layout (big-endian; IPv4 hosts shown, an IPv6 host takes
// 16+4 bytes instead of 4+4 when its sysFlag bit is set):
//
//	off  size  field
//	  0     4  totalSize (whole record)
//	  4     4  magicCode 0xDAA320A7
//	  8     4  bodyCRC (crc32 IEEE & 0x7FFFFFFF)
//	 12     4  queueId
//	 16     4  flag
//	 20     8  queueOffset
//	 28     8  physicalOffset
//	 36     4  sysFlag
//	 40     8  bornTimestamp
//	 48     8  bornHost (addr 4 + port 4)
//	 56     8  storeTimestamp
//	 64     8  storeHost (addr 4 + port 4)
//	 72     4  reconsumeTimes
//	 76     8  preparedTransactionOffset
//	 84     4  bodyLength n
//	 88     n  body
//	88+n    1  topicLength t
//	89+n    t  topic
//	89+n+t  2  propertiesLength p
//	91+n+t  p  properties
//
// The blank filler at a segment end is 8 bytes: totalSize (the remaining
// bytes of the segment) and BlankMagic.
const (
	RecordQueueOffsetPos = 20
	RecordPhyOffsetPos   = 28
	RecordSysFlagPos     = 36
	RecordBornTSPos      = 40
	RecordMinSize        = 91 // IPv4 hosts, empty body/topic/properties
	MaxTopicLength       = 127
	MaxPropertiesLength  = 32767
	BlankRecordSize      = 8
)

// BodyCRC returns the masked CRC-32 RocketMQ stores for a body.
func BodyCRC(body []byte) int32 { return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF) }

func hostLen(sysFlag, v6bit int32) int {
	if sysFlag&v6bit != 0 {
		return 20
	}
	return 8
}

// StoredSize returns the record size of m with the given encoded property
// string length.
func StoredSize(sysFlag int32, bodyLen, topicLen, propsLen int) int {
	return 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + hostLen(sysFlag, SysFlagBornHostV6) + 8 + hostLen(sysFlag, SysFlagStoreHostV6) +
		4 + 8 + 4 + bodyLen + 1 + topicLen + 2 + propsLen
}

// normalizeHosts sets the IPv6 sysFlag bits from the hosts' address
// families, so the bits always match the bytes written.
func normalizeHosts(m *MessageExt) {
	m.SysFlag &^= SysFlagBornHostV6 | SysFlagStoreHostV6
	if a := m.BornHost.Addr(); a.Is6() && !a.Is4In6() {
		m.SysFlag |= SysFlagBornHostV6
	}
	if a := m.StoreHost.Addr(); a.Is6() && !a.Is4In6() {
		m.SysFlag |= SysFlagStoreHostV6
	}
}

// AppendStored appends m as a stored record using props as its encoded
// property string (see EncodeProperties). It fills m.StoreSize and
// m.BodyCRC. It fails on a topic over 127 bytes or properties over 32767
// bytes, the limits of their length fields.
func AppendStored(dst []byte, m *MessageExt, props string) ([]byte, error) {
	if len(m.Topic) > MaxTopicLength {
		return dst, fmt.Errorf("%w: topic of %d bytes exceeds %d", ErrMalformed, len(m.Topic), MaxTopicLength)
	}
	if len(props) > MaxPropertiesLength {
		return dst, fmt.Errorf("%w: properties of %d bytes exceed %d", ErrMalformed, len(props), MaxPropertiesLength)
	}
	normalizeHosts(m)
	size := StoredSize(m.SysFlag, len(m.Body), len(m.Topic), len(props))
	m.StoreSize = int32(size)
	m.BodyCRC = BodyCRC(m.Body)
	be := binary.BigEndian
	dst = be.AppendUint32(dst, uint32(size))
	dst = be.AppendUint32(dst, messageMagicU32)
	dst = be.AppendUint32(dst, uint32(m.BodyCRC))
	dst = be.AppendUint32(dst, uint32(m.QueueID))
	dst = be.AppendUint32(dst, uint32(m.Flag))
	dst = be.AppendUint64(dst, uint64(m.QueueOffset))
	dst = be.AppendUint64(dst, uint64(m.CommitLogOffset))
	dst = be.AppendUint32(dst, uint32(m.SysFlag))
	dst = be.AppendUint64(dst, uint64(m.BornTimestamp))
	dst = appendHost(dst, m.BornHost, m.SysFlag&SysFlagBornHostV6 != 0)
	dst = be.AppendUint64(dst, uint64(m.StoreTimestamp))
	dst = appendHost(dst, m.StoreHost, m.SysFlag&SysFlagStoreHostV6 != 0)
	dst = be.AppendUint32(dst, uint32(m.ReconsumeTimes))
	dst = be.AppendUint64(dst, uint64(m.PreparedTransactionOffset))
	dst = be.AppendUint32(dst, uint32(len(m.Body)))
	dst = append(dst, m.Body...)
	dst = append(dst, byte(len(m.Topic)))
	dst = append(dst, m.Topic...)
	dst = be.AppendUint16(dst, uint16(len(props)))
	dst = append(dst, props...)
	return dst, nil
}

func appendHost(dst []byte, h netip.AddrPort, v6 bool) []byte {
	a := h.Addr()
	if v6 {
		b := a.As16()
		dst = append(dst, b[:]...)
	} else {
		var b [4]byte
		if a.Is4() || a.Is4In6() {
			b = a.Unmap().As4()
		}
		dst = append(dst, b[:]...)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(h.Port()))
}

// RecordHeader is the fixed part of a stored record, read without
// allocating: enough for recovery and dispatch to validate and index it.
type RecordHeader struct {
	TotalSize      int32
	Magic          int32
	BodyCRC        int32
	QueueID        int32
	QueueOffset    int64
	PhysicalOffset int64
	SysFlag        int32
	StoreTimestamp int64
}

// PeekRecord reads the size and magic at the start of buf. It is what a
// commit log scan uses to find the next record or the blank filler.
func PeekRecord(buf []byte) (size int32, magic int32, err error) {
	if len(buf) < 8 {
		return 0, 0, ErrTruncated
	}
	return int32(binary.BigEndian.Uint32(buf)), int32(binary.BigEndian.Uint32(buf[4:])), nil
}

// DecodeStored decodes one stored record at the start of buf and returns
// it with its size. With checkCRC the body CRC is verified. It never
// panics: a record that does not fit buf, a wrong magic code or
// inconsistent lengths give ErrMalformed or ErrTruncated. Body and
// Properties are copied, so the result does not alias buf.
func DecodeStored(buf []byte, checkCRC bool) (*MessageExt, int, error) {
	be := binary.BigEndian
	size, magic, err := PeekRecord(buf)
	if err != nil {
		return nil, 0, err
	}
	if magic != MessageMagic {
		return nil, 0, fmt.Errorf("%w: magic code %#x", ErrMalformed, uint32(magic))
	}
	if size < RecordMinSize {
		return nil, 0, fmt.Errorf("%w: record size %d below minimum", ErrMalformed, size)
	}
	if int(size) > len(buf) {
		return nil, 0, fmt.Errorf("%w: record of %d bytes, %d available", ErrTruncated, size, len(buf))
	}
	r := buf[:size]
	m := &MessageExt{StoreSize: size}
	m.BodyCRC = int32(be.Uint32(r[8:]))
	m.QueueID = int32(be.Uint32(r[12:]))
	m.Flag = int32(be.Uint32(r[16:]))
	m.QueueOffset = int64(be.Uint64(r[20:]))
	m.CommitLogOffset = int64(be.Uint64(r[28:]))
	m.SysFlag = int32(be.Uint32(r[36:]))
	m.BornTimestamp = int64(be.Uint64(r[40:]))
	p := 48
	bl, sl := hostLen(m.SysFlag, SysFlagBornHostV6), hostLen(m.SysFlag, SysFlagStoreHostV6)
	// fixed part after born timestamp: bornHost, storeTS 8, storeHost, reconsume 4, prepared 8, bodyLen 4
	if p+bl+8+sl+4+8+4 > len(r) {
		return nil, 0, fmt.Errorf("%w: record header exceeds its size", ErrMalformed)
	}
	m.BornHost = readHost(r[p:p+bl], bl == 20)
	p += bl
	m.StoreTimestamp = int64(be.Uint64(r[p:]))
	p += 8
	m.StoreHost = readHost(r[p:p+sl], sl == 20)
	p += sl
	m.ReconsumeTimes = int32(be.Uint32(r[p:]))
	p += 4
	m.PreparedTransactionOffset = int64(be.Uint64(r[p:]))
	p += 8
	n := be.Uint32(r[p:])
	p += 4
	if uint64(n) > uint64(len(r)-p) {
		return nil, 0, fmt.Errorf("%w: body length %d exceeds record", ErrMalformed, n)
	}
	body := r[p : p+int(n)]
	p += int(n)
	if checkCRC && BodyCRC(body) != m.BodyCRC {
		return nil, 0, fmt.Errorf("%w: at physical offset %d", ErrBadCRC, m.CommitLogOffset)
	}
	m.Body = append([]byte(nil), body...)
	if p >= len(r) {
		return nil, 0, fmt.Errorf("%w: topic length missing", ErrMalformed)
	}
	tl := int(r[p])
	p++
	if tl > len(r)-p || len(r)-p-tl < 2 {
		return nil, 0, fmt.Errorf("%w: topic length %d exceeds record", ErrMalformed, tl)
	}
	m.Topic = string(r[p : p+tl])
	p += tl
	pl := int(be.Uint16(r[p:]))
	p += 2
	if pl != len(r)-p {
		return nil, 0, fmt.Errorf("%w: properties length %d does not end the record (%d left)", ErrMalformed, pl, len(r)-p)
	}
	if pl > 0 {
		m.Properties = DecodeProperties(string(r[p : p+pl]))
	}
	return m, int(size), nil
}

// RecordHosts returns the born and store hosts of a record that ViewRecord
// accepted (rec starts at the record; sysFlag is its RecordView.SysFlag),
// without allocating. A record too short to hold them gives zero values.
func RecordHosts(rec []byte, sysFlag int32) (born, store netip.AddrPort) {
	bl, sl := hostLen(sysFlag, SysFlagBornHostV6), hostLen(sysFlag, SysFlagStoreHostV6)
	p := RecordBornTSPos + 8
	if len(rec) < p+bl+8+sl {
		return born, store
	}
	born = readHost(rec[p:p+bl], bl == 20)
	p += bl + 8
	store = readHost(rec[p:p+sl], sl == 20)
	return born, store
}

func readHost(b []byte, v6 bool) netip.AddrPort {
	if v6 {
		a := netip.AddrFrom16([16]byte(b[:16]))
		return netip.AddrPortFrom(a, uint16(binary.BigEndian.Uint32(b[16:])))
	}
	a := netip.AddrFrom4([4]byte(b[:4]))
	return netip.AddrPortFrom(a, uint16(binary.BigEndian.Uint32(b[4:])))
}

// DecodeMessages decodes back-to-back stored records, the body of a pull,
// query or check-back response. It stops with an error at the first bad
// record and returns the ones decoded before it.
func DecodeMessages(buf []byte) ([]*MessageExt, error) {
	var out []*MessageExt
	for len(buf) > 0 {
		m, n, err := DecodeStored(buf, false)
		if err != nil {
			return out, err
		}
		out = append(out, m)
		buf = buf[n:]
	}
	return out, nil
}

// RecordView is a zero-copy view of one stored record: the fields the
// store needs to recover, dispatch and index a record without decoding
// its body or properties into new memory. Topic and Properties alias the
// buffer passed to ViewRecord and are valid only as long as it is.
type RecordView struct {
	Size                      int32
	BodyCRC                   int32
	QueueID                   int32
	Flag                      int32
	QueueOffset               int64
	PhysicalOffset            int64
	SysFlag                   int32
	BornTimestamp             int64
	StoreTimestamp            int64
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
	BodyOffset                int // position of the body in the record
	BodyLength                int
	Topic                     []byte
	Properties                []byte
}

// PropertyBytes finds one property in an encoded property string held as
// bytes (a RecordView's Properties) without allocating.
func PropertyBytes(props []byte, key string) ([]byte, bool) {
	for len(props) > 0 {
		piece := props
		if i := bytes.IndexByte(props, PropertySeparator); i >= 0 {
			piece, props = props[:i], props[i+1:]
		} else {
			props = nil
		}
		if len(piece) > len(key) && piece[len(key)] == NameValueSeparator && string(piece[:len(key)]) == key {
			return piece[len(key)+1:], true
		}
	}
	return nil, false
}

// Property returns one property of the record without allocating a map.
func (v *RecordView) Property(key string) (string, bool) {
	return PropertyValue(string(v.Properties), key)
}

// ViewRecord parses the record at the start of buf in place. It checks the
// magic code and that every length is consistent with the record size;
// with checkCRC it also verifies the body CRC. A blank filler is reported
// as ErrBlank with its size in the returned view.
func ViewRecord(buf []byte, checkCRC bool) (RecordView, error) {
	be := binary.BigEndian
	var v RecordView
	size, magic, err := PeekRecord(buf)
	if err != nil {
		return v, err
	}
	v.Size = size
	if magic == BlankMagic {
		return v, ErrBlank
	}
	if magic != MessageMagic {
		return v, fmt.Errorf("%w: magic code %#x", ErrMalformed, uint32(magic))
	}
	if size < RecordMinSize {
		return v, fmt.Errorf("%w: record size %d below minimum", ErrMalformed, size)
	}
	if int(size) > len(buf) {
		return v, fmt.Errorf("%w: record of %d bytes, %d available", ErrTruncated, size, len(buf))
	}
	r := buf[:size]
	v.BodyCRC = int32(be.Uint32(r[8:]))
	v.QueueID = int32(be.Uint32(r[12:]))
	v.Flag = int32(be.Uint32(r[16:]))
	v.QueueOffset = int64(be.Uint64(r[20:]))
	v.PhysicalOffset = int64(be.Uint64(r[28:]))
	v.SysFlag = int32(be.Uint32(r[36:]))
	v.BornTimestamp = int64(be.Uint64(r[40:]))
	p := 48 + hostLen(v.SysFlag, SysFlagBornHostV6)
	sl := hostLen(v.SysFlag, SysFlagStoreHostV6)
	if p+8+sl+4+8+4 > len(r) {
		return v, fmt.Errorf("%w: record header exceeds its size", ErrMalformed)
	}
	v.StoreTimestamp = int64(be.Uint64(r[p:]))
	p += 8 + sl
	v.ReconsumeTimes = int32(be.Uint32(r[p:]))
	p += 4
	v.PreparedTransactionOffset = int64(be.Uint64(r[p:]))
	p += 8
	n := be.Uint32(r[p:])
	p += 4
	if uint64(n) > uint64(len(r)-p) {
		return v, fmt.Errorf("%w: body length %d exceeds record", ErrMalformed, n)
	}
	v.BodyOffset, v.BodyLength = p, int(n)
	if checkCRC && BodyCRC(r[p:p+int(n)]) != v.BodyCRC {
		return v, fmt.Errorf("%w: at physical offset %d", ErrBadCRC, v.PhysicalOffset)
	}
	p += int(n)
	if p >= len(r) {
		return v, fmt.Errorf("%w: topic length missing", ErrMalformed)
	}
	tl := int(r[p])
	p++
	if tl > len(r)-p || len(r)-p-tl < 2 {
		return v, fmt.Errorf("%w: topic length %d exceeds record", ErrMalformed, tl)
	}
	v.Topic = r[p : p+tl]
	p += tl
	pl := int(be.Uint16(r[p:]))
	p += 2
	if pl != len(r)-p {
		return v, fmt.Errorf("%w: properties length %d does not end the record (%d left)", ErrMalformed, pl, len(r)-p)
	}
	v.Properties = r[p:]
	return v, nil
}

// AppendBlank appends the 8-byte filler that closes a commit log segment
// whose remaining space (size bytes, at least 8) cannot hold the next record.
func AppendBlank(dst []byte, size int32) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	return binary.BigEndian.AppendUint32(dst, blankMagicU32)
}

// PropertiesLen returns len(EncodeProperties(props)) without building the
// string: for the size check a broker makes on every send.
func PropertiesLen(props map[string]string) int {
	n := 0
	for k, v := range props {
		if k != "" && v != "" {
			n += len(k) + len(v) + 2
		}
	}
	return n
}
