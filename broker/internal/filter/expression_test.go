package filter

import (
	"strconv"
	"strings"
	"testing"
)

// props builds a property map from alternating keys and values.
func props(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

type matchCase struct {
	name  string
	expr  string
	props map[string]string
	want  bool
}

// matchCases pin RocketMQ 4.9 evaluation semantics (ComparisonExpression,
// LogicExpression, UnaryExpression), including its quirks.
var matchCases = []matchCase{
	// String equality, escaping, NULL handling.
	{"eq string", "a = 'x'", props("a", "x"), true},
	{"eq string other", "a = 'x'", props("a", "y"), false},
	{"eq string missing", "a = 'x'", nil, false},
	{"ne string", "a <> 'x'", props("a", "y"), true},
	{"ne string same", "a <> 'x'", props("a", "x"), false},
	{"ne string missing is unknown", "a <> 'x'", nil, false},
	{"eq literal left missing is false", "'x' = a", nil, false},
	{"ne literal left missing is true (Java asymmetry)", "'x' <> a", nil, true},
	{"eq two missing properties", "a = b", nil, true},
	{"eq right missing", "a = b", props("a", "1"), false},
	{"ne right missing", "a <> b", props("a", "1"), true},
	{"ne left missing", "a <> b", props("b", "1"), false},
	{"eq two properties", "a = b", props("a", "x", "b", "x"), true},
	{"eq two numeric-looking strings", "a = b", props("a", "1", "b", "1.0"), false},
	{"ne two properties", "a <> b", props("a", "3.14", "b", "3.141"), true},
	{"escaped quote", "a = 'it''s'", props("a", "it's"), true},
	{"rocketmq escaped tags", "TAGS is not null and TAGS='''''tag'''''", props("TAGS", "''tag''"), true},
	{"empty string literal", "a = ''", props("a", ""), true},
	{"unicode string", "a = 'héllo wörld'", props("a", "héllo wörld"), true},
	{"case sensitive values", "a = 'X'", props("a", "x"), false},
	{"case sensitive names", "A = 'x'", props("a", "x"), false},
	{"tags property", "TAGS = 'TagA'", props("TAGS", "TagA"), true},
	{"identifier with $ and _", "$a_1 = 'x' AND _b = 'y'", props("$a_1", "x", "_b", "y"), true},

	// Integers: Integer literal parses the property with Integer.valueOf.
	{"eq int", "a = 1", props("a", "1"), true},
	{"eq int leading zero", "a = 1", props("a", "01"), true},
	{"eq int plus sign", "a = 1", props("a", "+1"), true},
	{"eq int vs decimal string errors", "a = 1", props("a", "1.0"), false},
	{"eq int vs space errors", "a = 1", props("a", " 1"), false},
	{"eq int vs text errors", "a = 1", props("a", "abc"), false},
	{"eq int literal left", "5 = a", props("a", "5"), true},
	{"eq int long suffix", "a = 5L", props("a", "5"), true},
	{"int literal overflowing property errors", "a = 5", props("a", "3000000000"), false},
	{"long literal", "a = 3000000000", props("a", "3000000000"), true},
	{"long literal vs int value", "a < 3000000000", props("a", "5"), true},
	{"negative long bound", "a = -2147483648", props("a", "-2147483648"), true},
	{"negative int", "a > -5", props("a", "-4"), true},
	{"negated negation", "- -5 = 5", nil, true},
	{"negative literal left", "-5 = a", props("a", "-5"), true},
	{"unary plus", "+a = 'x'", props("a", "x"), true},
	{"negated property is null", "-a IS NULL", props("a", "5"), true},
	{"negated property compares unknown", "-a = 1", props("a", "-1"), false},
	{"gt", "a > 5", props("a", "6"), true},
	{"gt equal", "a > 5", props("a", "5"), false},
	{"gt decimal string vs int literal errors", "a > 5", props("a", "5.5"), false},
	{"ge", "a >= 5", props("a", "5"), true},
	{"lt", "a < 5", props("a", "4"), true},
	{"lt false", "a < 5", props("a", "5"), false},
	{"le", "a <= 5", props("a", "5"), true},
	{"le false", "a <= 5", props("a", "6"), false},
	{"literal on the left", "5 < a", props("a", "6"), true},
	{"gt missing", "a > 5", nil, false},
	{"gt long", "a > 2147483648", props("a", "2147483649"), true},
	{"range", "a > 1 AND a < 3", props("a", "2"), true},

	// Doubles: Double.valueOf trims, takes exponents, suffixes, hex, NaN.
	{"eq double", "a = 1.0", props("a", "1"), true},
	{"eq double trims", "a = 1.0", props("a", " 1.0 "), true},
	{"eq double exponent", "a = 1.0", props("a", "1e0"), true},
	{"eq double suffix", "a = 1.0", props("a", "1.0f"), true},
	{"eq double hex", "a = 1.0", props("a", "0x1p0"), true},
	{"eq double text errors", "a = 1.0", props("a", "one"), false},
	{"gt double", "a > 5.0", props("a", "5.5"), true},
	{"gt double exponent literal", "a > 3.1E10", props("a", "3.1415E10"), true},
	{"gt double pi", "a > 3.14", props("a", "3.1415"), true},
	{"dot literal", "a = .5", props("a", "0.5"), true},
	{"trailing dot literal", "a = 5.", props("a", "5"), true},
	{"exponent-only literal", "a = 5e0", props("a", "5"), true},
	{"NaN is above everything", "a > 1.0", props("a", "NaN"), true},
	{"NaN equals nothing numeric", "a = 1.0", props("a", "NaN"), false},
	{"NaN vs int literal errors", "a > 1", props("a", "NaN"), false},
	{"infinity", "a > 1.5", props("a", "Infinity"), true},
	{"minus zero below zero", "a < 0.0", props("a", "-0.0"), true},
	{"two properties compare as doubles", "a > b", props("a", "10", "b", "9.5"), true},
	{"two properties gt false", "a > b", props("a", "10", "b", "20"), false},
	{"two properties ge equal", "a >= b", props("a", "1", "b", "1.0"), true},
	{"two properties non numeric errors", "a > b", props("a", "x", "b", "1"), false},
	{"two properties one missing", "a > b", props("a", "1"), false},

	// Booleans.
	{"eq true", "a = TRUE", props("a", "true"), true},
	{"eq true ignores case", "a = TRUE", props("a", "TRUE"), true},
	{"eq true other", "a = TRUE", props("a", "yes"), false},
	{"eq false any text", "a = FALSE", props("a", "xyz"), true},
	{"eq true missing", "a = TRUE", nil, false},
	{"boolean literal left vs string errors", "TRUE = a", props("a", "true"), false},
	{"rocketmq boolean or", "a=TRUE OR b=FALSE", props("a", "false", "b", "true"), false},
	{"rocketmq boolean or true", "a=TRUE OR b=FALSE", props("a", "true", "b", "false"), true},
	{"true", "TRUE", nil, true},
	{"false", "FALSE", nil, false},
	{"null", "NULL", nil, false},
	{"not null literal", "NOT NULL", nil, false},
	{"not false", "NOT FALSE", nil, true},
	{"true = true", "TRUE = TRUE", nil, true},
	{"true <> false", "TRUE <> FALSE", nil, true},
	{"int = true is false", "1 = TRUE", nil, false},
	{"int <> true", "1 <> TRUE", nil, true},
	{"string literal = true", "'true' = TRUE", nil, true},
	{"string literal = true other", "'x' = TRUE", nil, false},
	{"condition = true", "(a = 'x') = TRUE", props("a", "x"), true},
	{"condition = true unknown", "(a = 'x') = TRUE", nil, false},
	{"chained equality", "a = 'x' = TRUE", props("a", "x"), true},
	{"bare property is never true", "a", props("a", "true"), false},
	{"not bare property", "NOT a", props("a", "true"), true},
	{"not bare missing property", "NOT a", nil, false},

	// NOT binds tighter than comparisons in RocketMQ.
	{"not binds to operand", "NOT a = 'x'", props("a", "y"), false},
	{"not binds to operand 2", "NOT a = 'x'", props("a", "x"), false},
	{"not operand = true", "NOT a = TRUE", props("a", "anything"), true},
	{"not operand = true missing", "NOT a = TRUE", nil, false},
	{"not parenthesised", "NOT (a = 'x')", props("a", "y"), true},
	{"not parenthesised same", "NOT (a = 'x')", props("a", "x"), false},
	{"not parenthesised missing", "NOT (a = 'x')", nil, false},
	{"not not", "NOT NOT (a = 'x')", props("a", "x"), true},

	// IN / NOT IN.
	{"in", "a IN ('x', 'y')", props("a", "y"), true},
	{"in miss", "a IN ('x', 'y')", props("a", "z"), false},
	{"in missing", "a IN ('x', 'y')", nil, false},
	{"not in", "a NOT IN ('x', 'y')", props("a", "z"), true},
	{"not in hit", "a NOT IN ('x', 'y')", props("a", "x"), false},
	{"not in missing", "a NOT IN ('x', 'y')", nil, false},
	{"in escaped", "a in ('it''s')", props("a", "it's"), true},
	{"in parenthesised property", "(a) IN ('x')", props("a", "x"), true},
	{"in numbers are strings", "a IN ('3', '4', '5')", props("a", "3"), true},
	{"in big list", "a IN ('1','2','3','4','5','6','7','8','9')", props("a", "9"), true},
	{"in big list miss", "a IN ('1','2','3','4','5','6','7','8','9')", props("a", "10"), false},
	{"not in big list", "a NOT IN ('1','2','3','4','5','6','7','8','9')", props("a", "10"), true},
	{"not in big list missing", "a NOT IN ('1','2','3','4','5','6','7','8','9')", nil, false},

	// BETWEEN / NOT BETWEEN.
	{"between low", "a BETWEEN 2 AND 10", props("a", "2"), true},
	{"between high", "a BETWEEN 2 AND 10", props("a", "10"), true},
	{"between above", "a BETWEEN 2 AND 10", props("a", "11"), false},
	{"between text errors", "a BETWEEN 2 AND 10", props("a", "abc"), false},
	{"between missing", "a BETWEEN 2 AND 10", nil, false},
	{"between equal bounds", "a BETWEEN 2 AND 2", props("a", "2"), true},
	{"not between below", "a NOT BETWEEN 2 AND 10", props("a", "1"), true},
	{"not between above", "a NOT BETWEEN 2 AND 10", props("a", "11"), true},
	{"not between inside", "a NOT BETWEEN 2 AND 10", props("a", "5"), false},
	{"not between missing", "a NOT BETWEEN 2 AND 10", nil, false},
	{"between mixed bounds converts per bound", "a BETWEEN 1.5 AND 2", props("a", "1.7"), false},
	{"between double bounds", "a BETWEEN 1.5 AND 2.0", props("a", "1.7"), true},
	{"between negative bound", "a BETWEEN -5 AND 5", props("a", "-5"), true},
	{"between reversed negated bounds parse", "a BETWEEN 5 AND -5", props("a", "0"), false},
	{"between property bounds", "a BETWEEN lo AND hi", props("a", "5", "lo", "1", "hi", "9"), true},
	{"between property bounds text errors", "a BETWEEN lo AND hi", props("a", "3.14", "lo", "up", "hi", "low"), false},
	{"between guarded by is not null", "key is not null and key between 0 and 100", props("key", "con"), false},

	// IS [NOT] NULL.
	{"is null", "a IS NULL", nil, true},
	{"is null present", "a IS NULL", props("a", ""), false},
	{"is not null", "a IS NOT NULL", props("a", ""), true},
	{"is not null missing", "a IS NOT NULL", nil, false},
	{"condition is null", "a = 1 IS NULL", nil, true},
	{"condition is null known", "a = 1 IS NULL", props("a", "1"), false},
	{"rocketmq null or", "a is null OR a='hello'", nil, true},
	{"rocketmq null or hello", "a is null OR a='hello'", props("a", "hello"), true},
	{"rocketmq null or abc", "a is null OR a='hello'", props("a", "abc"), false},
	{"rocketmq equal", "a is not null and a='hello'", props("a", "hello"), true},

	// Three-valued AND / OR and error propagation.
	{"and unknown", "a = 'x' AND b = 'y'", props("a", "x"), false},
	{"not of and unknown", "NOT (a = 'x' AND b = 'y')", props("a", "x"), false},
	{"not of and false", "NOT (a = 'x' AND b = 'y')", props("a", "z"), true},
	{"and unknown and false", "b = 'y' AND a = 'x'", props("a", "z"), false},
	{"or unknown or true", "a = 'x' OR b = 'y'", props("b", "y"), true},
	{"not of or unknown", "NOT (a = 'x' OR b = 'y')", nil, false},
	{"not of or false", "NOT (a = 'x' OR b = 'y')", props("a", "z", "b", "z"), true},
	{"error aborts or", "a = 1 OR b = 'x'", props("a", "abc", "b", "x"), false},
	{"error after short circuit", "b = 'x' OR a = 1", props("a", "abc", "b", "x"), true},
	{"error aborts not", "NOT (a = 1)", props("a", "abc"), false},
	{"error skipped by and", "b = 'x' AND a = 1", props("a", "abc", "b", "y"), false},
	{"rocketmq and", "a=3 and b<>4 And c>5 AND d<=4", props("a", "3", "b", "5", "c", "6", "d", "4"), true},
	{"rocketmq and false", "a=3 and b<>4 And c>5 AND d<=4", props("a", "3", "b", "4", "c", "6", "d", "4"), false},
	{"rocketmq or", "a=3 or b<>4 Or c>5 OR d<=4", props("a", "4", "b", "4", "c", "5", "d", "4"), true},
	{"rocketmq or false", "a=3 or b<>4 Or c>5 OR d<=4", props("a", "4", "b", "4", "c", "5", "d", "5"), false},

	// Precedence and grouping.
	{"and before or", "a = '1' OR b = '1' AND c = '1'", props("a", "1"), true},
	{"and before or 2", "a = '1' OR b = '1' AND c = '1'", props("b", "1"), false},
	{"and before or 3", "a = '1' OR b = '1' AND c = '1'", props("b", "1", "c", "1"), true},
	{"parentheses", "(a = '1' OR b = '1') AND c = '1'", props("a", "1"), false},
	{"nested parentheses", "((a = '1'))", props("a", "1"), true},

	// Lexical details.
	{"keywords any case", "a iS nOt NuLl aNd b BeTwEeN 1 aNd 2 oR c In ('x') Or c NoT iN ('y')", props("a", "", "b", "1"), true},
	{"true any case", "tRuE", nil, true},
	{"block comment", "a = 'x' /* c * / */ AND b = 'y'", props("a", "x", "b", "y"), true},
	{"line comment", "a = 'x' -- the rest\n AND b = 'y'", props("a", "x", "b", "y"), true},
	{"whitespace", "\ta\n=\r'x'\f", props("a", "x"), true},
	{"no spaces", "a<>'x'AND(b>=1)", props("a", "y", "b", "1"), true},
	{"now is a property", "a <= now", props("a", "1", "now", "2"), true},
}

func TestMatch(t *testing.T) {
	for _, tc := range matchCases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Compile(tc.expr)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tc.expr, err)
			}
			if got := e.Match(tc.props); got != tc.want {
				t.Fatalf("Compile(%q).Match(%v) = %v, want %v", tc.expr, tc.props, got, tc.want)
			}
			if e.String() != tc.expr {
				t.Fatalf("String() = %q, want %q", e.String(), tc.expr)
			}
		})
	}
}

func TestMatchNilExpression(t *testing.T) {
	var e *Expression
	if e.Match(props("a", "1")) {
		t.Fatal("nil expression matched")
	}
}

// TestFlattenedLogic checks that long AND/OR chains become one n-ary node
// and still evaluate with short-circuit three-valued logic.
func TestFlattenedLogic(t *testing.T) {
	var parts []string
	for i := range 500 {
		parts = append(parts, "a = '"+strconv.Itoa(i)+"'")
	}
	or, err := Compile(strings.Join(parts, " OR "))
	if err != nil {
		t.Fatal(err)
	}
	if or.root.op != opOr || len(or.root.kids) != 500 || or.root.height > 3 {
		t.Fatalf("OR chain: op %d, %d kids, height %d", or.root.op, len(or.root.kids), or.root.height)
	}
	if !or.Match(props("a", "499")) || or.Match(props("a", "500")) {
		t.Fatal("OR chain evaluates wrongly")
	}
	and, err := Compile("(a IS NOT NULL AND b IS NOT NULL) AND (c IS NOT NULL AND d IS NOT NULL)")
	if err != nil {
		t.Fatal(err)
	}
	if and.root.op != opAnd || len(and.root.kids) != 4 {
		t.Fatalf("AND of ANDs not flattened: %d kids", len(and.root.kids))
	}
	if !and.Match(props("a", "", "b", "", "c", "", "d", "")) || and.Match(props("a", "", "b", "", "c", "")) {
		t.Fatal("AND chain evaluates wrongly")
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	e, err := Compile("a > 5 AND b IN ('x','y') AND c IS NOT NULL AND d BETWEEN 1.5 AND 9.5 OR TAGS = 'T'")
	if err != nil {
		t.Fatal(err)
	}
	p := props("a", "6", "b", "y", "c", "", "d", "2.5", "TAGS", "U")
	if n := testing.AllocsPerRun(100, func() { e.Match(p) }); n != 0 {
		t.Fatalf("Match allocates %v times per run", n)
	}
}

func BenchmarkMatch(b *testing.B) {
	benches := []struct {
		name, expr string
		props      map[string]string
	}{
		{"string-eq", "TAGS = 'TagA'", props("TAGS", "TagA")},
		{"typical", "a > 5 AND b IN ('x','y','z') AND c IS NOT NULL", props("a", "6", "b", "z", "c", "1", "TAGS", "T", "KEYS", "k")},
		{"between-double", "price BETWEEN 10.5 AND 99.9", props("price", "42.25")},
		{"in-set", "region IN ('a','b','c','d','e','f','g','h','i','j')", props("region", "j")},
		{"miss-unknown", "a = 'x' OR b = 'y' OR c = 'z'", props("d", "1")},
	}
	for _, bc := range benches {
		e, err := Compile(bc.expr)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e.Match(bc.props)
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	const expr = "a > 5 AND b IN ('x','y','z') AND (c IS NOT NULL OR d BETWEEN 1 AND 10)"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(expr); err != nil {
			b.Fatal(err)
		}
	}
}
