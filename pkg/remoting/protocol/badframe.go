package protocol

import (
	"encoding/binary"
	"fmt"
)

// Frame validation for readers of a stream of frames. A frame whose length
// prefix is out of bounds leaves the stream unsynchronised: the reader
// must close the connection. A frame read whole that does not decode (a
// header above the reader's limit, a broken header) leaves the stream in
// sync: when its opaque can be recovered the reader can tell the sender
// and go on reading.

// CheckFrameLength checks a frame's length prefix (the bytes that follow
// it: header word, header and body) against maxFrame, the largest frame
// the reader accepts. It returns an error wrapping ErrFrameTooLarge for a
// length below the 4-byte header word or above maxFrame.
func CheckFrameLength(total uint32, maxFrame int) error {
	if total < 4 {
		return fmt.Errorf("%w: frame length %d is shorter than its header word", ErrFrameTooLarge, total)
	}
	if uint64(total) > uint64(maxFrame) {
		return fmt.Errorf("%w: frame of %d bytes exceeds the limit of %d", ErrFrameTooLarge, total, maxFrame)
	}
	return nil
}

// CheckHeaderLength returns an error wrapping ErrHeaderTooLarge when the
// header length that the header word of buf (a frame without its length
// prefix, at least 4 bytes) states exceeds maxHeader; maxHeader <= 0 sets
// no limit. Such a frame is read whole, so the stream stays in sync.
func CheckHeaderLength(buf []byte, maxHeader int) error {
	if maxHeader <= 0 || len(buf) < 4 {
		return nil
	}
	if hl := int(binary.BigEndian.Uint32(buf) & 0xFFFFFF); hl > maxHeader {
		return fmt.Errorf("%w: header of %d bytes exceeds the limit of %d", ErrHeaderTooLarge, hl, maxHeader)
	}
	return nil
}

// BadFrame is what can be recovered of a frame that was read whole but
// did not decode: enough to answer it.
type BadFrame struct {
	Opaque        int32
	Flag          int32 // FlagResponse, FlagOneway bits as the sender set them
	SerializeType byte  // SerializeJSON when the type byte was unknown
	Err           error // why the frame did not decode
}

// InspectBadFrame recovers the opaque, flag and serialize type of buf (a
// frame without its length prefix) that failed to decode with err. ok is
// false when not even the opaque can be found: then the sender cannot be
// told, and the reader should close the connection.
func InspectBadFrame(buf []byte, err error) (b BadFrame, ok bool) {
	b.Opaque, b.Flag, b.SerializeType, ok = SalvageHeader(buf)
	b.Err = err
	return b, ok
}

// IsResponse reports whether the bad frame is a response: the caller
// waiting for b.Opaque gets b.Err.
func (b BadFrame) IsResponse() bool { return b.Flag&FlagResponse != 0 }

// IsOneway reports whether the bad frame is a oneway request, which gets
// no answer.
func (b BadFrame) IsOneway() bool { return !b.IsResponse() && b.Flag&FlagOneway != 0 }

// Reply is the answer to a bad request: SYSTEM_ERROR naming b.Err, with
// the request's opaque and serialize type, so that the sender's call fails
// at once rather than at its timeout.
func (b BadFrame) Reply() *Command {
	resp := NewResponse(nil, SystemError, "cannot decode request: "+b.Err.Error())
	resp.Opaque = b.Opaque
	resp.SerializeType = b.SerializeType
	return resp
}

// SalvageHeader recovers the opaque and flag of a frame (without its length
// prefix) whose header did not decode, so the sender can be told. A
// ROCKETMQ header has them at fixed offsets; for anything else the JSON
// text is scanned for the "opaque" and "flag" keys.
func SalvageHeader(buf []byte) (opaque, flag int32, st byte, ok bool) {
	if len(buf) < 4 {
		return 0, 0, 0, false
	}
	word := binary.BigEndian.Uint32(buf)
	st = byte(word >> 24)
	hdr := buf[4:]
	if hl := int(word & 0xFFFFFF); hl < len(hdr) {
		hdr = hdr[:hl]
	}
	if st == SerializeRocketMQ {
		if len(hdr) < 13 {
			return 0, 0, st, false
		}
		return int32(binary.BigEndian.Uint32(hdr[5:])), int32(binary.BigEndian.Uint32(hdr[9:])), st, true
	}
	opaque, ok = scanJSONInt(hdr, "opaque")
	if !ok {
		return 0, 0, 0, false
	}
	flag, _ = scanJSONInt(hdr, "flag")
	return opaque, flag, SerializeJSON, true
}

// scanJSONInt finds `"key"` followed by optional spaces, ':', optional
// spaces and an int32 in possibly broken JSON text.
func scanJSONInt(b []byte, key string) (int32, bool) {
	pat := `"` + key + `"`
	for i := 0; i+len(pat) <= len(b); i++ {
		if string(b[i:i+len(pat)]) != pat {
			continue
		}
		j := skipSpace(b, i+len(pat))
		if j >= len(b) || b[j] != ':' {
			continue
		}
		j = skipSpace(b, j+1)
		neg := false
		if j < len(b) && b[j] == '-' {
			neg = true
			j++
		}
		var v int64
		digits := 0
		for ; j < len(b) && b[j] >= '0' && b[j] <= '9'; j++ {
			v = v*10 + int64(b[j]-'0')
			if digits++; digits > 10 {
				return 0, false
			}
		}
		if neg {
			v = -v
		}
		if digits == 0 || v < -1<<31 || v > 1<<31-1 {
			return 0, false
		}
		return int32(v), true
	}
	return 0, false
}
