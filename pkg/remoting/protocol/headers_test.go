package protocol

import (
	"errors"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

type headerCase struct {
	name     string
	h        Header        // fully populated
	empty    func() Header // a zero header of the same type
	keys     []string      // exact ext keys Encode writes for h
	required []string
}

func headerCases() []headerCase {
	return []headerCase{
		{
			name: "SendMessageRequestHeader",
			h: &SendMessageRequestHeader{ProducerGroup: "pg", Topic: "t", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
				QueueID: 3, SysFlag: 4, BornTimestamp: 1690000000000, Flag: 7, Properties: "TAGS\x01a\x02", ReconsumeTimes: 2,
				UnitMode: true, MaxReconsumeTimes: 16, Batch: true, BrokerName: "broker-a"},
			empty: func() Header { return new(SendMessageRequestHeader) },
			keys: []string{"batch", "bname", "bornTimestamp", "defaultTopic", "defaultTopicQueueNums", "flag", "maxReconsumeTimes",
				"producerGroup", "properties", "queueId", "reconsumeTimes", "sysFlag", "topic", "unitMode"},
			required: []string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp", "flag"},
		},
		{
			name: "SendMessageRequestHeaderV2",
			h: &SendMessageRequestHeaderV2{ProducerGroup: "pg", Topic: "t", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
				QueueID: 3, SysFlag: 0, BornTimestamp: 1690000000000, Flag: 7, Properties: "TAGS\x01a\x02", ReconsumeTimes: 2,
				UnitMode: false, MaxReconsumeTimes: 0, Batch: true, BrokerName: "broker-a"},
			empty:    func() Header { return new(SendMessageRequestHeaderV2) },
			keys:     []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"},
			required: []string{"a", "b", "c", "d", "e", "f", "g", "h"},
		},
		{
			name:     "SendMessageResponseHeader",
			h:        &SendMessageResponseHeader{MsgID: "7F000001000027290000000000000064", QueueID: 1, QueueOffset: 9, TransactionID: "tx", MsgRegion: "DefaultRegion", TraceOn: true},
			empty:    func() Header { return new(SendMessageResponseHeader) },
			keys:     []string{"MSG_REGION", "TRACE_ON", "msgId", "queueId", "queueOffset", "transactionId"},
			required: []string{"msgId", "queueId", "queueOffset"},
		},
		{
			name: "PullMessageRequestHeader",
			h: &PullMessageRequestHeader{ConsumerGroup: "g", Topic: "t", QueueID: 1, QueueOffset: 5, MaxMsgNums: 32, SysFlag: 3,
				CommitOffset: 4, SuspendTimeoutMillis: 20000, Subscription: "TagA || TagB", SubVersion: 1690000000000000000, ExpressionType: "TAG"},
			empty: func() Header { return new(PullMessageRequestHeader) },
			keys: []string{"commitOffset", "consumerGroup", "expressionType", "maxMsgNums", "queueId", "queueOffset", "subVersion",
				"subscription", "suspendTimeoutMillis", "sysFlag", "topic"},
			required: []string{"consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset", "suspendTimeoutMillis", "subVersion"},
		},
		{
			name:     "PullMessageResponseHeader",
			h:        &PullMessageResponseHeader{SuggestWhichBrokerID: 1, NextBeginOffset: 10, MinOffset: 2, MaxOffset: 11},
			empty:    func() Header { return new(PullMessageResponseHeader) },
			keys:     []string{"maxOffset", "minOffset", "nextBeginOffset", "suggestWhichBrokerId"},
			required: []string{"suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset"},
		},
		{
			name:     "QueryConsumerOffsetRequestHeader",
			h:        &QueryConsumerOffsetRequestHeader{ConsumerGroup: "g", Topic: "t", QueueID: 2},
			empty:    func() Header { return new(QueryConsumerOffsetRequestHeader) },
			keys:     []string{"consumerGroup", "queueId", "topic"},
			required: []string{"consumerGroup", "topic", "queueId"},
		},
		{
			name:     "UpdateConsumerOffsetRequestHeader",
			h:        &UpdateConsumerOffsetRequestHeader{ConsumerGroup: "g", Topic: "t", QueueID: 2, CommitOffset: 77},
			empty:    func() Header { return new(UpdateConsumerOffsetRequestHeader) },
			keys:     []string{"commitOffset", "consumerGroup", "queueId", "topic"},
			required: []string{"consumerGroup", "topic", "queueId", "commitOffset"},
		},
		{
			name:     "QueueRequestHeader",
			h:        &GetMaxOffsetRequestHeader{Topic: "t", QueueID: 3},
			empty:    func() Header { return new(GetMinOffsetRequestHeader) },
			keys:     []string{"queueId", "topic"},
			required: []string{"topic", "queueId"},
		},
		{
			name:     "SearchOffsetRequestHeader",
			h:        &SearchOffsetRequestHeader{Topic: "t", QueueID: 3, Timestamp: 1690000000000},
			empty:    func() Header { return new(SearchOffsetRequestHeader) },
			keys:     []string{"queueId", "timestamp", "topic"},
			required: []string{"topic", "queueId", "timestamp"},
		},
		{
			name:     "OffsetResponseHeader",
			h:        &OffsetResponseHeader{Offset: -1},
			empty:    func() Header { return new(GetMaxOffsetResponseHeader) },
			keys:     []string{"offset"},
			required: []string{"offset"},
		},
		{
			name:     "GetEarliestMsgStoreTimeResponseHeader",
			h:        &GetEarliestMsgStoreTimeResponseHeader{Timestamp: 1690000000000},
			empty:    func() Header { return new(GetEarliestMsgStoreTimeResponseHeader) },
			keys:     []string{"timestamp"},
			required: []string{"timestamp"},
		},
		{
			name: "ConsumerSendMsgBackRequestHeader",
			h: &ConsumerSendMsgBackRequestHeader{Offset: 1234, Group: "g", DelayLevel: -1, OriginMsgID: "AB",
				OriginTopic: "t", UnitMode: false, MaxReconsumeTimes: 16},
			empty:    func() Header { return new(ConsumerSendMsgBackRequestHeader) },
			keys:     []string{"delayLevel", "group", "maxReconsumeTimes", "offset", "originMsgId", "originTopic", "unitMode"},
			required: []string{"offset", "group", "delayLevel"},
		},
		{
			name:     "ConsumerGroupHeader",
			h:        &GetConsumerListByGroupRequestHeader{ConsumerGroup: "g"},
			empty:    func() Header { return new(NotifyConsumerIDsChangedRequestHeader) },
			keys:     []string{"consumerGroup"},
			required: []string{"consumerGroup"},
		},
		{
			name:     "UnregisterClientRequestHeader",
			h:        &UnregisterClientRequestHeader{ClientID: "1.2.3.4@1", ProducerGroup: "pg", ConsumerGroup: "cg"},
			empty:    func() Header { return new(UnregisterClientRequestHeader) },
			keys:     []string{"clientID", "consumerGroup", "producerGroup"},
			required: []string{"clientID"},
		},
		{
			name: "EndTransactionRequestHeader",
			h: &EndTransactionRequestHeader{ProducerGroup: "pg", TranStateTableOffset: 3, CommitLogOffset: 4096,
				CommitOrRollback: TransactionCommit, FromTransactionCheck: true, MsgID: "AB", TransactionID: "tx"},
			empty: func() Header { return new(EndTransactionRequestHeader) },
			keys: []string{"commitLogOffset", "commitOrRollback", "fromTransactionCheck", "msgId", "producerGroup",
				"tranStateTableOffset", "transactionId"},
			required: []string{"producerGroup", "tranStateTableOffset", "commitLogOffset", "commitOrRollback", "msgId"},
		},
		{
			name:     "CheckTransactionStateRequestHeader",
			h:        &CheckTransactionStateRequestHeader{TranStateTableOffset: 3, CommitLogOffset: 4096, MsgID: "AB", TransactionID: "tx", OffsetMsgID: "CD"},
			empty:    func() Header { return new(CheckTransactionStateRequestHeader) },
			keys:     []string{"commitLogOffset", "msgId", "offsetMsgId", "tranStateTableOffset", "transactionId"},
			required: []string{"tranStateTableOffset", "commitLogOffset"},
		},
		{
			name: "CreateTopicRequestHeader",
			h: &CreateTopicRequestHeader{Topic: "t", DefaultTopic: "defaultTopic", ReadQueueNums: 8, WriteQueueNums: 8,
				Perm: 6, TopicFilterType: TopicFilterSingleTag, TopicSysFlag: 1, Order: true},
			empty:    func() Header { return new(CreateTopicRequestHeader) },
			keys:     []string{"defaultTopic", "order", "perm", "readQueueNums", "topic", "topicFilterType", "topicSysFlag", "writeQueueNums"},
			required: []string{"topic", "defaultTopic", "readQueueNums", "writeQueueNums", "perm", "topicFilterType"},
		},
		{
			name:     "TopicHeader",
			h:        &DeleteTopicRequestHeader{Topic: "t"},
			empty:    func() Header { return new(GetTopicStatsInfoRequestHeader) },
			keys:     []string{"topic"},
			required: []string{"topic"},
		},
		{
			name:     "GetConsumeStatsRequestHeader",
			h:        &GetConsumeStatsRequestHeader{ConsumerGroup: "g", Topic: "t"},
			empty:    func() Header { return new(GetConsumeStatsRequestHeader) },
			keys:     []string{"consumerGroup", "topic"},
			required: []string{"consumerGroup"},
		},
		{
			name:     "QueryMessageRequestHeader",
			h:        &QueryMessageRequestHeader{Topic: "t", Key: "k1", MaxNum: 32, BeginTimestamp: 1, EndTimestamp: 2, UniqueKeyQuery: true},
			empty:    func() Header { return new(QueryMessageRequestHeader) },
			keys:     []string{"_UNIQUE_KEY_QUERY", "beginTimestamp", "endTimestamp", "key", "maxNum", "topic"},
			required: []string{"topic", "key", "maxNum", "beginTimestamp", "endTimestamp"},
		},
		{
			name:     "QueryMessageResponseHeader",
			h:        &QueryMessageResponseHeader{IndexLastUpdateTimestamp: 5, IndexLastUpdatePhyoffset: 6},
			empty:    func() Header { return new(QueryMessageResponseHeader) },
			keys:     []string{"indexLastUpdatePhyoffset", "indexLastUpdateTimestamp"},
			required: []string{"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"},
		},
		{
			name:     "ViewMessageRequestHeader",
			h:        &ViewMessageRequestHeader{Offset: 4096},
			empty:    func() Header { return new(ViewMessageRequestHeader) },
			keys:     []string{"offset"},
			required: []string{"offset"},
		},
		{
			name:     "GetConsumerRunningInfoRequestHeader",
			h:        &GetConsumerRunningInfoRequestHeader{ConsumerGroup: "g", ClientID: "1.2.3.4@1", JstackEnable: true},
			empty:    func() Header { return new(GetConsumerRunningInfoRequestHeader) },
			keys:     []string{"clientId", "consumerGroup", "jstackEnable"},
			required: []string{"consumerGroup", "clientId"},
		},
		{
			name:     "ConsumeMessageDirectlyRequestHeader",
			h:        &ConsumeMessageDirectlyRequestHeader{ConsumerGroup: "g", ClientID: "c", MsgID: "m", BrokerName: "b"},
			empty:    func() Header { return new(ConsumeMessageDirectlyRequestHeader) },
			keys:     []string{"brokerName", "clientId", "consumerGroup", "msgId"},
			required: []string{"consumerGroup"},
		},
		{
			name:     "ResetOffsetRequestHeader",
			h:        &ResetOffsetRequestHeader{Topic: "t", Group: "g", Timestamp: 99, IsForce: true},
			empty:    func() Header { return new(ResetOffsetRequestHeader) },
			keys:     []string{"group", "isForce", "timestamp", "topic"},
			required: []string{"topic", "group", "timestamp", "isForce"},
		},
		{
			name:     "GetConsumerStatusRequestHeader",
			h:        &GetConsumerStatusRequestHeader{Topic: "t", Group: "g", ClientAddr: "c"},
			empty:    func() Header { return new(GetConsumerStatusRequestHeader) },
			keys:     []string{"clientAddr", "group", "topic"},
			required: []string{"topic", "group"},
		},
		{
			name: "ReplyMessageRequestHeader",
			h: &ReplyMessageRequestHeader{ProducerGroup: "pg", Topic: "DefaultCluster_REPLY_TOPIC", DefaultTopic: "TBW102",
				DefaultTopicQueueNums: 4, QueueID: 0, SysFlag: 0, BornTimestamp: 1, Flag: 0, Properties: "a\x01b\x02",
				ReconsumeTimes: 0, UnitMode: false, BornHost: "1.2.3.4:5", StoreHost: "6.7.8.9:10911", StoreTimestamp: 2},
			empty: func() Header { return new(ReplyMessageRequestHeader) },
			keys: []string{"bornHost", "bornTimestamp", "defaultTopic", "defaultTopicQueueNums", "flag", "producerGroup",
				"properties", "queueId", "reconsumeTimes", "storeHost", "storeTimestamp", "sysFlag", "topic", "unitMode"},
			required: []string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
				"bornTimestamp", "flag", "bornHost", "storeHost", "storeTimestamp"},
		},
	}
}

func sortedExtKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isScalar(v string) bool {
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return true
	}
	return v == "true" || v == "false"
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, tc := range headerCases() {
		t.Run(tc.name, func(t *testing.T) {
			ext := tc.h.Encode()
			if got := sortedExtKeys(ext); !reflect.DeepEqual(got, tc.keys) {
				t.Fatalf("Encode keys = %v, want %v", got, tc.keys)
			}
			// ACL fields and unknown keys are ignored.
			ext[ExtAccessKey], ext[ExtSignature], ext[ExtSecurityToken], ext["somethingNew"] = "ak", "sig", "tok", "x"
			got := tc.empty()
			if err := got.Decode(ext); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.h) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", got, tc.h)
			}
		})
	}
}

func TestHeaderMissingField(t *testing.T) {
	for _, tc := range headerCases() {
		for _, k := range tc.required {
			for _, mode := range []string{"absent", "empty"} {
				t.Run(tc.name+"/"+k+"/"+mode, func(t *testing.T) {
					ext := tc.h.Encode()
					if mode == "absent" {
						delete(ext, k)
					} else {
						ext[k] = ""
					}
					err := tc.empty().Decode(ext)
					if !errors.Is(err, ErrMissingField) || !strings.Contains(err.Error(), k) {
						t.Fatalf("Decode without %s: %v, want ErrMissingField naming it", k, err)
					}
				})
			}
		}
	}
}

func TestHeaderBadField(t *testing.T) {
	for _, tc := range headerCases() {
		for k, v := range tc.h.Encode() {
			if !isScalar(v) {
				continue
			}
			t.Run(tc.name+"/"+k, func(t *testing.T) {
				ext := tc.h.Encode()
				ext[k] = "12x"
				err := tc.empty().Decode(ext)
				if !errors.Is(err, ErrBadField) || !strings.Contains(err.Error(), k) {
					t.Fatalf("Decode with %s=12x: %v, want ErrBadField naming it", k, err)
				}
			})
		}
	}
}

func TestHeaderOptionalFieldsLenient(t *testing.T) {
	var h SendMessageRequestHeader
	ext := map[string]string{"producerGroup": "pg", "topic": "t", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "0", "bornTimestamp": "1", "flag": "0", "reconsumeTimes": "", "unitMode": "", "batch": ""}
	if err := h.Decode(ext); err != nil {
		t.Fatal(err)
	}
	if h.ReconsumeTimes != 0 || h.UnitMode || h.Batch || h.MaxReconsumeTimes != -1 {
		t.Fatalf("optional fields: %+v", h)
	}
	if _, ok := h.Encode()["maxReconsumeTimes"]; ok {
		t.Fatal("unset maxReconsumeTimes encoded")
	}
	var b ConsumerSendMsgBackRequestHeader
	if err := b.Decode(map[string]string{"offset": "1", "group": "g", "delayLevel": "0"}); err != nil {
		t.Fatal(err)
	}
	if b.MaxReconsumeTimes != -1 {
		t.Fatalf("absent maxReconsumeTimes = %d, want -1", b.MaxReconsumeTimes)
	}
}

func TestSendMessageHeaderV1V2(t *testing.T) {
	v1 := &SendMessageRequestHeader{ProducerGroup: "pg", Topic: "t", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 1, BornTimestamp: 5, Properties: "a\x01b\x02", MaxReconsumeTimes: 3, Batch: true}
	v2 := v1.V2()
	if !reflect.DeepEqual(v2.V1(), v1) {
		t.Fatalf("V2().V1() = %+v", v2.V1())
	}
	long, short := v1.Encode(), v2.Encode()
	pairs := map[string]string{"a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums",
		"e": "queueId", "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties", "j": "reconsumeTimes",
		"k": "unitMode", "l": "maxReconsumeTimes", "m": "batch"}
	for s, l := range pairs {
		if short[s] != long[l] {
			t.Errorf("%s=%q but %s=%q", s, short[s], l, long[l])
		}
	}
	for _, tc := range []struct {
		code int16
		ext  map[string]string
	}{{SendMessage, long}, {SendReplyMessage, long}, {SendMessageV2, short}, {SendBatchMessage, short}, {SendReplyMessageV2, short}} {
		got, err := DecodeSendHeader(tc.code, tc.ext)
		if err != nil {
			t.Fatalf("code %d: %v", tc.code, err)
		}
		if !reflect.DeepEqual(got, v1) {
			t.Fatalf("code %d: %+v", tc.code, got)
		}
	}
	if _, err := DecodeSendHeader(SendBatchMessage, long); !errors.Is(err, ErrMissingField) {
		t.Fatalf("long names under code 320: %v", err)
	}
}

func TestEndTransactionCommitOrRollback(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want error
	}{{"0", nil}, {"8", nil}, {"12", nil}, {"4", ErrBadField}, {"1", ErrBadField}} {
		ext := map[string]string{"producerGroup": "pg", "tranStateTableOffset": "1", "commitLogOffset": "2",
			"commitOrRollback": tc.v, "msgId": "m", "fromTransactionCheck": "false", "transactionId": ""}
		var h EndTransactionRequestHeader
		if err := h.Decode(ext); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("commitOrRollback=%s: %v, want %v", tc.v, err, tc.want)
		}
	}
}

func TestPullSysFlag(t *testing.T) {
	for _, tc := range []struct {
		name                                  string
		f                                     PullSysFlag
		commit, suspend, sub, class, litePull bool
	}{
		{"first push pull", 2, false, true, false, false, false},
		{"push with offset", 3, true, true, false, false, false},
		{"pull consumer", 6, false, true, true, false, false},
		{"all", 31, true, true, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			if f.HasCommitOffset() != tc.commit || f.HasSuspend() != tc.suspend || f.HasSubscription() != tc.sub ||
				f.HasClassFilter() != tc.class || f.HasLitePull() != tc.litePull {
				t.Fatalf("bits of %d wrong", f)
			}
			if !tc.litePull {
				if got := NewPullSysFlag(tc.commit, tc.suspend, tc.sub, tc.class); got != f {
					t.Fatalf("NewPullSysFlag = %d, want %d", got, f)
				}
			}
			if f.ClearCommitOffset().HasCommitOffset() || f.ClearCommitOffset()|PullCommitOffset != f|PullCommitOffset {
				t.Fatal("ClearCommitOffset")
			}
		})
	}
}
