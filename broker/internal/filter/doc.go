// Package filter decides which messages a consumer subscription receives:
// TAG expressions ("TagA || TagB") and SQL92 property selectors, with the
// semantics of Apache RocketMQ 4.9 (its filter module, SelectorParser.jj and
// the expression classes taken from ActiveMQ).
//
// The broker builds one Filter per subscription with New and, on the pull
// path, calls MatchTagsCode on each consume-queue entry (a cheap pre-filter
// on the tags hash) and MatchProperties on the decoded properties of the
// entries that pass. Everything here is pure, immutable after construction
// and safe for concurrent use.
//
// # TAG expressions
//
// "" and "*" select everything. Otherwise the expression is split on "||",
// each part trimmed (Java String.trim) and empty parts dropped; a message
// matches if its TAGS property equals one of the tags. The consume-queue
// pre-filter compares the low 32 bits of the entry's tags code with the
// Java (UTF-16) and Go-client (UTF-8) hash of each tag and with the
// heartbeat's codeSet.
//
// # SQL92 grammar
//
// Keywords are case-insensitive; property names are case-sensitive and
// looked up verbatim (the tag is "TAGS").
//
//	Selector   = Or .
//	Or         = And { "OR" And } .
//	And        = Equality { "AND" Equality } .
//	Equality   = Comparison { ( "=" | "<>" ) Comparison | "IS" [ "NOT" ] "NULL" } .
//	Comparison = Unary { ( ">" | ">=" | "<" | "<=" ) Unary
//	                   | [ "NOT" ] "BETWEEN" Unary "AND" Unary
//	                   | [ "NOT" ] "IN" "(" String { "," String } ")" } .
//	Unary      = "+" Unary | "-" Unary | "NOT" Unary | Primary .
//	Primary    = String | Integer | Decimal | "TRUE" | "FALSE" | "NULL"
//	           | Identifier | "(" Or ")" .
//	Identifier = ( letter | "_" | "$" ) { letter | digit | "_" | "$" } .   (ASCII letters; no dots)
//	String     = "'" { any char but "'" | "''" } "'" .                       ('' is a quote)
//	Integer    = "0" | nonzero { digit } [ "l" | "L" ] .                     (must fit in int64)
//	Decimal    = digits "." [ digits ] [ Exp ] | "." digits [ Exp ] | digits Exp .
//	Exp        = ( "e" | "E" ) [ "+" | "-" ] digits .
//
// Whitespace, /* block */ comments and "--" comments that end in a newline
// are skipped. There is no arithmetic, LIKE or "!=", and no CONTAINS /
// STARTSWITH / ENDSWITH (added in RocketMQ 5; 4.9 lacks them).
//
// Note the RocketMQ precedence: NOT is a unary operator binding tighter than
// any comparison, so "NOT a = 'x'" means "(NOT a) = 'x'" (which never
// matches); write "NOT (a = 'x')" or "a <> 'x'". Chains such as "a = b = c"
// group to the left.
//
// Compile-time checks, as in RocketMQ: AND, OR, NOT and the whole selector
// need boolean operands (a bare property is allowed and is never TRUE); NULL
// cannot be an operand of = or <> (use IS NULL); < <= > >= and BETWEEN take
// only numeric literals and no conditions; IN needs a property on its left;
// TRUE/FALSE cannot be compared with a non-boolean literal on their right;
// BETWEEN with two literal bounds needs low <= high.
//
// # SQL92 evaluation
//
// Literals are Java Integer (when they fit in 32 bits), Long, Double, String
// or Boolean; properties are strings, absent ones NULL. Logic is
// three-valued and only TRUE selects a message:
//
//   - AND/OR short-circuit left to right: FALSE AND x = FALSE,
//     TRUE OR x = TRUE, otherwise any UNKNOWN gives UNKNOWN. NOT UNKNOWN is
//     UNKNOWN.
//   - < <= > >= BETWEEN: UNKNOWN if an operand is NULL.
//   - = (and <>, which is NOT =): NULL = NULL is TRUE; NULL = value is
//     UNKNOWN but value = NULL is FALSE (so "'x' <> a" is TRUE when a is
//     absent, "a <> 'x'" is not).
//   - IN / NOT IN: UNKNOWN for an absent property, else string membership.
//   - A property compared with a literal is converted to the literal's type:
//     Integer.valueOf or Long.valueOf (no spaces, no fraction: "a > 5"
//     with a = "5.5" cannot convert), Double.valueOf (trims, takes
//     exponents, NaN, Infinity, hex floats, f/d suffixes), or for TRUE/FALSE
//     a case-insensitive "true" test. Two properties under < <= > >= are both
//     read as doubles; under = they compare as strings.
//   - Doubles order like Java's Double.compare (NaN above +Infinity,
//     -0.0 below 0.0). Integer/Long widen to Long, and to Double against a
//     Double.
//   - A value that cannot be converted (and TRUE/FALSE on the left of a
//     property) is an exception in RocketMQ, which makes the broker treat
//     the message as not matching regardless of the rest of the expression
//     (unless short-circuiting skipped that operand). Match does the same.
//   - Unary minus of a property or boolean is NULL.
//
// Deviations from RocketMQ 4.9, all rejecting or accepting input that
// RocketMQ mishandles: trailing tokens after a complete selector are a
// syntax error (RocketMQ silently ignores them, so "a = 1 garbage" means
// "a = 1" there); the literal 0.0 is accepted (RocketMQ refuses it through
// a "< Double.MIN_VALUE" range check); non-ASCII Unicode digits in property
// values are not numbers (Java's Integer.valueOf accepts them).
//
// # Limits
//
// Selectors longer than MaxLength bytes or nested deeper than MaxDepth
// (parentheses, unary operators, or tree height) are refused with
// ErrTooLong / ErrTooDeep; every Compile error wraps ErrSyntax, which the
// broker reports as SUBSCRIPTION_PARSE_FAILED. Match's recursion is bounded
// by MaxDepth, and it does not allocate.
package filter
