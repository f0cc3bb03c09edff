package protocol

// Request codes (RocketMQ RequestCode). The numbers are the wire values.
const (
	SendMessage                   int16 = 10
	PullMessage                   int16 = 11
	QueryMessage                  int16 = 12
	QueryBrokerOffset             int16 = 13
	QueryConsumerOffset           int16 = 14
	UpdateConsumerOffset          int16 = 15
	UpdateAndCreateTopic          int16 = 17
	GetAllTopicConfig             int16 = 21
	GetTopicConfigList            int16 = 22
	GetTopicNameList              int16 = 23
	UpdateBrokerConfig            int16 = 25
	GetBrokerConfig               int16 = 26
	GetBrokerRuntimeInfo          int16 = 28 // body: KVTable of the broker's runtime figures
	SearchOffsetByTimestamp       int16 = 29
	GetMaxOffset                  int16 = 30
	GetMinOffset                  int16 = 31
	GetEarliestMsgStoreTime       int16 = 32
	ViewMessageByID               int16 = 33
	HeartBeat                     int16 = 34
	UnregisterClient              int16 = 35
	ConsumerSendMsgBack           int16 = 36
	EndTransaction                int16 = 37
	GetConsumerListByGroup        int16 = 38
	CheckTransactionState         int16 = 39
	NotifyConsumerIDsChanged      int16 = 40
	LockBatchMQ                   int16 = 41
	UnlockBatchMQ                 int16 = 42
	GetAllConsumerOffset          int16 = 43
	GetAllDelayOffset             int16 = 45
	PutKVConfig                   int16 = 100
	GetKVConfig                   int16 = 101
	DeleteKVConfig                int16 = 102
	RegisterBroker                int16 = 103
	UnregisterBroker              int16 = 104
	GetRouteInfoByTopic           int16 = 105
	GetBrokerClusterInfo          int16 = 106
	UpdateAndCreateSubscription   int16 = 200
	GetAllSubscriptionGroupConfig int16 = 201
	GetTopicStatsInfo             int16 = 202
	GetConsumerConnectionList     int16 = 203
	GetProducerConnectionList     int16 = 204
	WipeWritePermOfBroker         int16 = 205
	GetAllTopicListFromNameServer int16 = 206
	DeleteSubscriptionGroup       int16 = 207
	GetConsumeStats               int16 = 208
	GetKVListByNamespace          int16 = 219
	DeleteTopicInBroker           int16 = 215
	DeleteTopicInNameServer       int16 = 216
	ResetConsumerClientOffset     int16 = 220
	GetConsumerStatusFromClient   int16 = 221
	InvokeBrokerToResetOffset     int16 = 222
	GetTopicsByCluster            int16 = 224
	QueryTopicConsumeByWho        int16 = 300
	GetConsumerRunningInfo        int16 = 307
	ConsumeMessageDirectly        int16 = 309
	SendMessageV2                 int16 = 310
	SendBatchMessage              int16 = 320
	QueryConsumeQueue             int16 = 321
	QueryDataVersion              int16 = 322
	SendReplyMessage              int16 = 324
	SendReplyMessageV2            int16 = 325
	PushReplyMessageToClient      int16 = 326
)

// Response codes (RocketMQ ResponseCode).
const (
	Success                    int16 = 0
	SystemError                int16 = 1
	SystemBusy                 int16 = 2
	RequestCodeNotSupported    int16 = 3
	TransactionFailed          int16 = 4
	FlushDiskTimeout           int16 = 10
	SlaveNotAvailable          int16 = 11
	FlushSlaveTimeout          int16 = 12
	MessageIllegal             int16 = 13
	ServiceNotAvailable        int16 = 14
	VersionNotSupported        int16 = 15
	NoPermission               int16 = 16
	TopicNotExist              int16 = 17
	TopicExistAlready          int16 = 18
	PullNotFound               int16 = 19
	PullRetryImmediately       int16 = 20
	PullOffsetMoved            int16 = 21
	QueryNotFound              int16 = 22
	SubscriptionParseFailed    int16 = 23
	SubscriptionNotExist       int16 = 24
	SubscriptionNotLatest      int16 = 25
	SubscriptionGroupNotExist  int16 = 26
	FilterDataNotExist         int16 = 27
	FilterDataNotLatest        int16 = 28
	TransactionShouldCommit    int16 = 200
	TransactionShouldRollback  int16 = 201
	TransactionStateUnknown    int16 = 202
	TransactionStateGroupWrong int16 = 203
	ConsumerNotOnline          int16 = 206
	ConsumeMsgTimeout          int16 = 207
	NoMessage                  int16 = 208
	UpdateAndCreateACLFailed   int16 = 209
	DeleteACLFailed            int16 = 210
	UpdateGlobalWhiteAddrsFail int16 = 211
	FlowControl                int16 = 215
)

// Language codes used by the ROCKETMQ binary header; the JSON header carries
// the name instead (see LanguageName).
const (
	LangJava   byte = 0
	LangCPP    byte = 1
	LangDotNet byte = 2
	LangPython byte = 3
	LangDelphi byte = 4
	LangErlang byte = 5
	LangRuby   byte = 6
	LangOther  byte = 7
	LangHTTP   byte = 8
	LangGo     byte = 9
	LangPHP    byte = 10
	LangOMS    byte = 11
	LangRust   byte = 12
)

var languageNames = [...]string{"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "PHP", "OMS", "RUST"}

// LanguageName returns the JSON-header name of a language code ("OTHER" for
// codes it does not know).
func LanguageName(code byte) string {
	if int(code) < len(languageNames) {
		return languageNames[code]
	}
	return "OTHER"
}

// LanguageCode returns the code of a JSON-header language name (LangOther
// for names it does not know).
func LanguageCode(name string) byte {
	for i, n := range languageNames {
		if n == name {
			return byte(i)
		}
	}
	return LangOther
}

// Version is the MQVersion ordinal Tide puts in the headers it sends. It is
// the value of RocketMQ 4.9.7 (V4_9_7), so Java tools treat Tide daemons as
// current 4.x servers.
const Version int32 = 407

// Versions that change behaviour on the Java side (MQVersion ordinals).
const (
	VersionV3_0_11 int32 = 37  // NameServer parses RegisterBrokerBody from here on
	VersionV3_4_9  int32 = 121 // broker honours maxReconsumeTimes in headers
	VersionV4_5_2  int32 = 317 // what rocketmq-client-go v2.1.2 sends
	VersionV4_9_4  int32 = 401 // NameServer emits standard route JSON from here on
)

// Command flag bits.
const (
	FlagResponse int32 = 1 << 0 // RPC_TYPE: the command is a response
	FlagOneway   int32 = 1 << 1 // RPC_ONEWAY: the sender expects no response
)

// Serialize types in the high byte of the header-length word.
const (
	SerializeJSON     byte = 0
	SerializeRocketMQ byte = 1
)
