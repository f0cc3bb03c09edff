package ha

import "errors"

// Sentinel errors of the package.
var (
	// ErrSlaveNotAvailable: WaitSlaveAck found no connected slave, or the
	// best one more than MaxGapNotInSync behind (RocketMQ's
	// SLAVE_NOT_AVAILABLE, response code 11).
	ErrSlaveNotAvailable = errors.New("ha: slave not available")
	// ErrFlushSlaveTimeout: no slave acked the offset within SlaveTimeout
	// (RocketMQ's FLUSH_SLAVE_TIMEOUT, response code 12). The message is
	// stored on the master; it may still reach the slave later.
	ErrFlushSlaveTimeout = errors.New("ha: flush slave timeout")
	// ErrClosed: the server or client is closed.
	ErrClosed = errors.New("ha: closed")
	// ErrProtocol: the peer broke the HA protocol (bad header, an ack
	// going backwards or past what was sent).
	ErrProtocol = errors.New("ha: protocol violation")
	// ErrDivergent: the slave reported more commit log than the master
	// has; their histories differ and the master refuses to stream.
	ErrDivergent = errors.New("ha: slave is ahead of the master (divergent commit logs)")
	// ErrGap: a transfer does not start at the slave's commit log end
	// (it would leave a gap or duplicate data); the slave reconnects.
	ErrGap = errors.New("ha: transfer does not continue the slave's commit log")
	// ErrBadOptions: options failed validation.
	ErrBadOptions = errors.New("ha: invalid options")
)
