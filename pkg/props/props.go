// Package props reads Java .properties files, the configuration format of
// RocketMQ's daemons (namesrv.properties, broker.conf).
//
// Supported syntax, as java.util.Properties.load:
//
//   - lines end with \n, \r\n or \r;
//   - blank lines and lines whose first non-blank character is '#' or '!'
//     are ignored;
//   - a line ending with an odd number of backslashes continues on the next
//     line, whose leading blanks are dropped;
//   - the key ends at the first unescaped '=', ':' or blank; blanks around
//     the separator are skipped;
//   - escapes \t \n \r \f \uXXXX are decoded, any other escaped character
//     stands for itself ("\=" is '=', "\\" is '\');
//   - blanks are space, tab and form feed.
//
// One deliberate difference: unescaped trailing blanks of a value are
// trimmed (Java keeps them, which then breaks number parsing). An escaped
// blank ("\ ") is kept.
package props

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrSyntax: the input is not a valid properties file (only a malformed
// \uXXXX escape is, as in Java).
var ErrSyntax = errors.New("properties syntax error")

// Entry is one key/value pair and the line (1-based) where it starts.
type Entry struct {
	Key   string
	Value string
	Line  int
}

// ParseFile reads and parses the file at path.
func ParseFile(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	entries, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return entries, nil
}

// Parse returns the entries of data in file order. A key that appears
// twice appears twice; the later one wins when the caller builds a map.
func Parse(data []byte) ([]Entry, error) {
	var (
		out     []Entry
		logical []byte
		start   int  // line number where the logical line began
		cont    bool // the previous natural line ended with a continuation
		line    int
	)
	flush := func() error {
		e, err := parseLine(logical, start)
		if err == nil && e != nil {
			out = append(out, *e)
		}
		return err
	}
	for len(data) > 0 {
		var natural []byte
		natural, data = nextLine(data)
		line++
		natural = bytes.TrimLeft(natural, " \t\f")
		if !cont {
			if len(natural) == 0 || natural[0] == '#' || natural[0] == '!' {
				continue
			}
			logical = logical[:0]
			start = line
		}
		cont = trailingBackslashes(natural)%2 == 1
		if cont {
			logical = append(logical, natural[:len(natural)-1]...)
			continue
		}
		logical = append(logical, natural...)
		if err := flush(); err != nil {
			return nil, err
		}
	}
	if cont { // EOF right after a continuation backslash ends the line
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func nextLine(data []byte) (line, rest []byte) {
	i := bytes.IndexAny(data, "\r\n")
	if i < 0 {
		return data, nil
	}
	line, rest = data[:i], data[i+1:]
	if data[i] == '\r' && len(rest) > 0 && rest[0] == '\n' {
		rest = rest[1:]
	}
	return line, rest
}

func trailingBackslashes(b []byte) int {
	n := 0
	for i := len(b) - 1; i >= 0 && b[i] == '\\'; i-- {
		n++
	}
	return n
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// parseLine splits a logical line (leading blanks removed, continuations
// joined) into key and value. It returns nil for an empty line.
func parseLine(l []byte, lineNo int) (*Entry, error) {
	if len(l) == 0 {
		return nil, nil
	}
	// Find the end of the key: first unescaped '=', ':' or blank.
	keyEnd := len(l)
	for i := 0; i < len(l); i++ {
		c := l[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || isBlank(c) {
			keyEnd = i
			break
		}
	}
	rawKey := l[:keyEnd]
	i := keyEnd
	for i < len(l) && isBlank(l[i]) {
		i++
	}
	if i < len(l) && (l[i] == '=' || l[i] == ':') {
		i++
		for i < len(l) && isBlank(l[i]) {
			i++
		}
	}
	key, _, err := unescape(rawKey, lineNo)
	if err != nil {
		return nil, err
	}
	value, keep, err := unescape(l[i:], lineNo)
	if err != nil {
		return nil, err
	}
	// Trim unescaped trailing blanks only.
	end := len(value)
	for end > keep && isBlank(value[end-1]) {
		end--
	}
	return &Entry{Key: key, Value: value[:end], Line: lineNo}, nil
}

// unescape decodes escapes. keep is the length of the output up to and
// including the last character that came from an escape, which trimming
// must not remove.
func unescape(b []byte, lineNo int) (s string, keep int, err error) {
	if bytes.IndexByte(b, '\\') < 0 {
		return string(b), 0, nil
	}
	var sb strings.Builder
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' {
			sb.WriteByte(c)
			continue
		}
		i++
		if i == len(b) {
			break // a lone trailing backslash is dropped
		}
		switch c = b[i]; c {
		case 't':
			sb.WriteByte('\t')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 'f':
			sb.WriteByte('\f')
		case 'u':
			if len(b)-i-1 < 4 {
				return "", 0, fmt.Errorf("%w: line %d: malformed \\uxxxx escape", ErrSyntax, lineNo)
			}
			v, perr := strconv.ParseUint(string(b[i+1:i+5]), 16, 16)
			if perr != nil {
				return "", 0, fmt.Errorf("%w: line %d: malformed \\uxxxx escape", ErrSyntax, lineNo)
			}
			r := rune(v)
			if !utf8.ValidRune(r) {
				// A lone surrogate half: Java would keep it in a UTF-16
				// string; UTF-8 cannot, so it becomes U+FFFD.
				r = utf8.RuneError
			}
			sb.WriteRune(r)
			i += 4
		default:
			sb.WriteByte(c)
		}
		keep = sb.Len()
	}
	return sb.String(), keep, nil
}
