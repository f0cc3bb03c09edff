package filter

import (
	"errors"
	"strings"
	"testing"
)

// fuzzProps are the property maps every compiled expression is evaluated
// against: empty, strings, numbers of each kind, booleans, odd values.
var fuzzProps = []map[string]string{
	nil,
	{},
	{"a": "1", "b": "2", "c": "x", "TAGS": "TagA"},
	{"a": "abc", "b": "", "c": "true", "d": "NaN"},
	{"a": "1.5", "b": "-0.0", "c": "3000000000", "d": "Infinity", "e": " 7 "},
	{"a": "9223372036854775807", "b": "-2147483648", "x": "it's", "$y": "0x1p3", "_z": "1e400"},
}

func FuzzCompile(f *testing.F) {
	for _, tc := range matchCases {
		f.Add(tc.expr)
	}
	for _, s := range []string{
		"", "*", "a", "a =", "= 1", "a = 'x", "a = 1 b", "(a = 1", "a IN ()", "a IN ('x',)",
		"a BETWEEN 10 AND 0", "a = NULL", "a > 'x'", "TRUE = 1", "5", "-a", "NOT 5",
		"a.b = 1", "a != 1", "/* x", "a = 1 -- x", "a = 007", "a = 1e999",
		"a = 9223372036854775808", "((((((((((a = 1))))))))))", "NOT NOT NOT NOT a",
		"- - - - 1 = a", "a = 'x' = TRUE = FALSE", "a IS NULL IS NOT NULL",
		"a NOT BETWEEN -1.5E3 AND .5e-2 OR b NOT IN ('1','2','3','4','5','6','7','8')",
		"a <= now AND 'é' = c", "\x00", "a = '\xff'",
	} {
		f.Add(s)
	}
	for _, s := range []string{
		strings.Repeat("-", 4000), strings.Repeat("(", 4000), strings.Repeat("NOT ", 1000) + "a",
		"a" + strings.Repeat(" = TRUE", 500), "a = 1 -- " + strings.Repeat("-", 4000),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		e, err := Compile(expr)
		if err != nil {
			if e != nil {
				t.Fatalf("Compile(%q) returned an expression and an error", expr)
			}
			var se *SyntaxError
			if !errors.Is(err, ErrSyntax) || !errors.As(err, &se) {
				t.Fatalf("Compile(%q) error %v is not a SyntaxError wrapping ErrSyntax", expr, err)
			}
			if se.Offset < 0 || se.Offset > len(expr) {
				t.Fatalf("Compile(%q) error offset %d out of range", expr, se.Offset)
			}
			return
		}
		if e.root.height > MaxDepth {
			t.Fatalf("Compile(%q) tree height %d exceeds MaxDepth", expr, e.root.height)
		}
		for _, p := range fuzzProps {
			first := e.Match(p)
			if e.Match(p) != first {
				t.Fatalf("Compile(%q).Match(%v) is not deterministic", expr, p)
			}
		}
		// The same text compiles to an expression that agrees everywhere.
		e2, err := Compile(e.String())
		if err != nil {
			t.Fatalf("recompiling %q: %v", expr, err)
		}
		for _, p := range fuzzProps {
			if e.Match(p) != e2.Match(p) {
				t.Fatalf("recompiled %q disagrees on %v", expr, p)
			}
		}
	})
}
