package protocol

import "strconv"

// A send request's header is decoded on every message. Building its ext
// fields into a map and then reading the send header out of the map cost
// the broker more than the rest of the frame's decoding (a map of 13-14
// entries: about 1.2 KB and 3 allocations per request), so DecodeFrame
// fills the typed header straight from the JSON or ROCKETMQ ext fields of
// the send codes (10, 310, 320, 324, 325) and puts it in Command.Header;
// ExtFields then holds only the other fields (an ACL client's AccessKey
// and Signature, for example), or is nil when there are none.
//
// The typed form is used only when it is exact: when the header's Encode
// gives back precisely the fields received (each number in its canonical
// decimal form, as Java and Go write them; booleans "true" or "false";
// every field present that Encode writes and no other send field) and
// Decode would accept them. Command.Fields then returns exactly the map
// the frame carried, and DecodeSendRequest exactly what DecodeSendHeader
// gives for that map. Anything else (a field missing or empty, "+1",
// "007", "True", a duplicate key) is decoded into ExtFields as before,
// and the handler's decode reports what it always did.

// typedSendHeaders switches the typed decoding of send headers on (tests
// compare it with the map by switching it off).
var typedSendHeaders = true

// sendField indexes the fields of SendMessageRequestHeader in the order of
// its short names a..n.
const (
	sfProducerGroup = iota
	sfTopic
	sfDefaultTopic
	sfDefaultTopicQueueNums
	sfQueueID
	sfSysFlag
	sfBornTimestamp
	sfFlag
	sfProperties
	sfReconsumeTimes
	sfUnitMode
	sfMaxReconsumeTimes
	sfBatch
	sfBrokerName
	sendFieldCount
)

// sendAlwaysWritten are the fields Encode writes whatever their value:
// all but maxReconsumeTimes (only when >= 0) and bname (only when set).
const sendAlwaysWritten = (1<<sendFieldCount - 1) &^ (1<<sfMaxReconsumeTimes | 1<<sfBrokerName)

// isSendCode reports whether code is one of the send requests whose header
// DecodeFrame may type.
func isSendCode(code int16) bool {
	switch code {
	case SendMessage, SendMessageV2, SendBatchMessage, SendReplyMessage, SendReplyMessageV2:
		return true
	}
	return false
}

// shortSendCode reports whether code's header uses the short names a..n
// (DecodeSendHeader's choice).
func shortSendCode(code int16) bool {
	return code == SendMessageV2 || code == SendBatchMessage || code == SendReplyMessageV2
}

// sendDecoder fills a send header from its ext fields, one at a time.
type sendDecoder struct {
	h     SendMessageRequestHeader
	short bool
	seen  uint16            // bit i: field i was set
	other map[string]string // the fields that are not the header's
}

// longSendField is the index of a long-name send field, or -1.
func longSendField(k string) int {
	switch k {
	case "producerGroup":
		return sfProducerGroup
	case "topic":
		return sfTopic
	case "defaultTopic":
		return sfDefaultTopic
	case "defaultTopicQueueNums":
		return sfDefaultTopicQueueNums
	case "queueId":
		return sfQueueID
	case "sysFlag":
		return sfSysFlag
	case "bornTimestamp":
		return sfBornTimestamp
	case "flag":
		return sfFlag
	case "properties":
		return sfProperties
	case "reconsumeTimes":
		return sfReconsumeTimes
	case "unitMode":
		return sfUnitMode
	case "maxReconsumeTimes":
		return sfMaxReconsumeTimes
	case "batch":
		return sfBatch
	case "bname":
		return sfBrokerName
	}
	return -1
}

// field is the index of ext key k in the header's naming, or -1 for a
// field that is not the header's.
func (d *sendDecoder) field(k string) int {
	if !d.short {
		return longSendField(k)
	}
	if len(k) == 1 && k[0] >= 'a' && k[0] < 'a'+sendFieldCount {
		return int(k[0] - 'a')
	}
	return -1
}

// set takes one ext field. It reports false when the field cannot be held
// exactly by the typed header (the caller then decodes into a map).
func (d *sendDecoder) set(k, v string) bool {
	f := d.field(k)
	if f < 0 {
		if d.other == nil {
			d.other = make(map[string]string, 4)
		}
		d.other[k] = v
		return true
	}
	if d.seen&(1<<f) != 0 {
		return false // a duplicate: the map keeps the last, leave it to the map
	}
	d.seen |= 1 << f
	h := &d.h
	ok := true
	switch f {
	case sfProducerGroup:
		h.ProducerGroup = v
	case sfTopic:
		h.Topic = v
	case sfDefaultTopic:
		h.DefaultTopic = v
	case sfDefaultTopicQueueNums:
		h.DefaultTopicQueueNums, ok = canonicalInt32(v)
	case sfQueueID:
		h.QueueID, ok = canonicalInt32(v)
	case sfSysFlag:
		h.SysFlag, ok = canonicalInt32(v)
	case sfBornTimestamp:
		h.BornTimestamp, ok = canonicalInt(v, 64)
	case sfFlag:
		h.Flag, ok = canonicalInt32(v)
	case sfProperties:
		h.Properties = v
	case sfReconsumeTimes:
		h.ReconsumeTimes, ok = canonicalInt32(v)
	case sfUnitMode:
		h.UnitMode, ok = canonicalBool(v)
	case sfMaxReconsumeTimes:
		h.MaxReconsumeTimes, ok = canonicalInt32(v)
		ok = ok && h.MaxReconsumeTimes >= 0 // Encode omits negative values
	case sfBatch:
		h.Batch, ok = canonicalBool(v)
	case sfBrokerName:
		h.BrokerName = v
		ok = v != "" // Encode omits it when empty
	}
	return ok
}

// header returns the typed header (in the request code's naming) when
// the fields set are exactly those its Encode writes and Decode accepts
// them.
func (d *sendDecoder) header() (ExtAppender, bool) {
	h := &d.h
	if d.seen&sendAlwaysWritten != sendAlwaysWritten || h.ProducerGroup == "" || h.Topic == "" || h.DefaultTopic == "" {
		return nil, false // Decode: ErrMissingField
	}
	if d.seen&(1<<sfMaxReconsumeTimes) == 0 {
		h.MaxReconsumeTimes = -1 // absent: Java null
	}
	if d.short {
		return (*SendMessageRequestHeaderV2)(h), true
	}
	return h, true
}

// canonicalInt parses v as a decimal integer of bits bits written the way
// strconv.FormatInt (and Java's toString) writes it: no sign but a minus,
// no leading zero, no "-0".
func canonicalInt(v string, bits int) (int64, bool) {
	d := v
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || d[0] < '0' || d[0] > '9' || d[0] == '0' && len(v) > 1 {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, bits)
	return n, err == nil
}

func canonicalInt32(v string) (int32, bool) {
	n, ok := canonicalInt(v, 32)
	return int32(n), ok
}

func canonicalBool(v string) (bool, bool) {
	switch v {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// DecodeSendRequest decodes the send header of a send request (codes 10,
// 310, 320, 324, 325) exactly as DecodeSendHeader(req.Code, req.Fields())
// does, without a map when DecodeFrame typed it (Command.Header). The
// returned header may be req's own: a change to it changes req.
func DecodeSendRequest(req *Command) (*SendMessageRequestHeader, error) {
	var h *SendMessageRequestHeader
	switch t := req.Header.(type) {
	case *SendMessageRequestHeader:
		if !shortSendCode(req.Code) {
			h = t
		}
	case *SendMessageRequestHeaderV2:
		if shortSendCode(req.Code) {
			h = (*SendMessageRequestHeader)(t)
		}
	}
	// A header DecodeFrame typed is valid; one a caller built need not be.
	if h != nil && h.ProducerGroup != "" && h.Topic != "" && h.DefaultTopic != "" && h.MaxReconsumeTimes >= -1 {
		return h, nil
	}
	return DecodeSendHeader(req.Code, req.Fields())
}
