package broker_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// sendRequest builds a well-formed SEND_MESSAGE (10) as v2.1.2 does.
func sendRequest(topic string, queue int32, body []byte) (*protocol.Command, *protocol.SendMessageRequestHeader) {
	h := &protocol.SendMessageRequestHeader{
		ProducerGroup: "raw_pg", Topic: topic, DefaultTopic: protocol.DefaultTopicTemplate,
		DefaultTopicQueueNums: protocol.DefaultTopicQueueNums, QueueID: queue, BornTimestamp: time.Now().UnixMilli(),
		Properties:        protocol.EncodeProperties(map[string]string{protocol.PropUniqKey: "0A0000010000000000000000000000FF"}),
		MaxReconsumeTimes: -1,
	}
	return protocol.NewRequest(protocol.SendMessage, h.Encode(), body), h
}

// TestBadInput sends one bad request after another on a single
// connection: each gets the documented response code and a remark, stores
// nothing, and leaves the connection usable for a valid request.
func TestBadInput(t *testing.T) {
	t.Parallel()
	const maxSize = 64 << 10
	e := newEnv(t, func(o *broker.Options) {
		o.AutoCreateTopicEnable = false
		o.Store.MaxMessageSize = maxSize
	})
	const topic = "BadInputTopic"
	ch := protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "defaultTopic", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	if resp := e.invoke(protocol.NewRequest(protocol.UpdateAndCreateTopic, ch.Encode(), nil)); resp.Code != protocol.Success {
		t.Fatalf("create topic: code %d %s", resp.Code, resp.Remark)
	}

	ctx := context.Background()
	conn, err := e.raw.Conn(ctx, e.addr)
	if err != nil {
		t.Fatal(err)
	}
	call := func(req *protocol.Command) *protocol.Command {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := conn.Invoke(cctx, req)
		if err != nil {
			t.Fatalf("code %d: %v", req.Code, err)
		}
		return resp
	}
	stored := func() int64 {
		var n int64
		for q := int32(0); q < 4; q++ {
			h := protocol.QueueRequestHeader{Topic: topic, QueueID: q}
			resp := call(protocol.NewRequest(protocol.GetMaxOffset, h.Encode(), nil))
			var oh protocol.OffsetResponseHeader
			if err := oh.Decode(resp.ExtFields); err != nil {
				t.Fatalf("max offset: %v", err)
			}
			n += oh.Offset
		}
		return n
	}

	// The consume queues are dispatched after the send reply (as with
	// RocketMQ's reput service): wait for the count, in commit log order.
	expected := int64(0)
	sendValid := func(what string) {
		t.Helper()
		valid, _ := sendRequest(topic, 1, []byte("valid "+what))
		if resp := call(valid); resp.Code != protocol.Success {
			t.Fatalf("valid send %s: code %d %s", what, resp.Code, resp.Remark)
		}
		expected++
		var n int64
		eventually(t, 5*time.Second, "dispatch of the valid message", func() bool { n = stored(); return n >= expected })
		if n != expected {
			t.Errorf("%s: %d messages stored, want %d", what, n, expected)
			expected = n
		}
	}
	sendValid("first")

	missingField, _ := sendRequest(topic, 0, []byte("x"))
	delete(missingField.ExtFields, "bornTimestamp")
	notANumber, _ := sendRequest(topic, 0, []byte("x"))
	notANumber.ExtFields["queueId"] = "zero"
	batchHeader := func(body []byte, props string, sysFlag int32) *protocol.Command {
		_, h := sendRequest(topic, 0, nil)
		h.Batch = true
		h.Properties = props
		h.SysFlag = sysFlag
		return protocol.NewRequest(protocol.SendBatchMessage, h.V2().Encode(), body)
	}
	goodBatch, _ := protocol.AppendBatch(nil, []protocol.BatchItem{{Body: []byte("one")}, {Body: []byte("two")}})
	truncated := goodBatch[:len(goodBatch)-3]
	badSize := bytes.Clone(goodBatch)
	badSize[3] = 0xFF // first record claims more bytes than it has
	pull := func(queue int32) *protocol.Command {
		h := protocol.PullMessageRequestHeader{ConsumerGroup: "raw_cg", Topic: topic, QueueID: queue, MaxMsgNums: 32,
			SysFlag: protocol.PullSubscription, Subscription: "*", ExpressionType: "TAG"}
		return protocol.NewRequest(protocol.PullMessage, h.Encode(), nil)
	}
	withTopic := func(name string) *protocol.Command { r, _ := sendRequest(name, 0, []byte("x")); return r }

	tests := []struct {
		name   string
		req    *protocol.Command
		code   int16
		remark string // substring the remark must contain
	}{
		{"unknown topic, autoCreateTopicEnable=false", withTopic("NoSuchTopic"), protocol.TopicNotExist, "NoSuchTopic"},
		{"body over maxMessageSize", func() *protocol.Command { r, _ := sendRequest(topic, 0, make([]byte, maxSize+1)); return r }(), protocol.MessageIllegal, "maxMessageSize"},
		{"illegal topic name", withTopic("bad topic!"), protocol.SystemError, "bad topic!"},
		{"topic name over 127 bytes", withTopic(strings.Repeat("t", 128)), protocol.SystemError, "127"},
		{"system topic SCHEDULE_TOPIC_XXXX", withTopic("SCHEDULE_TOPIC_XXXX"), protocol.NoPermission, "SCHEDULE_TOPIC_XXXX"},
		{"system topic RMQ_SYS_TRANS_HALF_TOPIC", withTopic("RMQ_SYS_TRANS_HALF_TOPIC"), protocol.NoPermission, "RMQ_SYS_TRANS_HALF_TOPIC"},
		{"queueId out of range", func() *protocol.Command { r, _ := sendRequest(topic, 99, []byte("x")); return r }(), protocol.SystemError, "queueId"},
		{"missing required header field", missingField, protocol.SystemError, "bornTimestamp"},
		{"non-numeric header field", notANumber, protocol.SystemError, "queueId"},
		{"garbage batch body", batchHeader([]byte("this is not a batch"), "", 0), protocol.MessageIllegal, "batch"},
		{"truncated batch body", batchHeader(truncated, "", 0), protocol.MessageIllegal, "batch"},
		{"batch record size mismatch", batchHeader(badSize, "", 0), protocol.MessageIllegal, "batch"},
		{"empty batch body", batchHeader(nil, "", 0), protocol.MessageIllegal, "batch"},
		{"delayed batch", batchHeader(goodBatch, protocol.EncodeProperties(map[string]string{protocol.PropDelayLevel: "2"}), 0), protocol.MessageIllegal, "delay"},
		{"transactional batch", batchHeader(goodBatch, "", protocol.SysFlagTxPrepared), protocol.MessageIllegal, "transaction"},
		{"pull with a queue id out of range", pull(99), protocol.SystemError, "queueId"},
		{"pull with a negative queue id", pull(-1), protocol.SystemError, "queueId"},
		{"pull without its header", protocol.NewRequest(protocol.PullMessage, map[string]string{"topic": topic}, nil), protocol.SystemError, "consumerGroup"},
		{"heartbeat with a garbage body", protocol.NewRequest(protocol.HeartBeat, nil, []byte("{not json")), protocol.SystemError, "heartbeat"},
		{"lock with a garbage body", protocol.NewRequest(protocol.LockBatchMQ, nil, []byte("\x00\x01")), protocol.SystemError, "lock"},
		{"unknown request code", protocol.NewRequest(9999, nil, []byte("whatever")), protocol.RequestCodeNotSupported, "9999"},
	}
	for _, tc := range tests {
		resp := call(tc.req)
		if resp.Code != tc.code {
			t.Errorf("%s: code %d (%s), want %d", tc.name, resp.Code, resp.Remark, tc.code)
		} else if !strings.Contains(strings.ToLower(resp.Remark), strings.ToLower(tc.remark)) {
			t.Errorf("%s: remark %q does not mention %q", tc.name, resp.Remark, tc.remark)
		}
		select {
		case <-conn.Done():
			t.Fatalf("%s: the broker closed the connection", tc.name)
		default:
		}
		sendValid("after " + tc.name) // also checks that nothing else was stored
	}
	// Nothing reached the unknown topic, the schedule topic or the DLQ.
	for _, tp := range []string{"NoSuchTopic", "SCHEDULE_TOPIC_XXXX"} {
		for q := int32(0); q < 4; q++ {
			h := protocol.QueueRequestHeader{Topic: tp, QueueID: q}
			if resp := call(protocol.NewRequest(protocol.GetMaxOffset, h.Encode(), nil)); resp.Ext("offset") != "0" {
				t.Errorf("%s/%d: max offset %q", tp, q, resp.Ext("offset"))
			}
		}
	}
}
