package filter

import (
	"errors"
	"strings"
	"testing"
)

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name   string
		expr   string
		offset int    // -1: do not check
		msg    string // substring of the message
	}{
		{"empty", "", 0, "unexpected end of expression"},
		{"blank", "  \t\n", 4, "unexpected end of expression"},
		{"comment only", "/* nothing */", 13, "unexpected end of expression"},
		{"unterminated string", "a = 'x", 4, "unterminated string literal"},
		{"unterminated string after escape", "a = 'x''", 4, "unterminated string literal"},
		{"unterminated comment", "a = 1 /* x", 6, "unterminated comment"},
		{"bad character", "a = #", 4, "unexpected character '#'"},
		{"bang equals", "a != 1", 2, "unexpected character '!'"},
		{"non-ascii identifier", "é = 'x'", 0, "unexpected character 'é'"},
		{"dotted identifier", "a.b = 'x'", 1, "unexpected character '.'"},
		{"missing right operand", "a =", 3, "unexpected end of expression, expected an operand"},
		{"missing left operand", "= 1", 0, "unexpected '=', expected an operand"},
		{"missing operand after and", "a = 'x' AND", 11, "expected an operand"},
		{"double equals", "a == 1", 3, "unexpected '='"},
		{"trailing identifier", "a = 1 b", 6, `unexpected identifier "b" after a complete expression`},
		{"trailing paren", "a = 1)", 5, "unexpected ')' after a complete expression"},
		{"trailing not", "a = 1 NOT", 6, "unexpected NOT after a complete expression"},
		{"trailing dangling minus comment", "a = 1 -- no newline", 6, "unexpected '-'"},
		{"like unsupported", "a LIKE 'x%'", 2, `unexpected identifier "LIKE"`},
		{"not like unsupported", "a NOT LIKE 'x%'", 2, "unexpected NOT"},
		{"contains is 5.x only", "a CONTAINS 'x'", 2, `unexpected identifier "CONTAINS"`},
		{"leading zero", "a = 007", 5, "unexpected number 0"},
		{"unclosed paren", "(a = 1", 6, "expected ')' to close '(' at offset 0"},
		{"empty parens", "()", 1, "unexpected ')', expected an operand"},
		{"keyword as property", "in = 'x'", 0, "unexpected IN, expected an operand"},
		{"is without null", "a IS 5", 5, "expected NULL or NOT NULL after IS"},
		{"is not without null", "a IS NOT 5", 9, "expected NULL after IS NOT"},
		{"eq null", "a = NULL", 2, "NULL cannot be compared"},
		{"null eq", "NULL = a", 5, "NULL cannot be compared"},
		{"ne null", "a <> NULL", 2, "NULL cannot be compared"},
		{"gt string", "a > 'x'", 2, "'x' cannot be compared with '>'"},
		{"gt true", "a > TRUE", 2, "TRUE cannot be compared"},
		{"lt null", "a < NULL", 2, "NULL cannot be compared"},
		{"ge condition", "(a > 1) >= 2", 8, "a condition cannot be compared"},
		{"chained order", "1 < a < 5", 6, "a condition cannot be compared"},
		{"not binds tight in order", "NOT a > 1", 6, "a condition cannot be compared"},
		{"true eq number", "TRUE = 1", 5, "TRUE cannot be compared with 1"},
		{"true eq string", "TRUE = 'x'", 5, "TRUE cannot be compared with 'x'"},
		{"number alone", "5", 0, "5 does not produce a boolean value"},
		{"string alone", "'x'", 0, "'x' does not produce a boolean value"},
		{"negation alone", "-a", 0, "a negation does not produce a boolean value"},
		{"and number", "a AND 5", 6, "5 does not produce a boolean value"},
		{"number or", "1 OR a", 0, "1 does not produce a boolean value"},
		{"not number", "NOT 5", 4, "5 does not produce a boolean value"},
		{"not string", "NOT 'x'", 4, "does not produce a boolean value"},
		{"in empty", "a IN ()", 6, "expected string literal in the IN list, found ')'"},
		{"in trailing comma", "a IN ('x',)", 10, "expected string literal in the IN list"},
		{"in missing comma", "a IN ('x' 'y')", 10, "expected ',' or ')' in the IN list"},
		{"in number", "a IN (1)", 6, "expected string literal in the IN list, found number 1"},
		{"in unclosed", "a IN ('x'", 9, "expected ',' or ')' in the IN list, found end of expression"},
		{"in no paren", "a IN 'x'", 5, "expected '(' after IN"},
		{"in literal left", "'x' IN ('x')", 4, "IN needs a property on its left"},
		{"not in after not", "NOT a IN ('x')", 6, "IN needs a property on its left, found a condition"},
		{"between reversed", "a BETWEEN 10 AND 0", 2, "lower bound 10 is greater than upper bound 0"},
		{"between reversed doubles", "a BETWEEN 1.5 AND 1", 2, "lower bound 1.5 is greater than upper bound 1"},
		{"between null", "a BETWEEN NULL AND 1", 2, "BETWEEN bounds cannot be NULL"},
		{"between strings", "a BETWEEN 'a' AND 'b'", 2, "'a' cannot be compared"},
		{"between string and number", "a BETWEEN 1 AND 'x'", 2, "cannot be compared"},
		{"between missing and", "a BETWEEN 1 OR 2", 12, "expected AND between the BETWEEN bounds, found OR"},
		{"between missing high", "a BETWEEN 1 AND", 15, "unexpected end of expression"},
		{"not between condition", "NOT a BETWEEN 1 AND 2", 6, "a condition cannot be compared"},
		{"not between strings", "a NOT BETWEEN 'a' AND 'b'", 2, "'a' cannot be compared"},
		{"integer overflow", "a = 9223372036854775808", 4, "out of the 64-bit range"},
		{"integer overflow even negated", "a = -9223372036854775808", 5, "out of the 64-bit range"},
		{"double overflow", "a = 1e999", 4, "out of the double range"},
		{"long literal clipped", "'" + strings.Repeat("x''", 5000) + "'", 0, "'x''x''x''x''x''x''x''x''x''x''x''x''x''x...' does not produce"},
		{"long number clipped", "a = " + strings.Repeat("9", 5000), 4, "99999999999999999999999999999999999999... is out"},
		{"dash run", "a = 1 " + strings.Repeat("-", 10000), 6, "unexpected '-'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Compile(tc.expr)
			if err == nil {
				t.Fatalf("Compile(%q) = %v, want an error", tc.expr, e.root)
			}
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v does not wrap ErrSyntax", err)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *SyntaxError", err)
			}
			if tc.offset >= 0 && se.Offset != tc.offset {
				t.Errorf("offset = %d, want %d (%v)", se.Offset, tc.offset, err)
			}
			if !strings.Contains(se.Msg, tc.msg) {
				t.Errorf("message %q does not contain %q", se.Msg, tc.msg)
			}
			if len(se.Msg) > 200 {
				t.Errorf("message is %d bytes long", len(se.Msg))
			}
			if !strings.HasPrefix(err.Error(), "filter: syntax error at offset ") {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

func TestCompileLimits(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want error
	}{
		{"too long", "a = '" + strings.Repeat("x", MaxLength) + "'", ErrTooLong},
		{"deep parentheses", strings.Repeat("(", 10000) + "a = 1" + strings.Repeat(")", 10000), ErrTooDeep},
		{"deep NOT", strings.Repeat("NOT ", 5000) + "a", ErrTooDeep},
		{"deep minus", "a = " + strings.Repeat("-", 5000) + "1", ErrTooDeep},
		{"deep plus", "a = " + strings.Repeat("+", 5000) + "1", ErrTooDeep},
		{"tall equality chain", "a = 'x'" + strings.Repeat(" = TRUE", 200), ErrTooDeep},
		{"tall is null chain", "a" + strings.Repeat(" IS NULL", 200), ErrTooDeep},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.expr)
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("err = %v, want %v wrapping ErrSyntax", err, tc.want)
			}
		})
	}
	// Just inside the limits compiles.
	ok := []string{
		strings.Repeat("(", MaxDepth-1) + "a = 1" + strings.Repeat(")", MaxDepth-1),
		"a = '" + strings.Repeat("x", MaxLength-6) + "'",
		"a = 'x'" + strings.Repeat(" = TRUE", MaxDepth-3),
	}
	for _, expr := range ok {
		if _, err := Compile(expr); err != nil {
			t.Errorf("Compile(%.40q...): %v", expr, err)
		}
	}
}

func TestLexNumbers(t *testing.T) {
	tests := []struct {
		src   string
		kinds []tokenKind
		texts []string
	}{
		{"0", []tokenKind{tInt}, []string{"0"}},
		{"123", []tokenKind{tInt}, []string{"123"}},
		{"123L", []tokenKind{tInt}, []string{"123L"}},
		{"0L", []tokenKind{tInt, tIdent}, []string{"0", "L"}},
		{"007", []tokenKind{tInt, tInt, tInt}, []string{"0", "0", "7"}},
		{"007.5", []tokenKind{tFloat}, []string{"007.5"}},
		{"5.", []tokenKind{tFloat}, []string{"5."}},
		{".5", []tokenKind{tFloat}, []string{".5"}},
		{"5e3", []tokenKind{tFloat}, []string{"5e3"}},
		{"5E+3", []tokenKind{tFloat}, []string{"5E+3"}},
		{"5.5e-3", []tokenKind{tFloat}, []string{"5.5e-3"}},
		{"5e", []tokenKind{tInt, tIdent}, []string{"5", "e"}},
		{"5e+", []tokenKind{tInt, tIdent, tPlus}, []string{"5", "e", ""}},
		{"1.2.3", []tokenKind{tFloat, tFloat}, []string{"1.2", ".3"}},
	}
	for _, tc := range tests {
		toks, err := lex(tc.src)
		if err != nil {
			t.Fatalf("lex(%q): %v", tc.src, err)
		}
		toks = toks[:len(toks)-1] // EOF
		if len(toks) != len(tc.kinds) {
			t.Fatalf("lex(%q) = %v, want kinds %v", tc.src, toks, tc.kinds)
		}
		for i, tok := range toks {
			if tok.kind != tc.kinds[i] || tok.text != tc.texts[i] {
				t.Errorf("lex(%q)[%d] = %v %q, want %v %q", tc.src, i, tok.kind, tok.text, tc.kinds[i], tc.texts[i])
			}
		}
	}
}

func TestLiteralTypes(t *testing.T) {
	tests := []struct {
		expr string
		k    kind
		i    int64
		f    float64
	}{
		{"a = 2147483647", kInt, 2147483647, 0},
		{"a = 2147483648", kLong, 2147483648, 0},
		{"a = 5L", kInt, 5, 0},
		{"a = 9223372036854775807", kLong, 9223372036854775807, 0},
		{"a = 1.5", kDouble, 0, 1.5},
		{"a = 0.0", kDouble, 0, 0},
		{"a = 1E2", kDouble, 0, 100},
	}
	for _, tc := range tests {
		e, err := Compile(tc.expr)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.expr, err)
		}
		v := e.root.kids[1].val
		if v.k != tc.k || v.i != tc.i || v.f != tc.f {
			t.Errorf("%q: literal = %+v, want kind %d i %d f %g", tc.expr, v, tc.k, tc.i, tc.f)
		}
	}
}
