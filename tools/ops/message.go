package ops

import (
	"encoding/base64"
	"unicode/utf8"

	"github.com/tidemq/tide/pkg/mqclient"
)

// MessageFields are the fields of a stored message both tools show the
// same way; each tool's view embeds them and adds its own (tag, times,
// broker name) in its own JSON shape.
type MessageFields struct {
	MsgID           string            `json:"msgId"`
	OffsetMsgID     string            `json:"offsetMsgId"`
	Topic           string            `json:"topic"`
	Keys            []string          `json:"keys,omitempty"`
	QueueID         int32             `json:"queueId"`
	QueueOffset     int64             `json:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset"`
	ReconsumeTimes  int32             `json:"reconsumeTimes"`
	BornHost        string            `json:"bornHost"`
	StoreHost       string            `json:"storeHost"`
	Properties      map[string]string `json:"properties,omitempty"`
	// Body is the body when it is valid UTF-8, else BodyBase64 holds it;
	// either is cut at the maxBody given to FieldsOf. BodySize is the
	// whole body's size.
	Body       string `json:"body,omitempty"`
	BodyBase64 string `json:"bodyBase64,omitempty"`
	BodySize   int    `json:"bodySize"`
}

// FieldsOf returns m's fields, its body cut at maxBody bytes (0: whole).
func FieldsOf(m *mqclient.MessageExt, maxBody int) MessageFields {
	f := MessageFields{MsgID: m.MsgID, OffsetMsgID: m.OffsetMsgID, Topic: m.Topic, Keys: m.Keys, QueueID: m.Queue.QueueID,
		QueueOffset: m.QueueOffset, CommitLogOffset: m.CommitLogOffset, ReconsumeTimes: m.ReconsumeTimes, BornHost: m.BornHost,
		StoreHost: m.StoreHost, Properties: m.Properties, BodySize: len(m.Body)}
	body := m.Body
	if maxBody > 0 && len(body) > maxBody {
		body = body[:maxBody]
	}
	if utf8.Valid(body) {
		f.Body = string(body)
	} else {
		f.BodyBase64 = base64.StdEncoding.EncodeToString(body)
	}
	return f
}
