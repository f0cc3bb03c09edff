package v1

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// ErrUnknownTag is returned by Decode for a tag that names no event type.
var ErrUnknownTag = errors.New("event: unknown tag")

// Event is implemented by every order-scoped event payload: it names its
// order (the sharding key) and its per-order sequence number.
type Event interface {
	proto.Message
	GetOrderId() string
	GetSeq() int64
}

// Bodies are protojson with the proto field names: readable in the broker's
// admin tools and dead-letter queues, and tolerant of fields added later.
var (
	marshalOpts   = protojson.MarshalOptions{UseProtoNames: true}
	unmarshalOpts = protojson.UnmarshalOptions{DiscardUnknown: true}
)

// Tag returns the message tag for an event payload: its message name
// (OrderCreated, StockReserved, ...).
func Tag(m proto.Message) string {
	return string(m.ProtoReflect().Descriptor().Name())
}

// Marshal encodes an event payload as a message body.
func Marshal(m proto.Message) ([]byte, error) {
	b, err := marshalOpts.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("event: marshal %s: %w", Tag(m), err)
	}
	return b, nil
}

// Unmarshal decodes a message body into m.
func Unmarshal(body []byte, m proto.Message) error {
	if err := unmarshalOpts.Unmarshal(body, m); err != nil {
		return fmt.Errorf("event: unmarshal %s: %w", Tag(m), err)
	}
	return nil
}

// New returns an empty payload for a tag, or ErrUnknownTag.
func New(tag string) (proto.Message, error) {
	switch tag {
	case TagOrderCreated:
		return &OrderCreated{}, nil
	case TagOrderCancelled:
		return &OrderCancelled{}, nil
	case TagOrderPaid:
		return &OrderPaid{}, nil
	case TagOrderCancelTimer:
		return &OrderCancelTimer{}, nil
	case TagStockReserved:
		return &StockReserved{}, nil
	case TagStockRejected:
		return &StockRejected{}, nil
	case TagStockReleased:
		return &StockReleased{}, nil
	case TagPaymentSucceeded:
		return &PaymentSucceeded{}, nil
	case TagPaymentRefunded:
		return &PaymentRefunded{}, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownTag, tag)
}

// Decode decodes a message body by its tag.
func Decode(tag string, body []byte) (proto.Message, error) {
	m, err := New(tag)
	if err != nil {
		return nil, err
	}
	if err := Unmarshal(body, m); err != nil {
		return nil, err
	}
	return m, nil
}
