package filter

import (
	"strings"
)

// tokenKind classifies a lexical token of the SQL92 selector language.
type tokenKind uint8

const (
	tEOF tokenKind = iota
	tIdent
	tString
	tInt   // DECIMAL_LITERAL: 0 | [1-9][0-9]*[lL]?
	tFloat // FLOATING_POINT_LITERAL
	tNot
	tAnd
	tOr
	tBetween
	tIn
	tTrue
	tFalse
	tNull
	tIs
	tEq     // =
	tNe     // <>
	tGt     // >
	tGe     // >=
	tLt     // <
	tLe     // <=
	tLParen // (
	tRParen // )
	tComma  // ,
	tPlus   // +
	tMinus  // -
)

var tokenNames = [...]string{
	tEOF:     "end of expression",
	tIdent:   "identifier",
	tString:  "string literal",
	tInt:     "integer literal",
	tFloat:   "decimal literal",
	tNot:     "NOT",
	tAnd:     "AND",
	tOr:      "OR",
	tBetween: "BETWEEN",
	tIn:      "IN",
	tTrue:    "TRUE",
	tFalse:   "FALSE",
	tNull:    "NULL",
	tIs:      "IS",
	tEq:      "'='",
	tNe:      "'<>'",
	tGt:      "'>'",
	tGe:      "'>='",
	tLt:      "'<'",
	tLe:      "'<='",
	tLParen:  "'('",
	tRParen:  "')'",
	tComma:   "','",
	tPlus:    "'+'",
	tMinus:   "'-'",
}

func (k tokenKind) String() string { return tokenNames[k] }

// keywords are matched case-insensitively; an identifier that spells one
// of them is the keyword (RocketMQ's grammar gives reserved words priority).
var keywords = map[string]tokenKind{
	"NOT":     tNot,
	"AND":     tAnd,
	"OR":      tOr,
	"BETWEEN": tBetween,
	"IN":      tIn,
	"TRUE":    tTrue,
	"FALSE":   tFalse,
	"NULL":    tNull,
	"IS":      tIs,
}

// token is one lexeme. text is the raw source for identifiers and numbers
// and the decoded value for string literals.
type token struct {
	kind tokenKind
	pos  int // byte offset in the source
	text string
}

// lex splits src into tokens, ending with a tEOF token. Whitespace, block
// comments and newline-terminated "--" comments are skipped, as in
// RocketMQ's SelectorParser.jj.
func lex(src string) ([]token, error) {
	var toks []token
	// Past the last newline no "--" can start a comment; knowing that keeps
	// a long run of dashes linear.
	lastNL := strings.LastIndexAny(src, "\r\n")
	i := 0
	for {
		i = skipSpace(src, i)
		if i >= len(src) {
			toks = append(toks, token{kind: tEOF, pos: len(src)})
			return toks, nil
		}
		c := src[i]
		start := i
		switch {
		case c == '/' && strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, syntaxErrorf(start, "unterminated comment")
			}
			i += 2 + end + 2
			continue
		case c == '-' && strings.HasPrefix(src[i:], "--"):
			// A line comment needs its terminating newline; without one the
			// grammar sees two minus signs.
			if i < lastNL {
				i += strings.IndexAny(src[i:], "\r\n") + 1
				continue
			}
			toks = append(toks, token{kind: tMinus, pos: start})
			i++
		case c == '\'':
			s, n, err := scanString(src, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tString, pos: start, text: s})
			i += n
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			kind, n := scanNumber(src, i)
			toks = append(toks, token{kind: kind, pos: start, text: src[i : i+n]})
			i += n
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			word := src[i:j]
			kind := tIdent
			if len(word) <= len("BETWEEN") {
				if k, ok := keywords[strings.ToUpper(word)]; ok {
					kind = k
				}
			}
			toks = append(toks, token{kind: kind, pos: start, text: word})
			i = j
		default:
			kind, n := scanOperator(src, i)
			if n == 0 {
				return nil, syntaxErrorf(start, "unexpected character %q", rune0(src[i:]))
			}
			toks = append(toks, token{kind: kind, pos: start})
			i += n
		}
	}
}

func skipSpace(src string, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\n', '\r', '\f':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString decodes the quoted literal at src[i] (” is an embedded
// quote) and returns its value and source length.
func scanString(src string, i int) (string, int, error) {
	j := i + 1
	escaped := false
	for {
		k := strings.IndexByte(src[j:], '\'')
		if k < 0 {
			return "", 0, syntaxErrorf(i, "unterminated string literal")
		}
		j += k
		if j+1 < len(src) && src[j+1] == '\'' {
			escaped = true
			j += 2
			continue
		}
		body := src[i+1 : j]
		if escaped {
			body = strings.ReplaceAll(body, "''", "'")
		}
		return body, j + 1 - i, nil
	}
}

// scanNumber returns the longest numeric token at src[i], following the
// DECIMAL_LITERAL and FLOATING_POINT_LITERAL rules: a leading 0 is a token
// of its own unless a fraction or exponent follows, and only non-zero
// integers take an l/L suffix.
func scanNumber(src string, i int) (tokenKind, int) {
	j := i
	for j < len(src) && isDigit(src[j]) {
		j++
	}
	if j < len(src) && src[j] == '.' {
		j++
		for j < len(src) && isDigit(src[j]) {
			j++
		}
		return tFloat, j + exponentLen(src, j) - i
	}
	if e := exponentLen(src, j); e > 0 {
		return tFloat, j + e - i
	}
	if src[i] == '0' {
		return tInt, 1
	}
	if j < len(src) && (src[j] == 'l' || src[j] == 'L') {
		j++
	}
	return tInt, j - i
}

// exponentLen returns the length of an exponent part (e[+-]digits) at
// src[j], or 0 if there is no complete one.
func exponentLen(src string, j int) int {
	if j >= len(src) || (src[j] != 'e' && src[j] != 'E') {
		return 0
	}
	k := j + 1
	if k < len(src) && (src[k] == '+' || src[k] == '-') {
		k++
	}
	d := k
	for k < len(src) && isDigit(src[k]) {
		k++
	}
	if k == d {
		return 0
	}
	return k - j
}

func scanOperator(src string, i int) (tokenKind, int) {
	c := src[i]
	var next byte
	if i+1 < len(src) {
		next = src[i+1]
	}
	switch c {
	case '=':
		return tEq, 1
	case '<':
		switch next {
		case '>':
			return tNe, 2
		case '=':
			return tLe, 2
		}
		return tLt, 1
	case '>':
		if next == '=' {
			return tGe, 2
		}
		return tGt, 1
	case '(':
		return tLParen, 1
	case ')':
		return tRParen, 1
	case ',':
		return tComma, 1
	case '+':
		return tPlus, 1
	case '-':
		return tMinus, 1
	}
	return tEOF, 0
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isLetter(c byte) bool     { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isIdentStart(c byte) bool { return isLetter(c) || c == '_' || c == '$' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || isDigit(c) }

// rune0 returns the first rune of s for error messages.
func rune0(s string) rune {
	for _, r := range s {
		return r
	}
	return 0
}
