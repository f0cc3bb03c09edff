package ha

import (
	"errors"
	"fmt"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// ErrBadMetadata: a Metadata body does not decode.
var ErrBadMetadata = errors.New("ha: malformed metadata")

// Metadata is what a slave copies from its master besides the commit log
// (RocketMQ's SlaveSynchronize), so that it can serve consumers. A slave
// fetches it at the latest every DefaultMetadataSyncInterval; the transport (the
// TideGetMetadata request served by the master) belongs to the broker. The
// body layout is protocol.BrokerMetadata's.
type Metadata = protocol.BrokerMetadata

// DecodeMetadata parses a body made by Encode. Every map of the result is
// non-nil, so the caller can replace its tables with them directly.
func DecodeMetadata(b []byte) (*Metadata, error) {
	m, err := protocol.DecodeBrokerMetadata(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMetadata, err)
	}
	return m, nil
}
