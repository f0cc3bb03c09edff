package protocol

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"
)

// DefaultMaxFrameSize is the largest frame accepted by ReadCommand when the
// caller gives no limit: 16 MiB, RocketMQ's frameMaxLength.
const DefaultMaxFrameSize = 16 << 20

// maxHeaderLength is the largest header the 24-bit length field can state.
const maxHeaderLength = 1<<24 - 1

// Frame layout (all integers big-endian):
//
//	 0               4               8
//	+---------------+---------------+----------------------+-----------+
//	| totalLength   | type|hdrLen   | header (hdrLen)      | body      |
//	| = 4+hdrLen+   | 1 B | 3 B     | JSON or ROCKETMQ     | (rest)    |
//	|   bodyLen     |               | binary               |           |
//	+---------------+---------------+----------------------+-----------+
//
// totalLength does not count itself. The serialize type (0 JSON, 1
// ROCKETMQ) sits in the high byte of the second word, the header length in
// its low 24 bits. bodyLength = totalLength - 4 - hdrLen.

// AppendFrame appends the full frame of c (length prefix included) to dst.
func (c *Command) AppendFrame(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	hdrStart := len(dst)
	switch c.SerializeType {
	case SerializeJSON:
		dst = c.appendJSONHeader(dst)
	case SerializeRocketMQ:
		dst = c.appendBinaryHeader(dst)
	default:
		return dst[:start], fmt.Errorf("%w: unknown serialize type %d", ErrMalformed, c.SerializeType)
	}
	hdrLen := len(dst) - hdrStart
	if hdrLen > maxHeaderLength {
		return dst[:start], fmt.Errorf("%w: header of %d bytes exceeds the 24-bit length field", ErrFrameTooLarge, hdrLen)
	}
	dst = append(dst, c.Body...)
	total := len(dst) - start - 4
	if uint64(total) > 0x7fffffff {
		return dst[:start], fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, total)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(total))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(c.SerializeType)<<24|uint32(hdrLen))
	return dst, nil
}

// Encode returns the full frame of c.
func (c *Command) Encode() ([]byte, error) {
	return c.AppendFrame(make([]byte, 0, 256+len(c.Body)))
}

// ReadCommand reads one frame from r and decodes it. Frames whose length
// field exceeds maxFrame (DefaultMaxFrameSize when maxFrame <= 0) are
// rejected with ErrFrameTooLarge before anything is allocated, so a peer
// cannot make the reader allocate arbitrary amounts of memory.
//
// A decode error (ErrMalformed) leaves r positioned after the frame, so the
// caller may answer it and go on; ErrFrameTooLarge and I/O errors leave
// the stream unsynchronised and the connection must be closed.
func ReadCommand(r io.Reader, maxFrame int) (*Command, error) {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameSize
	}
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, err
	}
	total := binary.BigEndian.Uint32(lenBuf[:])
	if err := CheckFrameLength(total, maxFrame); err != nil {
		return nil, err
	}
	buf := make([]byte, total)
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return DecodeFrame(buf)
}

// DecodeFrame decodes a frame without its 4-byte total-length prefix:
// the header word, the header and the body. The returned Command's Body
// aliases buf.
func DecodeFrame(buf []byte) (*Command, error) {
	if len(buf) < 4 {
		return nil, fmt.Errorf("%w: %d bytes, need at least the 4-byte header word", ErrTruncated, len(buf))
	}
	word := binary.BigEndian.Uint32(buf)
	st := byte(word >> 24)
	hl := int(word & 0xFFFFFF)
	if hl > len(buf)-4 {
		return nil, fmt.Errorf("%w: header length %d exceeds frame body of %d bytes", ErrMalformed, hl, len(buf)-4)
	}
	hdr := buf[4 : 4+hl]
	var (
		c   *Command
		err error
	)
	switch st {
	case SerializeJSON:
		c, err = decodeJSONHeader(hdr)
	case SerializeRocketMQ:
		c, err = decodeBinaryHeader(hdr)
	default:
		return nil, fmt.Errorf("%w: unknown serialize type %d", ErrMalformed, st)
	}
	if err != nil {
		return nil, err
	}
	c.SerializeType = st
	if body := buf[4+hl:]; len(body) > 0 {
		c.Body = body
	}
	return c, nil
}

// appendJSONHeader writes the header in the key order the Go client uses.
// Ext keys are sorted so that encodings are deterministic (golden files).
func (c *Command) appendJSONHeader(dst []byte) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.Code), 10)
	dst = append(dst, `,"language":"`...)
	dst = append(dst, LanguageName(c.Language)...)
	dst = append(dst, `","version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(c.Opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(c.Flag), 10)
	dst = append(dst, `,"remark":`...)
	dst = appendJSONString(dst, c.Remark)
	dst = append(dst, `,"extFields":{`...)
	if c.Header != nil {
		dst = c.appendJSONExtTyped(dst)
	} else {
		var kb [32]string
		for i, k := range sortedKeys(kb[:0], c.ExtFields) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONEntry(dst, k, c.ExtFields[k])
		}
	}
	dst = append(dst, `},"serializeTypeCurrentRPC":"JSON"}`...)
	return dst
}

func appendJSONEntry[K, V ~string | ~[]byte](dst []byte, k K, v V) []byte {
	dst = appendJSONString(dst, k)
	dst = append(dst, ':')
	return appendJSONString(dst, v)
}

// appendJSONExtTyped writes the ext entries of c's typed Header and its
// ExtFields (which wins on a clash, as in extMap) in key order, exactly
// as from the map extMap returns but without it: Header's entries,
// already in key order, are written in binary after dst's end and read
// back, merged with ExtFields' sorted keys, into JSON, which then takes
// their place.
func (c *Command) appendJSONExtTyped(dst []byte) []byte {
	start := len(dst)
	dst = c.Header.AppendBinaryExt(dst)
	bin := dst[start:] // read only: the JSON goes after it
	jsonStart := len(dst)
	var kb [32]string
	keys := sortedKeys(kb[:0], c.ExtFields)
	for first := true; len(bin) > 0 || len(keys) > 0; first = false {
		if !first {
			dst = append(dst, ',')
		}
		var hk, hv []byte
		if len(bin) > 0 {
			kl := int(bin[0])<<8 | int(bin[1])
			hk = bin[2 : 2+kl]
			vl := int(bin[2+kl])<<24 | int(bin[3+kl])<<16 | int(bin[4+kl])<<8 | int(bin[5+kl])
			hv = bin[6+kl : 6+kl+vl]
		}
		switch {
		case len(keys) == 0 || len(bin) > 0 && string(hk) < keys[0]:
			dst = appendJSONEntry(dst, hk, hv)
			bin = bin[6+len(hk)+len(hv):]
		default:
			if len(bin) > 0 && string(hk) == keys[0] {
				bin = bin[6+len(hk)+len(hv):] // ExtFields wins
			}
			dst = appendJSONEntry(dst, keys[0], c.ExtFields[keys[0]])
			keys = keys[1:]
		}
	}
	n := copy(dst[start:], dst[jsonStart:])
	return dst[:start+n]
}

// sortedKeys appends m's keys to keys and sorts them (the wire order,
// fixed by the golden frames). slices.Sort, unlike sort.Strings, does not
// make the slice escape, so with a buffer from the caller's stack small
// headers sort without allocating.
func sortedKeys(keys []string, m map[string]string) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Control characters (the
// 0x01/0x02 separators of property strings among them) are written as
// \u00XX; invalid UTF-8 is replaced by U+FFFD as encoding/json does.
func appendJSONString[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\':
				dst = append(dst, '\\', b)
			case b == '\n':
				dst = append(dst, '\\', 'n')
			case b == '\r':
				dst = append(dst, '\\', 'r')
			case b == '\t':
				dst = append(dst, '\\', 't')
			case b < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			default:
				dst = append(dst, b)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))])) // at most 4 bytes: no allocation
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

type jsonHeader struct {
	Code      int16             `json:"code"`
	Language  string            `json:"language"`
	Version   int32             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark"`
	ExtFields map[string]string `json:"extFields"`
}

type looseJSONHeader struct {
	Code      int16                      `json:"code"`
	Language  json.RawMessage            `json:"language"`
	Version   int32                      `json:"version"`
	Opaque    int32                      `json:"opaque"`
	Flag      int32                      `json:"flag"`
	Remark    *string                    `json:"remark"`
	ExtFields map[string]json.RawMessage `json:"extFields"`
}

// fastJSONHeader switches decodeJSONHeaderFast on (tests compare it with
// the encoding/json path by switching it off).
var fastJSONHeader = true

func decodeJSONHeader(hdr []byte) (*Command, error) {
	if fastJSONHeader {
		if c, ok := decodeJSONHeaderFast(hdr); ok {
			return c, nil
		}
	}
	var h jsonHeader
	if err := json.Unmarshal(hdr, &h); err == nil {
		ext := h.ExtFields
		if ext == nil {
			ext = map[string]string{}
		}
		return &Command{Code: h.Code, Language: LanguageCode(h.Language), Version: h.Version,
			Opaque: h.Opaque, Flag: h.Flag, Remark: h.Remark, ExtFields: ext}, nil
	}
	// Slow path: tolerate ext values that are numbers or booleans and a
	// language that is not a string, as some non-Go peers send them.
	var l looseJSONHeader
	if err := json.Unmarshal(hdr, &l); err != nil {
		return nil, fmt.Errorf("%w: json header: %v", ErrMalformed, err)
	}
	c := &Command{Code: l.Code, Version: l.Version, Opaque: l.Opaque, Flag: l.Flag, ExtFields: make(map[string]string, len(l.ExtFields))}
	if l.Remark != nil {
		c.Remark = *l.Remark
	}
	var lang string
	if json.Unmarshal(l.Language, &lang) == nil {
		c.Language = LanguageCode(lang)
	} else {
		c.Language = LangOther
	}
	for k, raw := range l.ExtFields {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			c.ExtFields[k] = s
		} else if string(raw) != "null" {
			c.ExtFields[k] = string(raw)
		}
	}
	return c, nil
}
