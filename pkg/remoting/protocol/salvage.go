package protocol

import "encoding/binary"

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
