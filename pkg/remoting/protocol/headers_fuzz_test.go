package protocol

import (
	"strings"
	"testing"
)

// extFromText turns "key=value" lines into an ext map, the shape every
// header decoder takes (the JSON layer already guarantees strings).
func extFromText(text string) map[string]string {
	ext := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			ext[k] = v
		}
	}
	return ext
}

// FuzzHeaderDecoders feeds arbitrary ext maps to every request and
// response header decoder: they must return an error or a value, never
// panic, whatever is missing, malformed, huge or negative.
func FuzzHeaderDecoders(f *testing.F) {
	for _, seed := range []struct {
		code int16
		text string
	}{
		{SendMessage, "producerGroup=pg\ntopic=t\ndefaultTopic=TBW102\ndefaultTopicQueueNums=4\nqueueId=0\nsysFlag=0\nbornTimestamp=1\nflag=0\nproperties=a\x01b\x02"},
		{SendMessageV2, "a=pg\nb=t\nc=TBW102\nd=4\ne=-1\nf=0\ng=1\nh=0\ni=\nj=0\nk=false\nl=16\nm=true"},
		{SendBatchMessage, "a=pg\nb=t\nc=TBW102\nd=99999999999\ne=x\nf=0\ng=1\nh=0"},
		{PullMessage, "consumerGroup=g\ntopic=t\nqueueId=1\nqueueOffset=-5\nmaxMsgNums=32\nsysFlag=2\ncommitOffset=0\nsuspendTimeoutMillis=20000\nsubVersion=0\nexpressionType=SQL92\nsubscription=a > 1"},
		{QueryConsumerOffset, "consumerGroup=g\ntopic=t\nqueueId=2147483648"},
		{EndTransaction, "producerGroup=pg\ntranStateTableOffset=1\ncommitLogOffset=2\ncommitOrRollback=8\nfromTransactionCheck=true\nmsgId=x\ntransactionId="},
		{ConsumerSendMsgBack, "offset=1\ngroup=g\ndelayLevel=3\noriginMsgId=id\noriginTopic=t\nunitMode=false\nmaxReconsumeTimes=16"},
		{UpdateAndCreateTopic, "topic=t\ndefaultTopic=TBW102\nreadQueueNums=8\nwriteQueueNums=8\nperm=6\ntopicFilterType=SINGLE_TAG\ntopicSysFlag=0\norder=false"},
		{0, ""},
	} {
		f.Add(seed.code, seed.text)
	}
	f.Fuzz(func(t *testing.T, code int16, text string) {
		ext := extFromText(text)
		_, _ = DecodeSendHeader(code, ext)
		decoders := []interface{ Decode(map[string]string) error }{
			&SendMessageRequestHeader{}, &SendMessageRequestHeaderV2{}, &SendMessageResponseHeader{},
			&PullMessageRequestHeader{}, &PullMessageResponseHeader{}, &QueryConsumerOffsetRequestHeader{},
			&UpdateConsumerOffsetRequestHeader{}, &QueueRequestHeader{}, &SearchOffsetRequestHeader{},
			&OffsetResponseHeader{}, &GetEarliestMsgStoreTimeResponseHeader{}, &ConsumerSendMsgBackRequestHeader{},
			&ConsumerGroupHeader{}, &UnregisterClientRequestHeader{}, &EndTransactionRequestHeader{},
			&CheckTransactionStateRequestHeader{}, &CreateTopicRequestHeader{}, &TopicHeader{},
			&GetConsumeStatsRequestHeader{}, &QueryMessageRequestHeader{}, &QueryMessageResponseHeader{},
			&ViewMessageRequestHeader{}, &GetConsumerRunningInfoRequestHeader{}, &ConsumeMessageDirectlyRequestHeader{},
			&ResetOffsetRequestHeader{}, &GetConsumerStatusRequestHeader{}, &ReplyMessageRequestHeader{},
			&RegisterBrokerRequestHeader{}, &RegisterBrokerResponseHeader{}, &UnregisterBrokerRequestHeader{},
			&GetRouteInfoRequestHeader{}, &DeleteTopicInNamesrvRequestHeader{}, &PutKVConfigRequestHeader{},
			&KVConfigRequestHeader{}, &GetKVConfigResponseHeader{}, &GetKVListByNamespaceRequestHeader{},
			&QueryDataVersionRequestHeader{}, &QueryDataVersionResponseHeader{}, &GetTopicsByClusterRequestHeader{},
		}
		for _, d := range decoders {
			if d.Decode(ext) == nil {
				// Whatever decoded must encode again (if the type can).
				if e, ok := d.(interface{ Encode() map[string]string }); ok {
					_ = e.Encode()
				}
			}
		}
	})
}
