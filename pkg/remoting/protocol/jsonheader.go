package protocol

import (
	"strconv"
	"unicode/utf8"
)

// decodeJSONHeaderFast decodes the JSON headers every RocketMQ client and
// broker actually sends (the object written by appendJSONHeader and by
// fastjson: the known fields in exact case, string ext values, no nulls)
// without encoding/json's reflection. It allocates one string for the
// whole header (keys and unescaped values are substrings of it), the
// Command and the map: about 4 allocations per frame instead of ~26.
//
// ok is false for anything outside that subset (other key spellings,
// nulls, non-string ext values, floats, surrogate escapes, invalid UTF-8,
// malformed input); the caller then falls back to encoding/json, so the
// result for every input is exactly what encoding/json gives.
func decodeJSONHeaderFast(hdr []byte) (c *Command, ok bool) {
	p := jsonScanner{s: string(hdr)}
	c = &Command{Language: LanguageCode("")} // what encoding/json gives when "language" is missing
	if !p.consume('{') {
		return nil, false
	}
	if p.peekIs('}') {
		p.i++
		c.ExtFields = map[string]string{}
		return c, p.end()
	}
	for {
		key, ok := p.str()
		if !ok || !p.consume(':') {
			return nil, false
		}
		switch key {
		case "code":
			v, ok := p.int(16)
			if !ok {
				return nil, false
			}
			c.Code = int16(v)
		case "language":
			v, ok := p.str()
			if !ok {
				return nil, false
			}
			c.Language = LanguageCode(v)
		case "version":
			v, ok := p.int(32)
			if !ok {
				return nil, false
			}
			c.Version = int32(v)
		case "opaque":
			v, ok := p.int(32)
			if !ok {
				return nil, false
			}
			c.Opaque = int32(v)
		case "flag":
			v, ok := p.int(32)
			if !ok {
				return nil, false
			}
			c.Flag = int32(v)
		case "remark":
			v, ok := p.str()
			if !ok {
				return nil, false
			}
			c.Remark = v
		case "extFields":
			if !p.ext(c) {
				return nil, false
			}
		case "serializeTypeCurrentRPC":
			if _, ok := p.str(); !ok {
				return nil, false
			}
		default:
			// encoding/json matches field names case-insensitively and
			// skips unknown values of any type: leave that to it.
			return nil, false
		}
		if p.peekIs(',') {
			p.i++
			continue
		}
		if !p.consume('}') {
			return nil, false
		}
		break
	}
	if c.ExtFields == nil {
		c.ExtFields = map[string]string{}
	}
	return c, p.end()
}

// jsonScanner reads a JSON text held in one string.
type jsonScanner struct {
	s string
	i int
}

func (p *jsonScanner) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonScanner) peekIs(b byte) bool {
	p.skipSpace()
	return p.i < len(p.s) && p.s[p.i] == b
}

func (p *jsonScanner) consume(b byte) bool {
	if !p.peekIs(b) {
		return false
	}
	p.i++
	return true
}

// end reports whether only white space is left.
func (p *jsonScanner) end() bool {
	p.skipSpace()
	return p.i == len(p.s)
}

// int reads an integer that fits in bits (no fraction or exponent).
func (p *jsonScanner) int(bits int) (int64, bool) {
	p.skipSpace()
	start := p.i
	if p.i < len(p.s) && p.s[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || (p.s[digits] == '0' && p.i-digits > 1) {
		return 0, false
	}
	if p.i < len(p.s) {
		switch p.s[p.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	v, err := strconv.ParseInt(p.s[start:p.i], 10, bits)
	return v, err == nil
}

// str reads a string. Without escapes the result is a substring of the
// header (no allocation).
func (p *jsonScanner) str() (string, bool) {
	if !p.consume('"') {
		return "", false
	}
	start := p.i
	ascii := true
	for p.i < len(p.s) {
		b := p.s[p.i]
		switch {
		case b == '"':
			v := p.s[start:p.i]
			p.i++
			if !ascii && !utf8.ValidString(v) {
				return "", false // encoding/json replaces invalid bytes
			}
			return v, true
		case b == '\\':
			return p.escaped(start)
		case b < 0x20:
			return "", false
		case b >= utf8.RuneSelf:
			ascii = false
		}
		p.i++
	}
	return "", false
}

// escaped finishes a string that has escapes, from its first character at
// start.
func (p *jsonScanner) escaped(start int) (string, bool) {
	buf := make([]byte, 0, p.i-start+16)
	buf = append(buf, p.s[start:p.i]...)
	for p.i < len(p.s) {
		b := p.s[p.i]
		switch {
		case b == '"':
			p.i++
			if !utf8.Valid(buf) {
				return "", false
			}
			return string(buf), true
		case b < 0x20:
			return "", false
		case b != '\\':
			buf = append(buf, b)
			p.i++
			continue
		}
		if p.i+1 >= len(p.s) {
			return "", false
		}
		e := p.s[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			if p.i+4 > len(p.s) {
				return "", false
			}
			r, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
			if err != nil || (r >= 0xD800 && r <= 0xDFFF) {
				return "", false // surrogates (pairs or lone): encoding/json's rules
			}
			p.i += 4
			buf = utf8.AppendRune(buf, rune(r))
		default:
			return "", false
		}
	}
	return "", false
}

// ext reads the extFields object into c.ExtFields (string values only;
// duplicate keys: the last wins, as with encoding/json).
func (p *jsonScanner) ext(c *Command) bool {
	if !p.consume('{') {
		return false
	}
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, 16)
	}
	if p.peekIs('}') {
		p.i++
		return true
	}
	for {
		k, ok := p.str()
		if !ok || !p.consume(':') {
			return false
		}
		v, ok := p.str()
		if !ok {
			return false
		}
		c.ExtFields[k] = v
		if p.peekIs(',') {
			p.i++
			continue
		}
		return p.consume('}')
	}
}
