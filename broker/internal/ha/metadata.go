package ha

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// ErrBadMetadata: a Metadata body does not decode.
var ErrBadMetadata = errors.New("ha: malformed metadata")

// Metadata is what a slave copies from its master besides the commit log
// (RocketMQ's SlaveSynchronize: topic configs, consumer offsets, delay
// offsets, subscription groups), so that it can serve consumers. A slave
// fetches it every DefaultMetadataSyncInterval; the transport (a Tide
// request code served by the master) belongs to the broker.
//
// Body layout: one JSON object,
//
//	{"topics":       <TopicConfigSerializeWrapper>,
//	 "offsets":      {"<topic>@<group>": {"<queueId>": offset, ...}, ...},
//	 "delayOffsets": {"<delayLevel>": offset, ...},
//	 "groups":       <SubscriptionGroupWrapper>}
type Metadata struct {
	Topics       protocol.TopicConfigSerializeWrapper `json:"topics"`
	Offsets      map[string]map[string]int64          `json:"offsets"`
	DelayOffsets map[string]int64                     `json:"delayOffsets"`
	Groups       protocol.SubscriptionGroupWrapper    `json:"groups"`
}

// Encode returns the JSON body. Nil maps encode as empty objects.
func (m *Metadata) Encode() []byte {
	c := *m
	if c.Topics.TopicConfigTable == nil {
		c.Topics.TopicConfigTable = map[string]protocol.TopicConfig{}
	}
	if c.Offsets == nil {
		c.Offsets = map[string]map[string]int64{}
	}
	if c.DelayOffsets == nil {
		c.DelayOffsets = map[string]int64{}
	}
	if c.Groups.SubscriptionGroupTable == nil {
		c.Groups.SubscriptionGroupTable = map[string]protocol.SubscriptionGroupConfig{}
	}
	b, _ := json.Marshal(c) // cannot fail: maps and structs of plain values
	return b
}

// DecodeMetadata parses a body made by Encode. Every map of the result is
// non-nil, so the caller can replace its tables with them directly.
func DecodeMetadata(b []byte) (*Metadata, error) {
	var m Metadata
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadMetadata, err)
	}
	if m.Topics.TopicConfigTable == nil {
		m.Topics.TopicConfigTable = map[string]protocol.TopicConfig{}
	}
	if m.Offsets == nil {
		m.Offsets = map[string]map[string]int64{}
	}
	for k, q := range m.Offsets {
		if q == nil {
			m.Offsets[k] = map[string]int64{}
		}
	}
	if m.DelayOffsets == nil {
		m.DelayOffsets = map[string]int64{}
	}
	if m.Groups.SubscriptionGroupTable == nil {
		m.Groups.SubscriptionGroupTable = map[string]protocol.SubscriptionGroupConfig{}
	}
	return &m, nil
}
