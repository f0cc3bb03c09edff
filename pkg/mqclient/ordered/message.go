package ordered

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Message properties written by Stamp. They are user properties, so they
// survive the retry topic, the DLQ and Admin.Resend.
const (
	// PropKey repeats the business key (the ShardingKey).
	PropKey = "tideOrderKey"
	// PropVersion is the key's version as a decimal integer >= 1.
	PropVersion = "tideOrderVersion"
)

// Sentinel errors of the package; returned errors wrap them.
var (
	// ErrNoVersion: a delivered message carries no valid key or version
	// (it was not stamped). It is retried and then dead-lettered.
	ErrNoVersion = errors.New("ordered: message has no key or version")
	// ErrGap: strict policy, the message's version is ahead of the next
	// expected one; it is retried and then dead-lettered.
	ErrGap = errors.New("ordered: version gap")
	// ErrInvalid: a bad argument (empty key, version < 1, nil db).
	ErrInvalid = errors.New("ordered: invalid argument")
)

// Stamp makes m an ordered event of key at version: it sets the
// ShardingKey (the default queue selector hashes it, so a key keeps its
// queue), adds key to Keys (queryable) and writes PropKey and PropVersion.
// version is the event's sequence in the producer's database, starting at
// 1 for the key's first event. It returns m.
func Stamp(m *mqclient.Message, key string, version int64) *mqclient.Message {
	m.ShardingKey = key
	found := false
	for _, k := range m.Keys {
		if k == key {
			found = true
		}
	}
	if !found {
		m.Keys = append(m.Keys, key)
	}
	if m.Properties == nil {
		m.Properties = map[string]string{}
	}
	m.Properties[PropKey] = key
	m.Properties[PropVersion] = strconv.FormatInt(version, 10)
	return m
}

// NewMessage returns a stamped message for topic.
func NewMessage(topic, key string, version int64, body []byte) *mqclient.Message {
	return Stamp(&mqclient.Message{Topic: topic, Body: body}, key, version)
}

// VersionOf reads the key and version Stamp wrote. The error wraps
// ErrNoVersion.
func VersionOf(m *mqclient.MessageExt) (key string, version int64, err error) {
	key = m.Properties[PropKey]
	if key == "" {
		key = m.ShardingKey
	}
	v, perr := strconv.ParseInt(m.Properties[PropVersion], 10, 64)
	if key == "" || perr != nil || v < 1 {
		return "", 0, fmt.Errorf("%w: msgId %s key %q version %q", ErrNoVersion, m.MsgID, key, m.Properties[PropVersion])
	}
	return key, v, nil
}

// NewConsumer returns an ordered push consumer (mqclient.WithOrdered added
// to opts): one message per key at a time, retried in place, then
// dead-lettered. Subscribe Guard.Handler on it.
func NewConsumer(group string, opts ...mqclient.Option) (*mqclient.PushConsumer, error) {
	return mqclient.NewPushConsumer(group, append(append([]mqclient.Option{}, opts...), mqclient.WithOrdered())...)
}
