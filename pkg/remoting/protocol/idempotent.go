package protocol

import (
	"fmt"
	"strconv"
	"strings"
)

// Idempotent sends (Tide extension "idempotentSend", modelled on Kafka's
// idempotent producer): a producer obtains a producer id and an epoch from
// each broker master it sends to (TideInitProducerID) and stamps every
// message with (producer id, epoch, sequence), the sequence counting the
// messages it sent to one queue. The broker keeps the last few stamps of
// every (producer id, topic, queue) with where it stored them, and answers
// a retry of a stored message SEND_OK with the original message id and
// queue offset instead of storing it again.
//
// The stamp travels as one message property, so nothing else on the wire
// changes: an Apache RocketMQ broker (or a Tide broker with
// tideExtensions=false) stores a stamped message like any other, and the
// official client never sees a new header field. In a batch every item
// carries its own stamp in its own properties, with consecutive sequences.
//
// Property PropProducerStamp, value in ASCII decimal:
//
//	TIDE_PSEQ = <producerId> ":" <epoch> ":" <sequence>
//	            int64 > 0        int64 >= 0  int64 >= 0
//
//	e.g. TIDE_PSEQ\x01 4611686018427387905:1733090000123:17 \x02
//	     (\x01 and \x02 are the property separators of EncodeProperties)
const (
	// TideInitProducerID: InitProducerIDRequestHeader; the response
	// carries InitProducerIDResponseHeader. A RocketMQ broker (or a Tide
	// broker with tideExtensions=false) answers REQUEST_CODE_NOT_SUPPORTED,
	// and the producer then sends unstamped.
	TideInitProducerID int16 = 10007
)

// Idempotent-send response codes. The remark says what happened in words.
const (
	// TideProducerFenced answers a stamped send (or a TideInitProducerID
	// asking to bump an epoch) whose epoch is older than the one the
	// broker knows for the producer id: a newer instance of the same
	// stable producer started. Permanent: the old instance must stop.
	TideProducerFenced int16 = 10102
	// TideSequenceOutOfOrder answers a stamped send whose sequence is
	// below the window the broker remembers for its queue, so it cannot
	// tell whether it is a retry of a stored message. Nothing is stored.
	// The producer reports the send as failed (the message may have been
	// stored by an earlier attempt) and goes on with new sequences.
	TideSequenceOutOfOrder int16 = 10103
)

// PropProducerStamp is the message property carrying the stamp.
const PropProducerStamp = "TIDE_PSEQ"

// ProducerStamp identifies one message of an idempotent producer.
type ProducerStamp struct {
	ProducerID int64
	Epoch      int64
	Sequence   int64
}

// String returns the PropProducerStamp value.
func (s ProducerStamp) String() string {
	return string(s.AppendValue(make([]byte, 0, 48)))
}

// AppendValue appends the PropProducerStamp value
// (producerID ':' epoch ':' sequence, decimal) to dst.
func (s ProducerStamp) AppendValue(dst []byte) []byte {
	dst = strconv.AppendInt(dst, s.ProducerID, 10)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, s.Epoch, 10)
	dst = append(dst, ':')
	return strconv.AppendInt(dst, s.Sequence, 10)
}

// ParseProducerStamp parses a PropProducerStamp value. A malformed value
// (or a producer id <= 0, or a negative epoch or sequence) is ErrBadField.
func ParseProducerStamp(v string) (ProducerStamp, error) {
	var s ProducerStamp
	bad := func() error {
		return fmt.Errorf("%w: %s=%q is not producerId:epoch:sequence", ErrBadField, PropProducerStamp, v)
	}
	var nums [3]int64
	rest := v
	for i := range nums {
		part := rest
		if i < 2 {
			var ok bool
			if part, rest, ok = strings.Cut(rest, ":"); !ok {
				return s, bad()
			}
		}
		n, err := strconv.ParseInt(part, 10, 64)
		if err != nil || n < 0 {
			return s, bad()
		}
		nums[i] = n
	}
	if nums[0] == 0 {
		return s, fmt.Errorf("%w: %s=%q has producer id 0", ErrBadField, PropProducerStamp, v)
	}
	return ProducerStamp{ProducerID: nums[0], Epoch: nums[1], Sequence: nums[2]}, nil
}

// InitProducerIDRequestHeader is the header of TideInitProducerID.
// Required: producerGroup.
//
// With InstanceName empty the broker hands out a fresh producer id.
// With InstanceName set (a stable producer: same group and instance name
// across restarts, and every transactional producer) it hands out the id
// of that (group, instance) with an epoch above every epoch it gave that
// id before, which fences the previous instance: its sends with the old
// epoch are refused TideProducerFenced from then on.
//
//rmq:codec
type InitProducerIDRequestHeader struct {
	ProducerGroup string `rmq:"producerGroup,required"`
	InstanceName  string `rmq:"instanceName,omitempty"`
}

// InitProducerIDResponseHeader is the header of a SUCCESS answer to
// TideInitProducerID. Required: producerId, epoch.
//
//rmq:codec
type InitProducerIDResponseHeader struct {
	ProducerID int64 `rmq:"producerId,required"`
	Epoch      int64 `rmq:"epoch,required"`
}

// validate rejects a producer id that is not positive (called by the
// generated Decode).
func (h *InitProducerIDResponseHeader) validate() error {
	if h.ProducerID <= 0 {
		return fmt.Errorf("%w: producerId=%d", ErrBadField, h.ProducerID)
	}
	return nil
}

// MaxStampPropertyLen bounds the encoded stamp property
// (TIDE_PSEQ 0x01 <3 int64s and 2 colons> 0x02).
const MaxStampPropertyLen = len(PropProducerStamp) + 1 + 3*19 + 2 + 1

// AppendStampProperty appends the stamp as an encoded property
// (PropProducerStamp 0x01 value 0x02), to follow other encoded properties.
func AppendStampProperty(dst []byte, s ProducerStamp) []byte {
	dst = append(dst, PropProducerStamp...)
	dst = append(dst, NameValueSeparator)
	return append(s.AppendValue(dst), PropertySeparator)
}
