package ha

import (
	"encoding/binary"
	"fmt"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Wire format (RocketMQ 4.x HAService; see doc.go for the whole exchange).
//
// Slave -> master, the report (at connect, after applying data, every
// heartbeat interval):
//
//	 0               8
//	+---------------+
//	| max offset    |   int64 big-endian: end of the slave's commit log
//	+---------------+
//
// Master -> slave, the transfer:
//
//	 0               8       12                12+size
//	+---------------+-------+--------------------+
//	| start offset  | size  | raw commit log ... |
//	+---------------+-------+--------------------+
//	  int64 BE        int32 BE (0 = heartbeat, no body)
//
// Slave -> master, once after authentication and before the first report,
// only when both run in controller mode (ClientOptions.BrokerID,
// ServerOptions.ExpectBrokerID): the hello naming the slave's controller
// id, which the master needs to keep the SyncStateSet:
//
//	 0       4               12
//	+-------+---------------+
//	| magic | broker id     |   magic "TDH2" (0x54444832), id int64 BE > 0
//	+-------+---------------+
//
// Master -> slave, the transfer on a connection whose hello was "TDH2"
// (RocketMQ 5's AutoSwitchHAConnection header carries the same field):
// the 4.x header followed by the master's confirm offset, the commit log
// end every SyncStateSet member has, which bounds what the slave
// dispatches (serves to consumers):
//
//	 0               8       12              20                 20+size
//	+---------------+-------+---------------+--------------------+
//	| start offset  | size  | confirm offset| raw commit log ... |
//	+---------------+-------+---------------+--------------------+
//	  int64 BE        int32 BE  int64 BE >= 0
//
// A hello with the older magic "TDH1" (0x54444831: a slave from before
// the confirm offset) gets the 4.x transfer header; such a slave
// dispatches everything it receives. Without a hello (4.x master/slave
// mode) nothing changes.
const (
	helloMagicV1 = 0x54444831
	helloMagic   = 0x54444832
	helloSize    = 12
	reportSize   = 8
	headerSize   = 12
	// confirmHeaderSize is a controller-mode transfer header: headerSize
	// plus the confirm offset.
	confirmHeaderSize = headerSize + 8
	// maxFrameBody bounds one transfer body: the master never sends more
	// (it splits a record larger than this) and the slave rejects more.
	// It is far above maxMessageSize (4 MiB), so whole records fit.
	maxFrameBody = 64 << 20
)

func appendHello(b []byte, id int64) []byte {
	b = binary.BigEndian.AppendUint32(b, helloMagic)
	return binary.BigEndian.AppendUint64(b, uint64(id))
}

// decodeHello parses the hello; the id must be positive. confirm reports
// a "TDH2" hello: the slave reads confirm offsets in transfer headers.
func decodeHello(b []byte) (id int64, confirm bool, err error) {
	if len(b) < helloSize {
		return 0, false, fmt.Errorf("%w: no controller-mode hello (is the slave in controller mode too?)", ErrProtocol)
	}
	switch binary.BigEndian.Uint32(b) {
	case helloMagic:
		confirm = true
	case helloMagicV1:
	default:
		return 0, false, fmt.Errorf("%w: no controller-mode hello (is the slave in controller mode too?)", ErrProtocol)
	}
	id = int64(binary.BigEndian.Uint64(b[4:]))
	if id <= 0 {
		return 0, false, fmt.Errorf("%w: hello with broker id %d", ErrProtocol, id)
	}
	return id, confirm, nil
}

func appendReport(b []byte, off int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(off))
}

func decodeReport(b []byte) int64 { return int64(binary.BigEndian.Uint64(b[:reportSize])) }

func appendHeader(b []byte, start int64, size int) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(start))
	return binary.BigEndian.AppendUint32(b, uint32(size))
}

// appendConfirmHeader writes a controller-mode transfer header (the
// layout above): appendHeader's 12 bytes, then the confirm offset.
func appendConfirmHeader(b []byte, start int64, size int, confirm int64) []byte {
	b = appendHeader(b, start, size)
	return binary.BigEndian.AppendUint64(b, uint64(confirm))
}

// decodeHeader parses a transfer header; limit bounds the body size.
func decodeHeader(b []byte, limit int) (start int64, size int, err error) {
	if len(b) < headerSize {
		return 0, 0, fmt.Errorf("%w: header of %d bytes", ErrProtocol, len(b))
	}
	start = int64(binary.BigEndian.Uint64(b))
	n := int32(binary.BigEndian.Uint32(b[8:]))
	switch {
	case start < 0:
		return 0, 0, fmt.Errorf("%w: negative start offset %d", ErrProtocol, start)
	case n < 0 || int(n) > limit:
		return 0, 0, fmt.Errorf("%w: body size %d (limit %d)", ErrProtocol, n, limit)
	}
	return start, int(n), nil
}

// decodeConfirm parses the confirm offset of a controller-mode transfer
// header (all confirmHeaderSize bytes of it).
func decodeConfirm(b []byte) (int64, error) {
	if len(b) < confirmHeaderSize {
		return 0, fmt.Errorf("%w: controller-mode header of %d bytes", ErrProtocol, len(b))
	}
	c := int64(binary.BigEndian.Uint64(b[headerSize:]))
	if c < 0 {
		return 0, fmt.Errorf("%w: negative confirm offset %d", ErrProtocol, c)
	}
	return c, nil
}

// wholeRecords returns how many leading bytes of b, a commit log range
// that never crosses a segment end, are complete stored records; a blank
// filler takes the rest of b (it runs to the segment end). When b starts
// with a message record longer than b, it returns 0 and that record's
// size in need. It returns (0, 0) when b does not start with a record
// (the zeros after a filler, a resume point inside a record, damage):
// such bytes are sent as they are.
func wholeRecords(b []byte) (n, need int) {
	for n < len(b) {
		size, magic, err := protocol.PeekRecord(b[n:])
		switch {
		case err != nil:
			return n, 0
		case magic == protocol.BlankMagic && size >= protocol.BlankRecordSize:
			return len(b), 0
		case magic != protocol.MessageMagic || size < protocol.RecordMinSize:
			return n, 0
		case int(size) > len(b)-n:
			if n == 0 {
				return 0, int(size)
			}
			return n, 0
		}
		n += int(size)
	}
	return n, 0
}
