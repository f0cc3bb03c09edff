package protocol

import (
	"encoding/binary"
	"strconv"
)

// ExtAppender is a typed header that writes its ext fields straight into a
// ROCKETMQ binary header (the entries of binaryheader.go's layout), with
// no map and no string per field. The hot headers implement it: the
// client's SEND_MESSAGE_V2 and PULL_MESSAGE requests and the broker's
// responses to them.
//
// AppendBinaryExt must write exactly the entries Encode returns, sorted by
// key (TestExtAppenderMatchesEncode holds them to it).
type ExtAppender interface {
	Header
	AppendBinaryExt(dst []byte) []byte
}

// extMap returns all of c's ext fields in one map (Fields): ExtFields
// itself without a Header, else Header's Encode plus ExtFields. Encoding
// does not use it (appendJSONExtTyped, appendBinaryHeader).
func (c *Command) extMap() map[string]string {
	if c.Header == nil {
		return c.ExtFields
	}
	m := c.Header.Encode()
	for k, v := range c.ExtFields {
		m[k] = v
	}
	return m
}

// Fields returns all of c's ext fields as a map: ExtFields, plus the
// fields of Header when set (then a new map each call; ExtFields wins on
// a clash). Code that reads or amends a request's fields before it is
// sent (request signing) uses it.
func (c *Command) Fields() map[string]string { return c.extMap() }

// appendExtString appends one ext entry: keyLen (i16), key, valLen (i32),
// value.
func appendExtString(dst []byte, k, v string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
	dst = append(dst, k...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...)
}

// appendExtInt appends an ext entry whose value is v in decimal, written
// in place (the length is patched after the digits).
func appendExtInt(dst []byte, k string, v int64) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
	dst = append(dst, k...)
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = strconv.AppendInt(dst, v, 10)
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst
}

func appendExtBool(dst []byte, k string, v bool) []byte {
	if v {
		return appendExtString(dst, k, "true")
	}
	return appendExtString(dst, k, "false")
}

// AppendBinaryExt implements ExtAppender: the entries of Encode, keys a..n.
func (h *SendMessageRequestHeaderV2) AppendBinaryExt(dst []byte) []byte {
	return appendSendExt(dst, (*SendMessageRequestHeader)(h), &shortSendKeys, &shortSendOrder)
}

// AppendBinaryExt implements ExtAppender: the entries of Encode, sorted by
// key. DecodeFrame types the long-name send header of SEND_MESSAGE (the
// official Go client's single sends), so a decoded one can be re-encoded.
func (h *SendMessageRequestHeader) AppendBinaryExt(dst []byte) []byte {
	return appendSendExt(dst, h, &longSendKeys, &longSendOrder)
}

// The send header's ext keys by field (sendheader.go's sf* indexes), and
// its fields in the order of their keys.
var (
	shortSendKeys = [sendFieldCount]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"}
	longSendKeys  = [sendFieldCount]string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId",
		"sysFlag", "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch", "bname"}
	shortSendOrder = [sendFieldCount]int8{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
	longSendOrder  = [sendFieldCount]int8{sfBatch, sfBrokerName, sfBornTimestamp, sfDefaultTopic, sfDefaultTopicQueueNums, sfFlag,
		sfMaxReconsumeTimes, sfProducerGroup, sfProperties, sfQueueID, sfReconsumeTimes, sfSysFlag, sfTopic, sfUnitMode}
)

// appendSendExt appends the entries of h's Encode, named by keys, in the
// order of order.
func appendSendExt(dst []byte, h *SendMessageRequestHeader, keys *[sendFieldCount]string, order *[sendFieldCount]int8) []byte {
	for _, f := range order {
		k := keys[f]
		switch f {
		case sfProducerGroup:
			dst = appendExtString(dst, k, h.ProducerGroup)
		case sfTopic:
			dst = appendExtString(dst, k, h.Topic)
		case sfDefaultTopic:
			dst = appendExtString(dst, k, h.DefaultTopic)
		case sfDefaultTopicQueueNums:
			dst = appendExtInt(dst, k, int64(h.DefaultTopicQueueNums))
		case sfQueueID:
			dst = appendExtInt(dst, k, int64(h.QueueID))
		case sfSysFlag:
			dst = appendExtInt(dst, k, int64(h.SysFlag))
		case sfBornTimestamp:
			dst = appendExtInt(dst, k, h.BornTimestamp)
		case sfFlag:
			dst = appendExtInt(dst, k, int64(h.Flag))
		case sfProperties:
			dst = appendExtString(dst, k, h.Properties)
		case sfReconsumeTimes:
			dst = appendExtInt(dst, k, int64(h.ReconsumeTimes))
		case sfUnitMode:
			dst = appendExtBool(dst, k, h.UnitMode)
		case sfMaxReconsumeTimes:
			if h.MaxReconsumeTimes >= 0 {
				dst = appendExtInt(dst, k, int64(h.MaxReconsumeTimes))
			}
		case sfBatch:
			dst = appendExtBool(dst, k, h.Batch)
		case sfBrokerName:
			if h.BrokerName != "" {
				dst = appendExtString(dst, k, h.BrokerName)
			}
		}
	}
	return dst
}

// AppendBinaryExt implements ExtAppender.
func (h *PullMessageRequestHeader) AppendBinaryExt(dst []byte) []byte {
	dst = appendExtInt(dst, "commitOffset", h.CommitOffset)
	dst = appendExtString(dst, "consumerGroup", h.ConsumerGroup)
	dst = appendExtString(dst, "expressionType", h.ExpressionType)
	dst = appendExtInt(dst, "maxMsgNums", int64(h.MaxMsgNums))
	dst = appendExtInt(dst, "queueId", int64(h.QueueID))
	dst = appendExtInt(dst, "queueOffset", h.QueueOffset)
	dst = appendExtInt(dst, "subVersion", h.SubVersion)
	dst = appendExtString(dst, "subscription", h.Subscription)
	dst = appendExtInt(dst, "suspendTimeoutMillis", h.SuspendTimeoutMillis)
	dst = appendExtInt(dst, "sysFlag", int64(h.SysFlag))
	dst = appendExtString(dst, "topic", h.Topic)
	return dst
}

// AppendBinaryExt implements ExtAppender.
func (h *SendMessageResponseHeader) AppendBinaryExt(dst []byte) []byte {
	if h.MsgRegion != "" {
		dst = appendExtString(dst, ExtMsgRegion, h.MsgRegion)
	}
	dst = appendExtBool(dst, ExtTraceOn, h.TraceOn)
	dst = appendExtString(dst, "msgId", h.MsgID)
	dst = appendExtInt(dst, "queueId", int64(h.QueueID))
	dst = appendExtInt(dst, "queueOffset", h.QueueOffset)
	if h.TransactionID != "" {
		dst = appendExtString(dst, "transactionId", h.TransactionID)
	}
	return dst
}

// AppendBinaryExt implements ExtAppender.
func (h *PullMessageResponseHeader) AppendBinaryExt(dst []byte) []byte {
	dst = appendExtInt(dst, "maxOffset", h.MaxOffset)
	dst = appendExtInt(dst, "minOffset", h.MinOffset)
	dst = appendExtInt(dst, "nextBeginOffset", h.NextBeginOffset)
	dst = appendExtInt(dst, "suggestWhichBrokerId", h.SuggestWhichBrokerID)
	return dst
}
