package protocol

import "testing"

// benchHeaders are the headers on the hot paths: every send (the broker
// decodes SEND_MESSAGE_V2 or the long-name form, the client encodes it),
// its response, and every pull.
func benchHeaders() []struct {
	name string
	h    Header
	zero func() Header
} {
	send := &SendMessageRequestHeader{ProducerGroup: "producer-group", Topic: "orders", DefaultTopic: DefaultTopicTemplate,
		DefaultTopicQueueNums: DefaultTopicQueueNums, QueueID: 3, BornTimestamp: 1690000000000,
		Properties:        "KEYS\x01k-1\x02UNIQ_KEY\x017F0000010001000000000000000000000001\x02WAIT\x01true\x02TAGS\x01a\x02",
		MaxReconsumeTimes: -1}
	return []struct {
		name string
		h    Header
		zero func() Header
	}{
		{"SendV2", send.V2(), func() Header { return new(SendMessageRequestHeaderV2) }},
		{"Send", send, func() Header { return new(SendMessageRequestHeader) }},
		{"SendResponse", &SendMessageResponseHeader{MsgID: "7F00000100002A9F0000000000000064", QueueID: 3, QueueOffset: 100,
			MsgRegion: "DefaultRegion"}, func() Header { return new(SendMessageResponseHeader) }},
		{"Pull", &PullMessageRequestHeader{ConsumerGroup: "consumer-group", Topic: "orders", QueueID: 1, QueueOffset: 5000,
			MaxMsgNums: 32, SysFlag: PullSuspend | PullSubscription, SuspendTimeoutMillis: 20000, Subscription: "*",
			SubVersion: 1690000000000, ExpressionType: ExpressionTypeTag}, func() Header { return new(PullMessageRequestHeader) }},
		{"PullResponse", &PullMessageResponseHeader{NextBeginOffset: 5032, MinOffset: 0, MaxOffset: 9000},
			func() Header { return new(PullMessageResponseHeader) }},
	}
}

func BenchmarkHeaderEncode(b *testing.B) {
	for _, bh := range benchHeaders() {
		b.Run(bh.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = bh.h.Encode()
			}
		})
	}
}

func BenchmarkHeaderDecode(b *testing.B) {
	for _, bh := range benchHeaders() {
		b.Run(bh.name, func(b *testing.B) {
			ext := bh.h.Encode()
			h := bh.zero()
			b.ReportAllocs()
			for b.Loop() {
				if err := h.Decode(ext); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
