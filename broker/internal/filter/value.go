package filter

import (
	"math"
	"strconv"
	"strings"
)

// kind is the runtime type of a value. It mirrors the Java classes RocketMQ's
// evaluator works with: literals are Integer (when they fit in 32 bits),
// Long, Double, String or Boolean, and message properties are Strings.
type kind uint8

const (
	kNull kind = iota
	kBool
	kInt    // java.lang.Integer, held in i
	kLong   // java.lang.Long, held in i
	kDouble // java.lang.Double, held in f
	kString
)

// value is a dynamically typed evaluation result. It is passed by value so
// that evaluation does not allocate.
type value struct {
	k kind
	b bool
	i int64
	f float64
	s string
}

var (
	nullValue  = value{}
	trueValue  = value{k: kBool, b: true}
	falseValue = value{k: kBool}
)

func boolValue(b bool) value { return value{k: kBool, b: b} }

func (v value) isNumber() bool { return v.k == kInt || v.k == kLong || v.k == kDouble }

// compare orders two non-null values the way RocketMQ's
// ComparisonExpression.__compare does (with string conversion enabled,
// which is how SelectorParser always builds comparisons):
//
//   - equal kinds compare naturally (false < true, numbers numerically with
//     Java's Double.compare for doubles, strings by content);
//   - Integer/Long widen to Long, and either widens to Double;
//   - a String against a number is parsed as that number's Java type
//     (Integer.valueOf, Long.valueOf or Double.valueOf), against a Boolean
//     with Boolean.valueOf;
//   - a Boolean on the left of a String is a ClassCastException in Java;
//   - any other mix answers -1 ("less").
//
// ok is false when Java would throw; the whole filter then does not match.
func compare(l, r value) (c int, ok bool) {
	if l.k == r.k {
		switch l.k {
		case kBool:
			return compareBool(l.b, r.b), true
		case kInt, kLong:
			return compareInt(l.i, r.i), true
		case kDouble:
			return compareDouble(l.f, r.f), true
		case kString:
			return strings.Compare(l.s, r.s), true
		}
		return 0, true
	}
	switch l.k {
	case kBool:
		if r.k == kString {
			return 0, false
		}
		return -1, true
	case kInt, kLong:
		switch r.k {
		case kInt, kLong:
			return compareInt(l.i, r.i), true
		case kDouble:
			return compareDouble(float64(l.i), r.f), true
		case kString:
			n, ok := parseJavaInteger(r.s, l.k)
			if !ok {
				return 0, false
			}
			return compareInt(l.i, n), true
		}
		return -1, true
	case kDouble:
		switch r.k {
		case kInt, kLong:
			return compareDouble(l.f, float64(r.i)), true
		case kString:
			f, ok := parseJavaDouble(r.s)
			if !ok {
				return 0, false
			}
			return compareDouble(l.f, f), true
		}
		return -1, true
	case kString:
		switch r.k {
		case kBool:
			return compareBool(strings.EqualFold(l.s, "true"), r.b), true
		case kInt, kLong:
			n, ok := parseJavaInteger(l.s, r.k)
			if !ok {
				return 0, false
			}
			return compareInt(n, r.i), true
		case kDouble:
			f, ok := parseJavaDouble(l.s)
			if !ok {
				return 0, false
			}
			return compareDouble(f, r.f), true
		}
		return -1, true
	}
	return -1, true
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareDouble is Java's Double.compare: a total order in which -0.0 is
// below 0.0 and NaN is above everything, including +Inf, and equal to
// itself.
func compareDouble(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	ab, bb := javaDoubleBits(a), javaDoubleBits(b)
	switch {
	case ab < bb:
		return -1
	case ab > bb:
		return 1
	}
	return 0
}

// javaDoubleBits is Double.doubleToLongBits: the IEEE bits with every NaN
// collapsed to the canonical one.
func javaDoubleBits(f float64) int64 {
	if math.IsNaN(f) {
		return 0x7ff8000000000000
	}
	return int64(math.Float64bits(f))
}

// parseJavaInteger parses s the way Integer.valueOf (k == kInt) or
// Long.valueOf (k == kLong) does: an optional sign and ASCII decimal digits,
// no surrounding space, range-checked. (Java also accepts non-ASCII Unicode
// digits; they are rejected here.)
func parseJavaInteger(s string, k kind) (int64, bool) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if k == kInt {
		lo, hi = math.MinInt32, math.MaxInt32
	}
	return parseDecimal(s, lo, hi)
}

func parseDecimal(s string, lo, hi int64) (int64, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	i := 0
	switch s[0] {
	case '-':
		neg = true
		i = 1
	case '+':
		i = 1
	}
	if i == len(s) {
		return 0, false
	}
	limit := uint64(hi)
	if neg {
		limit = uint64(-(lo + 1)) + 1
	}
	var n uint64
	for ; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		if n > (limit-uint64(c))/10 {
			return 0, false
		}
		n = n*10 + uint64(c)
	}
	if neg {
		// n may be 1<<63; the wrap-around of int64(n) is then exactly MinInt64.
		return -int64(n), true
	}
	return int64(n), true
}

// parseJavaDouble parses s the way Double.valueOf does: surrounding
// characters <= ' ' are trimmed; accepted are an optional sign followed by
// "NaN", "Infinity", a decimal number with optional fraction and exponent,
// or a hexadecimal float with a mandatory binary exponent; a trailing
// f/F/d/D type suffix is allowed after numbers. Out-of-range values become
// ±Infinity or zero rather than errors.
func parseJavaDouble(s string) (float64, bool) {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	if s == "" {
		return 0, false
	}
	body := s
	neg := false
	switch body[0] {
	case '-':
		neg = true
		body = body[1:]
	case '+':
		body = body[1:]
	}
	switch body {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if n := len(body); n > 0 {
		switch body[n-1] {
		case 'f', 'F', 'd', 'D':
			// Not for hex digits: "0x1p1d" is fine, but the suffix must come
			// after the exponent, which the validators below check.
			body = body[:n-1]
		}
	}
	var valid bool
	if len(body) > 1 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		valid = validHexFloat(body[2:])
	} else {
		valid = validDecimalFloat(body)
	}
	if !valid {
		return 0, false
	}
	f, err := strconv.ParseFloat(body, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	if neg {
		f = -f
	}
	return f, true
}

// validDecimalFloat accepts digits [. digits] [(e|E) [+-] digits] with at
// least one mantissa digit.
func validDecimalFloat(s string) bool {
	i, digits := 0, 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i == len(s) {
		return true
	}
	return exponentLen(s, i) == len(s)-i
}

// validHexFloat accepts the part after "0x": hexdigits [. hexdigits] with at
// least one digit, then (p|P) [+-] decimal digits.
func validHexFloat(s string) bool {
	i, digits := 0, 0
	for i < len(s) && isHexDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isHexDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 || i == len(s) || (s[i] != 'p' && s[i] != 'P') {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i == len(s) {
		return false
	}
	for ; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
