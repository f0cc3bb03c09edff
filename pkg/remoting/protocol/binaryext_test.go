package protocol

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"testing"
)

// hotSendHeader is a send header as pkg/mqclient fills it.
func hotSendHeader() *SendMessageRequestHeader {
	return &SendMessageRequestHeader{ProducerGroup: "producer-group", Topic: "orders", DefaultTopic: DefaultTopicTemplate,
		DefaultTopicQueueNums: DefaultTopicQueueNums, QueueID: 3, BornTimestamp: 1690000000000,
		Properties:        "KEYS\x01k-1\x02UNIQ_KEY\x017F0000010001000000000000000000000001\x02WAIT\x01true\x02TAGS\x01a\x02",
		MaxReconsumeTimes: -1}
}

// extAppenderCases are typed hot headers with their edge values: optional
// fields absent and present, negative and extreme numbers, empty strings.
func extAppenderCases() []struct {
	name string
	h    ExtAppender
	zero func() Header
} {
	full := hotSendHeader()
	full.SysFlag, full.Flag, full.ReconsumeTimes, full.UnitMode, full.MaxReconsumeTimes = 8, -1, 3, true, 16
	full.Batch, full.BrokerName, full.BornTimestamp = true, "broker-a", math.MinInt64
	newSend := func() Header { return new(SendMessageRequestHeaderV2) }
	newSendV1 := func() Header { return new(SendMessageRequestHeader) }
	newPull := func() Header { return new(PullMessageRequestHeader) }
	newSendResp := func() Header { return new(SendMessageResponseHeader) }
	newPullResp := func() Header { return new(PullMessageResponseHeader) }
	return []struct {
		name string
		h    ExtAppender
		zero func() Header
	}{
		{"send v2", hotSendHeader().V2(), newSend},
		{"send v2 every field", full.V2(), newSend},
		{"send v2 zeros", &SendMessageRequestHeaderV2{ProducerGroup: "p", Topic: "t", DefaultTopic: "d", MaxReconsumeTimes: -1}, newSend},
		{"send", hotSendHeader(), newSendV1},
		{"send every field", full, newSendV1},
		{"send zeros", &SendMessageRequestHeader{ProducerGroup: "p", Topic: "t", DefaultTopic: "d", MaxReconsumeTimes: -1}, newSendV1},
		{"pull", &PullMessageRequestHeader{ConsumerGroup: "consumer-group", Topic: "orders", QueueID: 1, QueueOffset: 5000,
			MaxMsgNums: 32, SysFlag: PullSuspend | PullSubscription | PullCommitOffset, CommitOffset: 4999,
			SuspendTimeoutMillis: 20000, Subscription: "a || b", SubVersion: 1690000000000, ExpressionType: ExpressionTypeTag}, newPull},
		{"pull extremes", &PullMessageRequestHeader{ConsumerGroup: "g", Topic: "t", QueueID: math.MaxInt32, QueueOffset: math.MaxInt64,
			MaxMsgNums: math.MinInt32, CommitOffset: -1, SuspendTimeoutMillis: 0, SubVersion: math.MinInt64}, newPull},
		{"send response", &SendMessageResponseHeader{MsgID: "7F00000100002A9F0000000000000064", QueueID: 3, QueueOffset: 100},
			newSendResp},
		{"send response every field", &SendMessageResponseHeader{MsgID: "a,b", QueueID: -1, QueueOffset: math.MaxInt64,
			TransactionID: "tx", MsgRegion: "DefaultRegion", TraceOn: true}, newSendResp},
		{"pull response", &PullMessageResponseHeader{SuggestWhichBrokerID: 1, NextBeginOffset: 5032, MaxOffset: 9000}, newPullResp},
		{"pull response negative", &PullMessageResponseHeader{SuggestWhichBrokerID: -1, NextBeginOffset: -2, MinOffset: math.MinInt64},
			newPullResp},
	}
}

// TestExtAppenderMatchesEncode holds every AppendBinaryExt to the map its
// Encode returns: the frame written from the typed header is byte for
// byte the frame written from the map (both sorted by key), in both
// serialize types, and decodes back to an equal header.
func TestExtAppenderMatchesEncode(t *testing.T) {
	for _, tt := range extAppenderCases() {
		for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
			t.Run(fmt.Sprintf("%s/type%d", tt.name, st), func(t *testing.T) {
				typed := &Command{Code: 1, Language: LangGo, Version: Version, Opaque: 9, Header: tt.h, SerializeType: st}
				mapped := &Command{Code: 1, Language: LangGo, Version: Version, Opaque: 9, ExtFields: tt.h.Encode(), SerializeType: st}
				got, err := typed.Encode()
				if err != nil {
					t.Fatal(err)
				}
				want, err := mapped.Encode()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("typed:\n%s\nmap:\n%s", hex.Dump(got), hex.Dump(want))
				}
				back, err := DecodeFrame(got[4:])
				if err != nil {
					t.Fatal(err)
				}
				h := tt.zero()
				if err := h.Decode(back.ExtFields); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(h, Header(tt.h)) {
					t.Fatalf("decoded %+v, want %+v", h, tt.h)
				}
			})
		}
	}
}

// TestDecodeBinaryHeaderCopiesOut: the decoded ext values stay
// valid after the frame buffer is reused (they are copied out, once).
func TestDecodeBinaryHeaderCopiesOut(t *testing.T) {
	frame, err := (&Command{Code: PullMessage, Header: &PullMessageResponseHeader{NextBeginOffset: 77},
		ExtFields: map[string]string{"k": "v"}, SerializeType: SerializeRocketMQ}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeFrame(frame[4:])
	if err != nil {
		t.Fatal(err)
	}
	clear(frame)
	if c.ExtFields["nextBeginOffset"] != "77" || c.ExtFields["k"] != "v" || len(c.ExtFields) != 5 {
		t.Fatalf("ext after the buffer was cleared: %q", c.ExtFields)
	}
}

// TestJSONTypedMergesExtFields: a typed header with ExtFields beside it
// (keys before, between and after its own, and one clash, where ExtFields
// wins) gives in JSON exactly the bytes of the merged map (Fields).
func TestJSONTypedMergesExtFields(t *testing.T) {
	ext := map[string]string{"AccessKey": "ak", "nextKey": "é\x01\"", "queueId": "clash", "zz": "", "\xff": "bad utf-8"}
	for _, tt := range extAppenderCases() {
		typed := &Command{Code: 1, Opaque: 9, Header: tt.h, ExtFields: ext, Remark: "r"}
		mapped := &Command{Code: 1, Opaque: 9, ExtFields: typed.Fields(), Remark: "r"}
		if got, want := mustEncode(t, typed), mustEncode(t, mapped); !bytes.Equal(got, want) {
			t.Errorf("%s:\ntyped %s\nmap   %s", tt.name, got, want)
		}
	}
}

func mustEncode(t *testing.T, c *Command) []byte {
	t.Helper()
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
