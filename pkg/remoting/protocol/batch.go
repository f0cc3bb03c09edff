package protocol

import (
	"encoding/binary"
	"fmt"
)

// Batch body record layout (codes 320 and Java 310-batch), big-endian,
// records back to back:
//
//	+-----------+-------+--------+------+---------+------+---------+-------+
//	| totalSize | magic | bodyCRC| flag | bodyLen | body | propLen | props |
//	|     4     |   4   |   4    |  4   |    4    |  n   |    2    |   p   |
//	+-----------+-------+--------+------+---------+------+---------+-------+
//
// totalSize = 20 + n + 2 + p. Clients write 0 for magic and CRC.

// BatchItem is one message of a batch body. Properties is the encoded
// property string.
type BatchItem struct {
	Flag       int32
	Body       []byte
	Properties string
}

// AppendBatch appends the batch body records of items to dst.
func AppendBatch(dst []byte, items []BatchItem) ([]byte, error) {
	for i, it := range items {
		if len(it.Properties) > MaxPropertiesLength {
			return dst, fmt.Errorf("%w: batch item %d: properties of %d bytes exceed %d", ErrMalformed, i, len(it.Properties), MaxPropertiesLength)
		}
		dst = AppendBatchItem(dst, it.Flag, it.Body, it.Properties, nil)
	}
	return dst, nil
}

// DecodeBatch splits a batch body into its items. Bodies alias buf. Any
// inconsistency (a size that does not match its parts, a truncated record)
// is ErrMalformed; an empty body is an error too, since a batch has at
// least one message.
func DecodeBatch(buf []byte) ([]BatchItem, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("%w: empty batch body", ErrMalformed)
	}
	be := binary.BigEndian
	var items []BatchItem
	for off := 0; off < len(buf); {
		r := buf[off:]
		if len(r) < 22 {
			return nil, fmt.Errorf("%w: batch record %d truncated at byte %d", ErrMalformed, len(items), off)
		}
		total := be.Uint32(r)
		if total < 22 || uint64(total) > uint64(len(r)) {
			return nil, fmt.Errorf("%w: batch record %d size %d out of range", ErrMalformed, len(items), total)
		}
		r = r[:total]
		n := be.Uint32(r[16:])
		if uint64(n) > uint64(len(r)-22) {
			return nil, fmt.Errorf("%w: batch record %d body length %d exceeds record", ErrMalformed, len(items), n)
		}
		p := 20 + int(n)
		pl := int(be.Uint16(r[p:]))
		if p+2+pl != len(r) {
			return nil, fmt.Errorf("%w: batch record %d properties length %d does not end the record", ErrMalformed, len(items), pl)
		}
		items = append(items, BatchItem{
			Flag:       int32(be.Uint32(r[12:])),
			Body:       r[20:p],
			Properties: string(r[p+2:]),
		})
		off += int(total)
	}
	return items, nil
}

// BatchItemLen returns the encoded length of a batch item with a body of
// bodyLen bytes and properties of propsLen bytes (AppendBatch's layout).
func BatchItemLen(bodyLen, propsLen int) int { return 20 + bodyLen + 2 + propsLen }

// AppendBatchItem appends one batch item (AppendBatch's layout) whose
// properties are props followed by extra (already encoded, e.g. by
// AppendStampProperty): a producer adds its per-message stamp without
// encoding the other properties again.
func AppendBatchItem(dst []byte, flag int32, body []byte, props string, extra []byte) []byte {
	be := binary.BigEndian
	plen := len(props) + len(extra)
	dst = be.AppendUint32(dst, uint32(BatchItemLen(len(body), plen)))
	dst = be.AppendUint32(dst, 0)
	dst = be.AppendUint32(dst, 0)
	dst = be.AppendUint32(dst, uint32(flag))
	dst = be.AppendUint32(dst, uint32(len(body)))
	dst = append(dst, body...)
	dst = be.AppendUint16(dst, uint16(plen))
	dst = append(dst, props...)
	return append(dst, extra...)
}
