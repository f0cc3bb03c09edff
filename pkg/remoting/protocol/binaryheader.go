package protocol

import (
	"encoding/binary"
	"fmt"
)

// ROCKETMQ binary header (serialize type 1; Java RocketMQSerializable),
// all integers big-endian:
//
//	 0      2    3         5        9        13       17
//	+------+----+---------+--------+--------+--------+--------+--------+-------------+
//	| code |lang| version | opaque | flag   | remLen | remark | extLen | ext entries |
//	| i16  | u8 |  i16    |  i32   |  i32   |  i32   | remLen |  i32   | extLen B    |
//	+------+----+---------+--------+--------+--------+--------+--------+-------------+
//
// Each ext entry:
//
//	+--------+-----------+--------+--------------+
//	| keyLen | key       | valLen | value        |
//	| i16    | keyLen B  | i32    | valLen B     |
//	+--------+-----------+--------+--------------+
//
// Strings are UTF-8 without terminator. Java decodes the entries into a
// HashMap, so their order carries no meaning; we write them sorted by key
// (the typed headers' AppendBinaryExt first, see Command.Header) so that
// encodings are deterministic (golden files).
const binaryFixedHeader = 21

func (c *Command) appendBinaryHeader(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Code))
	dst = append(dst, c.Language)
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.Remark)))
	dst = append(dst, c.Remark...)
	lenPos := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	if c.Header != nil {
		dst = c.Header.AppendBinaryExt(dst)
	}
	var kb [32]string
	for _, k := range sortedKeys(kb[:0], c.ExtFields) {
		dst = appendExtString(dst, k, c.ExtFields[k])
	}
	binary.BigEndian.PutUint32(dst[lenPos:], uint32(len(dst)-lenPos-4))
	return dst
}

// decodeBinaryHeader decodes a ROCKETMQ header. The ext keys and values
// are substrings of one string copied from the whole ext region: one
// allocation for all of them instead of two per entry (a retained value
// keeps the region alive, a few hundred bytes).
func decodeBinaryHeader(h []byte) (*Command, error) {
	if len(h) < binaryFixedHeader {
		return nil, fmt.Errorf("%w: binary header of %d bytes, need %d", ErrMalformed, len(h), binaryFixedHeader)
	}
	c := &Command{
		Code:     int16(binary.BigEndian.Uint16(h[0:])),
		Language: h[2],
		Version:  int32(int16(binary.BigEndian.Uint16(h[3:]))),
		Opaque:   int32(binary.BigEndian.Uint32(h[5:])),
		Flag:     int32(binary.BigEndian.Uint32(h[9:])),
	}
	rl := binary.BigEndian.Uint32(h[13:])
	p := 17
	if uint64(rl) > uint64(len(h)-p) {
		return nil, fmt.Errorf("%w: remark length %d exceeds header", ErrMalformed, rl)
	}
	c.Remark = string(h[p : p+int(rl)])
	p += int(rl)
	if len(h)-p < 4 {
		return nil, fmt.Errorf("%w: binary header ends before ext length", ErrMalformed)
	}
	el := binary.BigEndian.Uint32(h[p:])
	p += 4
	if uint64(el) > uint64(len(h)-p) {
		return nil, fmt.Errorf("%w: ext length %d exceeds header", ErrMalformed, el)
	}
	ext := h[p : p+int(el)]
	n, err := countExtEntries(ext)
	if err != nil {
		return nil, err
	}
	s := string(ext)
	if typedHeaders && !c.IsResponse() && binaryTypedExt(c, s) {
		return c, nil
	}
	c.ExtFields = make(map[string]string, n)
	for i := 0; i < len(s); {
		var k, v string
		k, v, i = nextExt(s, i)
		c.ExtFields[k] = v
	}
	return c, nil
}

// binaryTypedExt reads the ext entries of a request (framing checked)
// into its typed header (c.Header) and the other fields (c.ExtFields),
// as typedheader.go describes. It reports false, leaving c alone, when
// the code has no typed header or it would not be exact.
func binaryTypedExt(c *Command, s string) bool {
	d := typedDecoder{h: newTypedHeader(c.Code)}
	if d.h == nil {
		return false
	}
	for i := 0; i < len(s); {
		var k, v string
		k, v, i = nextExt(s, i)
		if !d.set(k, v) {
			return false
		}
	}
	return d.done(c)
}

// countExtEntries checks the ext region's entry framing and counts the
// entries, so that decoding can size the map and slice without checks.
func countExtEntries(ext []byte) (int, error) {
	n := 0
	for len(ext) > 0 {
		if len(ext) < 2 {
			return 0, fmt.Errorf("%w: ext entry truncated", ErrMalformed)
		}
		kl := int(binary.BigEndian.Uint16(ext))
		ext = ext[2:]
		if kl > len(ext) || len(ext)-kl < 4 {
			return 0, fmt.Errorf("%w: ext key truncated", ErrMalformed)
		}
		ext = ext[kl:]
		vl := binary.BigEndian.Uint32(ext)
		ext = ext[4:]
		if uint64(vl) > uint64(len(ext)) {
			return 0, fmt.Errorf("%w: ext value truncated", ErrMalformed)
		}
		ext = ext[vl:]
		n++
	}
	return n, nil
}
