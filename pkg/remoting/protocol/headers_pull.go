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
type PullMessageRequestHeader struct {
	ConsumerGroup        string
	Topic                string
	QueueID              int32
	QueueOffset          int64
	MaxMsgNums           int32
	SysFlag              PullSysFlag
	CommitOffset         int64
	SuspendTimeoutMillis int64
	Subscription         string
	SubVersion           int64
	ExpressionType       string
}

// Encode implements Header.
func (h *PullMessageRequestHeader) Encode() map[string]string {
	return map[string]string{
		"consumerGroup":        h.ConsumerGroup,
		"topic":                h.Topic,
		"queueId":              itoa32(h.QueueID),
		"queueOffset":          itoa64(h.QueueOffset),
		"maxMsgNums":           itoa32(h.MaxMsgNums),
		"sysFlag":              itoa32(int32(h.SysFlag)),
		"commitOffset":         itoa64(h.CommitOffset),
		"suspendTimeoutMillis": itoa64(h.SuspendTimeoutMillis),
		"subscription":         h.Subscription,
		"subVersion":           itoa64(h.SubVersion),
		"expressionType":       h.ExpressionType,
	}
}

// Decode implements Header.
func (h *PullMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = PullMessageRequestHeader{
		ConsumerGroup:        r.str("consumerGroup", true),
		Topic:                r.str("topic", true),
		QueueID:              r.i32("queueId", true),
		QueueOffset:          r.i64("queueOffset", true),
		MaxMsgNums:           r.i32("maxMsgNums", true),
		SysFlag:              PullSysFlag(r.i32("sysFlag", true)),
		CommitOffset:         r.i64("commitOffset", true),
		SuspendTimeoutMillis: r.i64("suspendTimeoutMillis", true),
		Subscription:         r.str("subscription", false),
		SubVersion:           r.i64("subVersion", true),
		ExpressionType:       r.str("expressionType", false),
	}
	return r.err
}

// PullMessageResponseHeader is the response of PULL_MESSAGE for codes 0,
// 19, 20 and 21. All fields are required: a client that misses
// nextBeginOffset jumps back to offset 0.
type PullMessageResponseHeader struct {
	SuggestWhichBrokerID int64
	NextBeginOffset      int64
	MinOffset            int64
	MaxOffset            int64
}

// Encode implements Header.
func (h *PullMessageResponseHeader) Encode() map[string]string {
	return map[string]string{
		"suggestWhichBrokerId": itoa64(h.SuggestWhichBrokerID),
		"nextBeginOffset":      itoa64(h.NextBeginOffset),
		"minOffset":            itoa64(h.MinOffset),
		"maxOffset":            itoa64(h.MaxOffset),
	}
}

// Decode implements Header.
func (h *PullMessageResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = PullMessageResponseHeader{
		SuggestWhichBrokerID: r.i64("suggestWhichBrokerId", true),
		NextBeginOffset:      r.i64("nextBeginOffset", true),
		MinOffset:            r.i64("minOffset", true),
		MaxOffset:            r.i64("maxOffset", true),
	}
	return r.err
}
