package protocol

// Pull (code 11)

// PullSysFlag is the sysFlag of a pull request (Java PullSysFlag).
type PullSysFlag int32

// Pull sysFlag bits.
const (
	PullCommitOffset PullSysFlag = 1 << 0 // store commitOffset for the group (masters only)
	PullSuspend      PullSysFlag = 1 << 1 // hold the request when nothing is there (long polling)
	PullSubscription PullSysFlag = 1 << 2 // the request carries its subscription expression
	PullClassFilter  PullSysFlag = 1 << 3 // class filter mode (unsupported by Go clients)
	PullLitePull     PullSysFlag = 1 << 4 // lite pull consumer (Java 4.9)
)

// NewPullSysFlag builds a pull sysFlag from its bits.
func NewPullSysFlag(commitOffset, suspend, subscription, classFilter bool) PullSysFlag {
	var f PullSysFlag
	if commitOffset {
		f |= PullCommitOffset
	}
	if suspend {
		f |= PullSuspend
	}
	if subscription {
		f |= PullSubscription
	}
	if classFilter {
		f |= PullClassFilter
	}
	return f
}

// HasCommitOffset reports the COMMIT_OFFSET bit.
func (f PullSysFlag) HasCommitOffset() bool { return f&PullCommitOffset != 0 }

// HasSuspend reports the SUSPEND bit.
func (f PullSysFlag) HasSuspend() bool { return f&PullSuspend != 0 }

// HasSubscription reports the SUBSCRIPTION bit.
func (f PullSysFlag) HasSubscription() bool { return f&PullSubscription != 0 }

// HasClassFilter reports the CLASS_FILTER bit.
func (f PullSysFlag) HasClassFilter() bool { return f&PullClassFilter != 0 }

// HasLitePull reports the LITE_PULL bit.
func (f PullSysFlag) HasLitePull() bool { return f&PullLitePull != 0 }

// ClearCommitOffset returns f without the COMMIT_OFFSET bit (what a client
// does when it pulls from a slave).
func (f PullSysFlag) ClearCommitOffset() PullSysFlag { return f &^ PullCommitOffset }

// Expression types of subscriptions.
const (
	ExpressionTypeTag   = "TAG"
	ExpressionTypeSQL92 = "SQL92"
)

// PullMessageRequestHeader is the PULL_MESSAGE request. Required: every
// field except subscription and expressionType.
//
//rmq:codec typed
type PullMessageRequestHeader struct {
	ConsumerGroup        string      `rmq:"consumerGroup,required"`
	Topic                string      `rmq:"topic,required"`
	QueueID              int32       `rmq:"queueId,required"`
	QueueOffset          int64       `rmq:"queueOffset,required"`
	MaxMsgNums           int32       `rmq:"maxMsgNums,required"`
	SysFlag              PullSysFlag `rmq:"sysFlag,required"`
	CommitOffset         int64       `rmq:"commitOffset,required"`
	SuspendTimeoutMillis int64       `rmq:"suspendTimeoutMillis,required"`
	Subscription         string      `rmq:"subscription"`
	SubVersion           int64       `rmq:"subVersion,required"`
	ExpressionType       string      `rmq:"expressionType"`
}

// PullMessageResponseHeader is the response of PULL_MESSAGE for codes 0,
// 19, 20 and 21. All fields are required: a client that misses
// nextBeginOffset jumps back to offset 0.
//
//rmq:codec append
type PullMessageResponseHeader struct {
	SuggestWhichBrokerID int64 `rmq:"suggestWhichBrokerId,required"`
	NextBeginOffset      int64 `rmq:"nextBeginOffset,required"`
	MinOffset            int64 `rmq:"minOffset,required"`
	MaxOffset            int64 `rmq:"maxOffset,required"`
}
