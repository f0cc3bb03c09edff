package protocol

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestHeartbeatDataCodeSetForms(t *testing.T) {
	goClient := `{"clientID":"192.168.1.10@12345","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"TopicTest","subString":"TagA || TagB","tagsSet":["TagA","TagB"],"codeSet":["2598919","2598920"],"subVersion":1690000000000000000,"expressionType":"TAG"},{"classFilterMode":false,"topic":"%RETRY%cg","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1690000000000000001,"expressionType":"TAG"}],"unitMode":false}]}`
	java := strings.Replace(goClient, `["2598919","2598920"]`, `[2598919,2598920]`, 1)
	var decoded []*HeartbeatData
	for _, in := range []string{goClient, java} {
		hb, err := DecodeHeartbeatData([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		decoded = append(decoded, hb)
	}
	if !reflect.DeepEqual(decoded[0], decoded[1]) {
		t.Fatalf("string and number codeSets decode differently:\n%+v\n%+v", decoded[0], decoded[1])
	}
	hb := decoded[0]
	sd := hb.ConsumerDataSet[0].SubscriptionDataSet[0]
	if hb.ClientID != "192.168.1.10@12345" || sd.SubVersion != 1690000000000000000 || !reflect.DeepEqual(sd.CodeSet, CodeSet{2598919, 2598920}) {
		t.Fatalf("decoded %+v", hb)
	}
	if string(hb.Encode()) != java {
		t.Fatalf("Encode:\n got %s\nwant %s", hb.Encode(), java)
	}
	if got := string((&HeartbeatData{ClientID: "c"}).Encode()); got != `{"clientID":"c","producerDataSet":[],"consumerDataSet":[]}` {
		t.Fatalf("empty heartbeat %s", got)
	}
	for _, bad := range []string{`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["x"]}]}]}`, `{"clientID":1}`, `[`} {
		if _, err := DecodeHeartbeatData([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeHeartbeatData(%s) = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestNewSubscriptionData(t *testing.T) {
	for _, tc := range []struct {
		expr, sub string
		tags      []string
		codes     CodeSet
	}{
		{"*", "*", []string{}, CodeSet{}},
		{"", "*", []string{}, CodeSet{}},
		{"  ", "*", []string{}, CodeSet{}},
		{"TagA", "TagA", []string{"TagA"}, CodeSet{2598919}},
		{"TagA || TagB", "TagA || TagB", []string{"TagA", "TagB"}, CodeSet{2598919, 2598920}},
		{" TagA||TagB|| TagA ||", "TagA||TagB|| TagA ||", []string{"TagA", "TagB"}, CodeSet{2598919, 2598920}},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			s := NewSubscriptionData("t", tc.expr)
			if s.SubString != tc.sub || !reflect.DeepEqual(s.TagsSet, tc.tags) || !reflect.DeepEqual(s.CodeSet, tc.codes) ||
				s.ExpressionType != ExpressionTypeTag || s.Topic != "t" {
				t.Fatalf("got %+v", s)
			}
		})
	}
}

func TestSubscriptionDataMatches(t *testing.T) {
	all, some := NewSubscriptionData("t", "*"), NewSubscriptionData("t", "TagA || TagC")
	for _, tc := range []struct {
		tag           string
		wantAll, want bool
	}{{"TagA", true, true}, {"TagB", true, false}, {"TagC", true, true}, {"", true, false}} {
		if all.MatchesTag(tc.tag) != tc.wantAll || all.MatchesTagsCode(TagsHashCode(tc.tag)) != tc.wantAll {
			t.Errorf("* on %q", tc.tag)
		}
		if some.MatchesTag(tc.tag) != tc.want || some.MatchesTagsCode(TagsHashCode(tc.tag)) != tc.want {
			t.Errorf("TagA || TagC on %q", tc.tag)
		}
	}
	classFilter := some
	classFilter.ClassFilterMode = true
	if !classFilter.MatchesTagsCode(1) {
		t.Error("class filter mode must pass everything")
	}
}

func TestLockBatchBodies(t *testing.T) {
	req := &LockBatchRequestBody{ConsumerGroup: "g", ClientID: "ip@pid", MQSet: []MessageQueue{{Topic: "t", BrokerName: "b", QueueID: 0}}}
	const wantReq = `{"consumerGroup":"g","clientId":"ip@pid","mqSet":[{"topic":"t","brokerName":"b","queueId":0}]}`
	if got := string(req.Encode()); got != wantReq {
		t.Fatalf("request %s", got)
	}
	back, err := DecodeLockBatchRequestBody([]byte(wantReq))
	if err != nil || !reflect.DeepEqual(back, req) {
		t.Fatalf("decode request: %+v %v", back, err)
	}
	resp := &LockBatchResponseBody{LockOKMQSet: req.MQSet}
	if got := string(resp.Encode()); got != `{"lockOKMQSet":[{"topic":"t","brokerName":"b","queueId":0}]}` {
		t.Fatalf("response %s", got)
	}
	// Java's fastjson order decodes too; an empty body means none locked.
	r, err := DecodeLockBatchResponseBody([]byte(`{"lockOKMQSet":[{"brokerName":"b","queueId":0,"topic":"t"}]}`))
	if err != nil || !reflect.DeepEqual(r, resp) {
		t.Fatalf("decode response: %+v %v", r, err)
	}
	if r, err := DecodeLockBatchResponseBody(nil); err != nil || len(r.LockOKMQSet) != 0 {
		t.Fatalf("empty response: %+v %v", r, err)
	}
	if got := string((&LockBatchResponseBody{}).Encode()); got != `{"lockOKMQSet":[]}` {
		t.Fatalf("empty set %s", got)
	}
}

func TestGetConsumerListByGroupResponseBody(t *testing.T) {
	b := &GetConsumerListByGroupResponseBody{ConsumerIDList: []string{"a@1", "b@2"}}
	if got := string(b.Encode()); got != `{"consumerIdList":["a@1","b@2"]}` {
		t.Fatalf("encode %s", got)
	}
	back, err := DecodeGetConsumerListByGroupResponseBody(b.Encode())
	if err != nil || !reflect.DeepEqual(back, b) {
		t.Fatalf("decode %+v %v", back, err)
	}
	if got := string((&GetConsumerListByGroupResponseBody{}).Encode()); got != `{"consumerIdList":[]}` {
		t.Fatalf("empty %s", got)
	}
}

func TestMessageQueueKey(t *testing.T) {
	for _, q := range []MessageQueue{{"t", "b", 0}, {"%RETRY%g", "broker@x", 15}, {"", "", -1}} {
		got, err := ParseMessageQueueKey(q.Key())
		if err != nil || got != q {
			t.Errorf("ParseMessageQueueKey(%q) = %+v, %v", q.Key(), got, err)
		}
	}
	if k := (MessageQueue{"t", "b", 3}).Key(); k != "t@b@3" {
		t.Errorf("Key = %q", k)
	}
	for _, bad := range []string{"", "t", "t@b", "t@b@x", "t@b@99999999999"} {
		if _, err := ParseMessageQueueKey(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseMessageQueueKey(%q) = %v", bad, err)
		}
	}
	qs := []MessageQueue{{"b", "x", 1}, {"a", "y", 0}, {"a", "x", 2}, {"a", "x", 1}}
	SortMessageQueues(qs)
	want := []MessageQueue{{"a", "x", 1}, {"a", "x", 2}, {"a", "y", 0}, {"b", "x", 1}}
	if !reflect.DeepEqual(qs, want) {
		t.Errorf("sorted %v", qs)
	}
}

func TestResetOffsetBodyForms(t *testing.T) {
	want := &ResetOffsetBody{OffsetTable: map[MessageQueue]int64{{"t", "b", 0}: 5, {"t", "b", 1}: 7}}
	const fastjson = `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:5,{"brokerName":"b","queueId":1,"topic":"t"}:7}}`
	if got := string(want.Encode()); got != fastjson {
		t.Fatalf("Encode:\n got %s\nwant %s", got, fastjson)
	}
	for _, in := range []string{
		fastjson,
		`{"offsetTable":[[{"topic":"t","brokerName":"b","queueId":0},5],[{"topic":"t","brokerName":"b","queueId":1},7]]}`,
		`{ "offsetTable" : { {"topic":"t","brokerName":"b","queueId":0} : 5 , "t@b@1": 7 } }`,
		`{"offsetTable":{"{\"topic\":\"t\",\"brokerName\":\"b\",\"queueId\":0}":5,"t@b@1":7},"extra":[1,{"x":"}"}]}`,
	} {
		got, err := DecodeResetOffsetBody([]byte(in))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("DecodeResetOffsetBody(%s) = %+v, %v", in, got, err)
		}
	}
	if got, err := DecodeResetOffsetBody([]byte(`{}`)); err != nil || len(got.OffsetTable) != 0 {
		t.Errorf("empty body: %+v %v", got, err)
	}
}

func TestConsumeStatsAndTopicStats(t *testing.T) {
	cs := &ConsumeStats{ConsumeTps: 1.5, OffsetTable: map[MessageQueue]OffsetWrapper{
		{"t", "b", 0}: {BrokerOffset: 10, ConsumerOffset: 4, LastTimestamp: 99},
		{"t", "b", 1}: {BrokerOffset: 3, ConsumerOffset: 3},
	}}
	if cs.TotalDiff() != 6 {
		t.Fatalf("TotalDiff = %d", cs.TotalDiff())
	}
	enc, err := cs.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeConsumeStats(enc)
	if err != nil || !reflect.DeepEqual(back, cs) {
		t.Fatalf("round trip %s: %+v %v", enc, back, err)
	}
	// What a Java 4.9 broker sends.
	java := `{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}:{"brokerOffset":12,"consumerOffset":2,"lastTimestamp":1690000000000}}}`
	js, err := DecodeConsumeStats([]byte(java))
	if err != nil || js.TotalDiff() != 10 || js.OffsetTable[MessageQueue{"TopicTest", "broker-a", 0}].LastTimestamp != 1690000000000 {
		t.Fatalf("java consume stats: %+v %v", js, err)
	}
	nan := &ConsumeStats{ConsumeTps: zero() / zero()}
	if _, err := nan.Encode(); !errors.Is(err, ErrMalformed) {
		t.Fatalf("NaN tps: %v", err)
	}

	ts := &TopicStatsTable{OffsetTable: map[MessageQueue]TopicOffset{{"t", "b", 0}: {MinOffset: 1, MaxOffset: 9, LastUpdateTimestamp: 5}}}
	want := `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"minOffset":1,"maxOffset":9,"lastUpdateTimestamp":5}}}`
	if got := string(ts.Encode()); got != want {
		t.Fatalf("topic stats %s", got)
	}
	tsBack, err := DecodeTopicStatsTable([]byte(want))
	if err != nil || !reflect.DeepEqual(tsBack, ts) {
		t.Fatalf("topic stats round trip %+v %v", tsBack, err)
	}
}

func zero() float64 { return 0 }

func TestConsumerRunningInfoRoundTrip(t *testing.T) {
	ri := &ConsumerRunningInfo{
		Properties:      map[string]string{"PROP_CONSUME_TYPE": ConsumePassively},
		SubscriptionSet: []SubscriptionData{NewSubscriptionData("t", "TagA")},
		MQTable:         map[MessageQueue]ProcessQueueInfo{{"t", "b", 0}: {CommitOffset: 5, Locked: true}},
		StatusTable:     map[string]ConsumeStatus{"t": {PullTPS: 1.25}},
		Jstack:          "goroutine 1",
	}
	enc, err := ri.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(enc), `"mqTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"commitOffset":5,`) {
		t.Fatalf("mqTable not in fastjson form: %s", enc)
	}
	back, err := DecodeConsumerRunningInfo(enc)
	if err != nil || !reflect.DeepEqual(back, ri) {
		t.Fatalf("round trip:\n%+v\n%+v\n%v", back, ri, err)
	}
}

func TestSubscriptionGroupWrapper(t *testing.T) {
	w := &SubscriptionGroupWrapper{
		SubscriptionGroupTable: map[string]SubscriptionGroupConfig{"g": DefaultSubscriptionGroupConfig("g")},
		DataVersion:            DataVersion{Timestamp: 1690000000000, Counter: 2},
	}
	const want = `{"subscriptionGroupTable":{"g":{"groupName":"g","consumeEnable":true,"consumeFromMinEnable":true,"consumeBroadcastEnable":true,"retryQueueNums":1,"retryMaxTimes":16,"brokerId":0,"whichBrokerWhenConsumeSlowly":1,"notifyConsumerIdsChangedEnable":true}},"dataVersion":{"timestamp":1690000000000,"counter":2}}`
	if got := string(w.Encode()); got != want {
		t.Fatalf("Encode:\n got %s\nwant %s", got, want)
	}
	back, err := DecodeSubscriptionGroupWrapper([]byte(want))
	if err != nil || !reflect.DeepEqual(back, w) {
		t.Fatalf("decode %+v %v", back, err)
	}
	if got := string((&SubscriptionGroupWrapper{}).Encode()); !strings.HasPrefix(got, `{"subscriptionGroupTable":{},`) {
		t.Fatalf("empty %s", got)
	}
}

func TestDecodeQueueMapBodiesMalformed(t *testing.T) {
	for _, in := range []string{
		``, `[]`, `{`, `{"offsetTable"`, `{"offsetTable":`, `{"offsetTable":{`, `{"offsetTable":{{"topic":"t"}`,
		`{"offsetTable":{{"topic":"t"}:}}`, `{"offsetTable":{{"topic":"t"}:1`, `{"offsetTable":{{"topic":"t"}:1 2}}`,
		`{"offsetTable":{{"topic":"t"}:"x"}}`, `{"offsetTable":{"nokey":1}}`, `{"offsetTable":[[{"topic":"t"}]]}`,
		`{"offsetTable":[[1,2]]}`, `{"offsetTable":5}`, `{"offsetTable":{"a":1}x}`, `{1:2}`, `{"a" 1}`, `{"a":1 "b":2}`,
		`{"offsetTable":{{"topic":"t}:1}}`, `{"offsetTable":{}}}`,
	} {
		_, err := DecodeResetOffsetBody([]byte(in))
		if err == nil {
			t.Errorf("DecodeResetOffsetBody(%q) succeeded", in)
		}
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTruncated) {
			t.Errorf("DecodeResetOffsetBody(%q) = %v, want ErrMalformed or ErrTruncated", in, err)
		}
		for _, dec := range []func([]byte) error{
			func(b []byte) error { _, err := DecodeConsumeStats(b); return err },
			func(b []byte) error { _, err := DecodeTopicStatsTable(b); return err },
			func(b []byte) error { _, err := DecodeConsumerRunningInfo(b); return err },
		} {
			_ = dec([]byte(in)) // must not panic
		}
	}
}
