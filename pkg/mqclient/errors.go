package mqclient

import "errors"

// Sentinel errors of the client. Returned errors wrap them (test with
// errors.Is); broker answers also wrap a *protocol.Error carrying the
// response code, so errors.Is(err, &protocol.Error{Code: protocol.TopicNotExist})
// works as well.
var (
	// ErrClosed: the Producer, PushConsumer or Admin was shut down (or
	// never started).
	ErrClosed = errors.New("mqclient: closed")
	// ErrNotStarted: a call that needs a running client came before Start.
	ErrNotStarted = errors.New("mqclient: not started")
	// ErrStarted: Start or Subscribe was called on a running client.
	ErrStarted = errors.New("mqclient: already started")
	// ErrDuplicateGroup: a PushConsumer of the same consumer group is
	// already running on the shared Client.
	ErrDuplicateGroup = errors.New("mqclient: consumer group already running on this client")
	// ErrInvalidOption: an option value was rejected by validation.
	ErrInvalidOption = errors.New("mqclient: invalid option")
	// ErrInvalidMessage: a message failed validation before it was sent
	// (empty topic or body, bad topic name, too large, mixed batch).
	ErrInvalidMessage = errors.New("mqclient: invalid message")
	// ErrTopicNotFound: no NameServer knows a route for the topic.
	ErrTopicNotFound = errors.New("mqclient: topic route not found")
	// ErrNoNameServer: no NameServer address is configured or none answered.
	ErrNoNameServer = errors.New("mqclient: no name server reachable")
	// ErrBrokerNotFound: the route names a broker with no usable address.
	ErrBrokerNotFound = errors.New("mqclient: broker address not found")
	// ErrSendFailed: every send attempt failed; the error also wraps the
	// last attempt's cause.
	ErrSendFailed = errors.New("mqclient: send failed")
	// ErrNotSupported: the broker answered REQUEST_CODE_NOT_SUPPORTED.
	ErrNotSupported = errors.New("mqclient: not supported by broker")
	// ErrProducerFenced: a newer instance of this stable producer
	// (WithStableProducerID) started; the broker refuses this one's sends
	// (TIDE_PRODUCER_FENCED). Permanent: every later send fails too.
	ErrProducerFenced = errors.New("mqclient: producer fenced by a newer instance")
	// ErrSequenceOutOfOrder: the broker no longer remembers the sequence
	// of a retried send (TIDE_SEQUENCE_OUT_OF_ORDER: more than its window
	// of newer sends of this producer were stored on the queue meanwhile),
	// so it could not tell a retry from a new message and stored nothing.
	// An earlier attempt may have stored the message.
	ErrSequenceOutOfOrder = errors.New("mqclient: send sequence out of the broker's window")
)
