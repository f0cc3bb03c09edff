package protocol

import (
	"strconv"
	"strings"
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
//
// The header of a send or pull request is typed on the way (typedheader.go) when
// "code" and "flag" come before "extFields", as the Go clients write
// them; Java's fastjson writes "flag" after it, and those get the map.
func decodeJSONHeaderFast(hdr []byte) (c *Command, ok bool) {
	p := jsonScanner{s: string(hdr)}
	c = &Command{Language: LanguageCode("")} // what encoding/json gives when "language" is missing
	var seen jsonSeen
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
			seen.code = true
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
			seen.flag = true
		case "remark":
			v, ok := p.str()
			if !ok {
				return nil, false
			}
			c.Remark = v
		case "extFields":
			if c.Header != nil {
				return nil, false // a second extFields after a typed one: leave the merge to encoding/json
			}
			if typedHeaders && seen.code && seen.flag && !c.IsResponse() && c.ExtFields == nil {
				at := p.i
				if p.typedExt(c) {
					seen.typedCode, seen.typedFlag = c.Code, c.Flag
					break
				}
				p.i = at
			}
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
	if c.Header != nil {
		if c.Code != seen.typedCode || c.Flag != seen.typedFlag {
			return nil, false // "code" or "flag" again after the typed ext fields
		}
		return c, p.end()
	}
	if c.ExtFields == nil {
		c.ExtFields = map[string]string{}
	}
	return c, p.end()
}

// jsonSeen is what decodeJSONHeaderFast has read so far.
type jsonSeen struct {
	code, flag bool
	// The code and flag the ext fields were typed for.
	typedCode int16
	typedFlag int32
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
// start. It allocates once: the unescaped string is never longer than its
// escaped form, whose length rawEnd finds.
func (p *jsonScanner) escaped(start int) (string, bool) {
	var b strings.Builder
	b.Grow(p.rawEnd() - start)
	b.WriteString(p.s[start:p.i])
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			v := b.String()
			if !utf8.ValidString(v) {
				return "", false
			}
			return v, true
		case c < 0x20:
			return "", false
		case c != '\\':
			b.WriteByte(c)
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
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			if p.i+4 > len(p.s) {
				return "", false
			}
			r, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
			if err != nil || (r >= 0xD800 && r <= 0xDFFF) {
				return "", false // surrogates (pairs or lone): encoding/json's rules
			}
			p.i += 4
			b.WriteRune(rune(r))
		default:
			return "", false
		}
	}
	return "", false
}

// rawEnd returns the index of the quote that ends the string being read
// (len(p.s) if none), stepping over escaped characters.
func (p *jsonScanner) rawEnd() int {
	for j := p.i; j < len(p.s); j++ {
		switch p.s[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(p.s)
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

// typedExt reads the extFields object of a request into its typed header
// (c.Header) and the other fields (c.ExtFields). It reports false when
// the code has no typed header, the object is malformed or the typed
// header would not be exact; the caller then reads the object again into
// a map.
func (p *jsonScanner) typedExt(c *Command) bool {
	d := typedDecoder{h: newTypedHeader(c.Code)}
	if d.h == nil || !p.consume('{') {
		return false
	}
	if !p.peekIs('}') {
		for {
			k, ok := p.str()
			if !ok || !p.consume(':') {
				return false
			}
			v, ok := p.str()
			if !ok || !d.set(k, v) {
				return false
			}
			if !p.peekIs(',') {
				break
			}
			p.i++
		}
	}
	if !p.consume('}') {
		return false
	}
	return d.done(c)
}
