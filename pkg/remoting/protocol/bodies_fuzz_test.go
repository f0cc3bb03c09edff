package protocol

import (
	"reflect"
	"testing"
)

// FuzzDecodeResetOffsetBody exercises the hand-written parser for
// MessageQueue-keyed maps (fastjson object keys, gson pairs, string keys).
func FuzzDecodeResetOffsetBody(f *testing.F) {
	f.Add([]byte(`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:5,{"brokerName":"b","queueId":1,"topic":"t"}:7}}`))
	f.Add([]byte(`{"offsetTable":[[{"topic":"t","brokerName":"b","queueId":0},5]]}`))
	f.Add([]byte(`{ "offsetTable" : { "t@b@1": 7 , "{\"topic\":\"t\"}":1 }, "x":[{"}":"]"}] }`))
	f.Add([]byte(`{"jstack":"","mqTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"commitOffset":5}},"properties":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = DecodeConsumerRunningInfo(data)
		_, _ = DecodeConsumeStats(data)
		b, err := DecodeResetOffsetBody(data)
		if err != nil {
			return
		}
		back, err := DecodeResetOffsetBody(b.Encode())
		if err != nil || !reflect.DeepEqual(back, b) {
			t.Fatalf("round trip of %+v: %+v, %v", b, back, err)
		}
	})
}
