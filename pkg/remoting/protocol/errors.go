package protocol

import (
	"errors"
	"fmt"
)

// Sentinel errors of the codec. Decoders wrap them with %w and add detail.
var (
	// ErrFrameTooLarge: the frame's length field exceeds the reader's limit.
	ErrFrameTooLarge = errors.New("frame too large")
	// ErrHeaderTooLarge: a frame's header exceeds the reader's limit
	// (CheckHeaderLength).
	ErrHeaderTooLarge = errors.New("header too large")
	// ErrMalformed: the bytes do not form a valid frame, header or record.
	ErrMalformed = errors.New("malformed data")
	// ErrTruncated: the input ends before the structure it announces.
	ErrTruncated = errors.New("truncated data")
	// ErrBadCRC: a stored record's body CRC does not match its body.
	ErrBadCRC = errors.New("body crc mismatch")
	// ErrMissingField: a required header field is absent or empty.
	ErrMissingField = errors.New("missing header field")
	// ErrBadField: a header field does not parse as its type.
	ErrBadField = errors.New("bad header field")
	// ErrBlank: the record is the blank filler that ends a commit log segment.
	ErrBlank = errors.New("blank filler record")
)

// Error is a remote error: a response code other than SUCCESS and its
// remark. errors.Is(err, &Error{Code: X}) matches any *Error with code X,
// so callers can test codes without caring about the remark.
type Error struct {
	Code   int16
	Remark string
}

func (e *Error) Error() string {
	if e.Remark == "" {
		return fmt.Sprintf("remote error code %d (%s)", e.Code, CodeName(e.Code))
	}
	return fmt.Sprintf("remote error code %d (%s): %s", e.Code, CodeName(e.Code), e.Remark)
}

// Is matches by code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// NewError builds an *Error with a formatted remark.
func NewError(code int16, format string, args ...any) *Error {
	return &Error{Code: code, Remark: fmt.Sprintf(format, args...)}
}

var responseNames = map[int16]string{
	Success: "SUCCESS", SystemError: "SYSTEM_ERROR", SystemBusy: "SYSTEM_BUSY",
	RequestCodeNotSupported: "REQUEST_CODE_NOT_SUPPORTED", TransactionFailed: "TRANSACTION_FAILED",
	FlushDiskTimeout: "FLUSH_DISK_TIMEOUT", SlaveNotAvailable: "SLAVE_NOT_AVAILABLE",
	FlushSlaveTimeout: "FLUSH_SLAVE_TIMEOUT", MessageIllegal: "MESSAGE_ILLEGAL",
	ServiceNotAvailable: "SERVICE_NOT_AVAILABLE", VersionNotSupported: "VERSION_NOT_SUPPORTED",
	NoPermission: "NO_PERMISSION", TopicNotExist: "TOPIC_NOT_EXIST", TopicExistAlready: "TOPIC_EXIST_ALREADY",
	PullNotFound: "PULL_NOT_FOUND", PullRetryImmediately: "PULL_RETRY_IMMEDIATELY",
	PullOffsetMoved: "PULL_OFFSET_MOVED", QueryNotFound: "QUERY_NOT_FOUND",
	SubscriptionParseFailed: "SUBSCRIPTION_PARSE_FAILED", SubscriptionNotExist: "SUBSCRIPTION_NOT_EXIST",
	SubscriptionNotLatest: "SUBSCRIPTION_NOT_LATEST", SubscriptionGroupNotExist: "SUBSCRIPTION_GROUP_NOT_EXIST",
	FilterDataNotExist: "FILTER_DATA_NOT_EXIST", FilterDataNotLatest: "FILTER_DATA_NOT_LATEST",
	TransactionShouldCommit: "TRANSACTION_SHOULD_COMMIT", TransactionShouldRollback: "TRANSACTION_SHOULD_ROLLBACK",
	TransactionStateUnknown: "TRANSACTION_STATE_UNKNOW", TransactionStateGroupWrong: "TRANSACTION_STATE_GROUP_WRONG",
	ConsumerNotOnline: "CONSUMER_NOT_ONLINE", ConsumeMsgTimeout: "CONSUME_MSG_TIMEOUT", NoMessage: "NO_MESSAGE",
	UpdateAndCreateACLFailed: "UPDATE_AND_CREATE_ACL_CONFIG_FAILED", DeleteACLFailed: "DELETE_ACL_CONFIG_FAILED",
	UpdateGlobalWhiteAddrsFail: "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED", FlowControl: "FLOW_CONTROL",
	TideAlreadyDelivered: "TIDE_ALREADY_DELIVERED", TideProducerFenced: "TIDE_PRODUCER_FENCED",
	TideSequenceOutOfOrder: "TIDE_SEQUENCE_OUT_OF_ORDER",
}

// CodeName returns the RocketMQ name of a response code ("UNKNOWN" if none).
func CodeName(code int16) string {
	if n, ok := responseNames[code]; ok {
		return n
	}
	return "UNKNOWN"
}
