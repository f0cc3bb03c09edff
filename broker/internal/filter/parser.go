package filter

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits that keep hostile subscriptions cheap. Expressions come from
// clients (heartbeats and pull requests), so both are enforced by Compile.
const (
	// MaxLength is the longest accepted expression, in bytes.
	MaxLength = 32 << 10
	// MaxDepth bounds the nesting of the expression: parentheses and unary
	// operators while parsing, and the height of the compiled tree (which
	// also bounds Match's recursion).
	MaxDepth = 100
)

var (
	// ErrSyntax is wrapped by every error Compile returns. The broker maps
	// it to SUBSCRIPTION_PARSE_FAILED.
	ErrSyntax = errors.New("filter: invalid SQL92 expression")
	// ErrTooLong means the expression exceeds MaxLength. It wraps ErrSyntax.
	ErrTooLong = fmt.Errorf("%w: expression too long", ErrSyntax)
	// ErrTooDeep means the expression nests deeper than MaxDepth. It wraps
	// ErrSyntax.
	ErrTooDeep = fmt.Errorf("%w: expression nested too deeply", ErrSyntax)
)

// SyntaxError describes why an expression does not compile.
// errors.Is(err, ErrSyntax) holds for every SyntaxError.
type SyntaxError struct {
	Offset int    // byte offset in the expression where the problem was found
	Msg    string // what is wrong
	kind   error  // ErrSyntax, ErrTooLong or ErrTooDeep
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("filter: syntax error at offset %d: %s", e.Offset, e.Msg)
}

// Unwrap returns the sentinel: ErrSyntax, ErrTooLong or ErrTooDeep.
func (e *SyntaxError) Unwrap() error {
	if e.kind == nil {
		return ErrSyntax
	}
	return e.kind
}

func syntaxErrorf(offset int, format string, args ...any) *SyntaxError {
	return &SyntaxError{Offset: offset, Msg: fmt.Sprintf(format, args...)}
}

// Compile parses a SQL92 selector with Apache RocketMQ 4.9 grammar and
// semantics (see the package documentation). Every error wraps ErrSyntax
// and is a *SyntaxError. Compile does no caching; the result is immutable.
//
// Unlike RocketMQ, which silently ignores anything after the first complete
// expression, Compile rejects trailing tokens.
func Compile(expr string) (*Expression, error) {
	if len(expr) > MaxLength {
		return nil, &SyntaxError{Offset: MaxLength, kind: ErrTooLong,
			Msg: fmt.Sprintf("expression is %d bytes, the limit is %d", len(expr), MaxLength)}
	}
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	p := parser{toks: toks}
	e, err := p.orExpr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, syntaxErrorf(t.pos, "unexpected %s after a complete expression", describe(t))
	}
	root, err := p.asBool(e, toks[0].pos)
	if err != nil {
		return nil, err
	}
	return &Expression{src: expr, root: root}, nil
}

// parser is a recursive-descent parser shaped like SelectorParser.jj:
//
//	or -> and -> equality (=, <>, IS [NOT] NULL) -> comparison (<, >, BETWEEN,
//	IN ...) -> unary (+, -, NOT) -> primary
//
// Note that NOT binds tighter than comparisons, exactly as in RocketMQ.
type parser struct {
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }

// peek2 returns the token after the next one.
func (p *parser) peek2() token {
	if p.i+1 < len(p.toks) {
		return p.toks[p.i+1]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) expect(k tokenKind, what string) (token, error) {
	t := p.next()
	if t.kind != k {
		return t, syntaxErrorf(t.pos, "expected %s %s, found %s", k, what, describe(t))
	}
	return t, nil
}

func describe(t token) string {
	switch t.kind {
	case tIdent:
		return fmt.Sprintf("identifier %q", clip(t.text))
	case tInt, tFloat:
		return "number " + clip(t.text)
	case tString:
		return "string " + quote(t.text)
	}
	return t.kind.String()
}

// quote renders a string literal the way it is written in a selector.
func quote(s string) string {
	return "'" + clip(strings.ReplaceAll(s, "'", "''")) + "'"
}

// clip shortens text quoted in error messages.
func clip(s string) string {
	const maxQuoted = 40
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// mk builds a node and enforces MaxDepth on the tree height.
func (p *parser) mk(pos int, n *node) (*node, error) {
	h := 0
	for _, k := range n.kids {
		h = max(h, k.height)
	}
	n.height = h + 1
	if n.height > MaxDepth {
		return nil, &SyntaxError{Offset: pos, kind: ErrTooDeep,
			Msg: fmt.Sprintf("expression nests deeper than %d levels", MaxDepth)}
	}
	return n, nil
}

// asBool is Java's asBooleanExpression: boolean-typed nodes pass, a bare
// property becomes a boolean cast, anything else is an error.
func (p *parser) asBool(n *node, pos int) (*node, error) {
	if n.producesBool() {
		return n, nil
	}
	if n.op == opProp {
		return p.mk(pos, &node{op: opCast, kids: []*node{n}})
	}
	return nil, syntaxErrorf(pos, "%s does not produce a boolean value", nodeDesc(n))
}

// logical parses a chain of operands joined by sep (OR or AND) and
// flattens it into one n-ary node; short-circuit three-valued AND/OR is
// associative, so this evaluates exactly like Java's left-nested tree.
func (p *parser) logical(sep tokenKind, o op, operand func() (*node, error)) (*node, error) {
	start := p.peek().pos
	first, err := operand()
	if err != nil || p.peek().kind != sep {
		return first, err
	}
	first, err = p.asBool(first, start)
	if err != nil {
		return nil, err
	}
	kids := flatten(nil, first, o)
	for p.peek().kind == sep {
		p.next()
		pos := p.peek().pos
		r, err := operand()
		if err != nil {
			return nil, err
		}
		if r, err = p.asBool(r, pos); err != nil {
			return nil, err
		}
		kids = flatten(kids, r, o)
	}
	return p.mk(start, &node{op: o, kids: kids})
}

func flatten(kids []*node, n *node, o op) []*node {
	if n.op == o {
		return append(kids, n.kids...)
	}
	return append(kids, n)
}

func (p *parser) orExpr() (*node, error) {
	return p.logical(tOr, opOr, p.andExpr)
}

func (p *parser) andExpr() (*node, error) {
	return p.logical(tAnd, opAnd, p.equalityExpr)
}

func (p *parser) equalityExpr() (*node, error) {
	left, err := p.comparisonExpr()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch t.kind {
		case tEq, tNe:
			p.next()
			right, err := p.comparisonExpr()
			if err != nil {
				return nil, err
			}
			if left, err = p.equal(t.pos, left, right); err != nil {
				return nil, err
			}
			if t.kind == tNe {
				if left, err = p.mk(t.pos, &node{op: opNot, kids: []*node{left}}); err != nil {
					return nil, err
				}
			}
		case tIs:
			p.next()
			not := p.peek().kind == tNot
			if not {
				p.next()
			}
			if nt := p.next(); nt.kind != tNull {
				want := "NULL or NOT NULL after IS"
				if not {
					want = "NULL after IS NOT"
				}
				return nil, syntaxErrorf(nt.pos, "expected %s, found %s", want, describe(nt))
			}
			// IS NULL is an equality with the NULL constant, minus the
			// operand checks that forbid a literal NULL in "=".
			if left, err = p.mk(t.pos, &node{op: opEq, kids: []*node{left, nullConst()}}); err != nil {
				return nil, err
			}
			if not {
				if left, err = p.mk(t.pos, &node{op: opNot, kids: []*node{left}}); err != nil {
					return nil, err
				}
			}
		default:
			return left, nil
		}
	}
}

// equal applies createEqual's operand checks.
func (p *parser) equal(pos int, l, r *node) (*node, error) {
	for _, n := range [...]*node{l, r} {
		if n.op == opConst && n.val.k == kNull {
			return nil, syntaxErrorf(pos, "NULL cannot be compared with '=' or '<>'; use IS NULL or IS NOT NULL")
		}
	}
	if l.op == opConst && r.op == opConst && l.isBool && !r.isBool {
		return nil, syntaxErrorf(pos, "%s cannot be compared with %s", nodeDesc(l), nodeDesc(r))
	}
	return p.mk(pos, &node{op: opEq, kids: []*node{l, r}})
}

// order builds < <= > >= after checkLessThanOperand: literals must be
// numbers, and boolean-typed operands are refused.
func (p *parser) order(pos int, o op, l, r *node) (*node, error) {
	for _, n := range [...]*node{l, r} {
		if (n.op == opConst && !n.val.isNumber()) || n.producesBool() {
			return nil, syntaxErrorf(pos, "%s cannot be compared with %s", nodeDesc(n), opSymbol(o))
		}
	}
	return p.mk(pos, &node{op: o, kids: []*node{l, r}})
}

var orderOps = map[tokenKind]op{tGt: opGt, tGe: opGe, tLt: opLt, tLe: opLe}

func (p *parser) comparisonExpr() (*node, error) {
	left, err := p.unaryExpr()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		not := false
		switch t.kind {
		case tGt, tGe, tLt, tLe:
			p.next()
			right, err := p.unaryExpr()
			if err != nil {
				return nil, err
			}
			if left, err = p.order(t.pos, orderOps[t.kind], left, right); err != nil {
				return nil, err
			}
			continue
		case tNot:
			// NOT BETWEEN / NOT IN; a NOT followed by anything else ends
			// the comparison (and is then reported as unexpected).
			if k := p.peek2().kind; k != tBetween && k != tIn {
				return left, nil
			}
			p.next()
			not = true
		case tBetween, tIn:
		default:
			return left, nil
		}
		switch p.next().kind {
		case tBetween:
			left, err = p.between(t.pos, left, not)
		case tIn:
			left, err = p.in(t.pos, left, not)
		}
		if err != nil {
			return nil, err
		}
	}
}

// between parses "low AND high" after [NOT] BETWEEN. BETWEEN becomes
// value >= low AND value <= high, NOT BETWEEN value < low OR value > high;
// with two literal bounds, BETWEEN (but not NOT BETWEEN) requires
// low <= high, as RocketMQ does.
func (p *parser) between(pos int, v *node, not bool) (*node, error) {
	low, err := p.unaryExpr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(tAnd, "between the BETWEEN bounds"); err != nil {
		return nil, err
	}
	high, err := p.unaryExpr()
	if err != nil {
		return nil, err
	}
	if not {
		lt, err := p.order(pos, opLt, v, low)
		if err != nil {
			return nil, err
		}
		gt, err := p.order(pos, opGt, v, high)
		if err != nil {
			return nil, err
		}
		return p.mk(pos, &node{op: opOr, kids: []*node{lt, gt}})
	}
	if low.op == opConst && high.op == opConst {
		if low.val.k == kNull || high.val.k == kNull {
			return nil, syntaxErrorf(pos, "BETWEEN bounds cannot be NULL")
		}
		c, ok := compare(high.val, low.val)
		if !ok {
			return nil, syntaxErrorf(pos, "BETWEEN bounds %s and %s cannot be compared", nodeDesc(low), nodeDesc(high))
		}
		if c < 0 {
			return nil, syntaxErrorf(pos, "BETWEEN lower bound %s is greater than upper bound %s", nodeDesc(low), nodeDesc(high))
		}
	}
	ge, err := p.order(pos, opGe, v, low)
	if err != nil {
		return nil, err
	}
	le, err := p.order(pos, opLe, v, high)
	if err != nil {
		return nil, err
	}
	return p.mk(pos, &node{op: opAnd, kids: []*node{ge, le}})
}

// in parses "( 'a', 'b', ... )" after [NOT] IN. Only string literals are
// allowed in the list and only a property on the left.
func (p *parser) in(pos int, v *node, not bool) (*node, error) {
	if v.op != opProp {
		return nil, syntaxErrorf(pos, "IN needs a property on its left, found %s", nodeDesc(v))
	}
	if _, err := p.expect(tLParen, "after IN"); err != nil {
		return nil, err
	}
	var list []string
	for {
		t, err := p.expect(tString, "in the IN list")
		if err != nil {
			return nil, err
		}
		list = append(list, t.text)
		t = p.next()
		if t.kind == tRParen {
			break
		}
		if t.kind != tComma {
			return nil, syntaxErrorf(t.pos, "expected ',' or ')' in the IN list, found %s", describe(t))
		}
	}
	n := &node{op: opIn, neg: not, kids: []*node{v}}
	if len(list) >= inSetThreshold {
		n.set = make(map[string]bool, len(list))
		for _, s := range list {
			n.set[s] = true
		}
	} else {
		n.list = list
	}
	return p.mk(pos, n)
}

func (p *parser) unaryExpr() (*node, error) {
	t := p.peek()
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > MaxDepth {
		return nil, &SyntaxError{Offset: t.pos, kind: ErrTooDeep,
			Msg: fmt.Sprintf("expression nests deeper than %d levels", MaxDepth)}
	}
	switch t.kind {
	case tPlus:
		p.next()
		return p.unaryExpr()
	case tMinus:
		p.next()
		n, err := p.unaryExpr()
		if err != nil {
			return nil, err
		}
		return p.mk(t.pos, &node{op: opNeg, kids: []*node{n}})
	case tNot:
		p.next()
		pos := p.peek().pos
		n, err := p.unaryExpr()
		if err != nil {
			return nil, err
		}
		if n, err = p.asBool(n, pos); err != nil {
			return nil, err
		}
		return p.mk(t.pos, &node{op: opNot, kids: []*node{n}})
	}
	return p.primaryExpr()
}

func (p *parser) primaryExpr() (*node, error) {
	t := p.next()
	switch t.kind {
	case tString:
		return &node{op: opConst, val: value{k: kString, s: t.text}, height: 1}, nil
	case tInt:
		return intConst(t)
	case tFloat:
		return floatConst(t)
	case tTrue, tFalse:
		return &node{op: opConst, isBool: true, val: boolValue(t.kind == tTrue), height: 1}, nil
	case tNull:
		return nullConst(), nil
	case tIdent:
		return &node{op: opProp, name: t.text, height: 1}, nil
	case tLParen:
		// Parentheses group but leave no node behind, as in Java; "(a) IN
		// ('x')" is therefore fine.
		n, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen, "to close '(' at offset "+strconv.Itoa(t.pos)); err != nil {
			return nil, err
		}
		return n, nil
	case tEOF:
		return nil, syntaxErrorf(t.pos, "unexpected end of expression, expected an operand")
	}
	return nil, syntaxErrorf(t.pos, "unexpected %s, expected an operand", describe(t))
}

func nullConst() *node {
	return &node{op: opConst, isBool: true, val: nullValue, height: 1}
}

// intConst is createFromDecimal: the l/L suffix is dropped, the value must
// fit in a long, and it is typed Integer when it fits in 32 bits.
func intConst(t token) (*node, error) {
	s := strings.TrimRight(t.text, "lL")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, syntaxErrorf(t.pos, "integer literal %s is out of the 64-bit range", clip(t.text))
	}
	k := kLong
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		k = kInt
	}
	return &node{op: opConst, val: value{k: k, i: n}, height: 1}, nil
}

// floatConst is createFloat: a double that must be finite. (RocketMQ also
// rejects 0.0 through an off-by-design "< Double.MIN_VALUE" check; Tide
// accepts it.)
func floatConst(t token) (*node, error) {
	f, err := strconv.ParseFloat(t.text, 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, syntaxErrorf(t.pos, "decimal literal %s is out of the double range", clip(t.text))
	}
	return &node{op: opConst, val: value{k: kDouble, f: f}, height: 1}, nil
}

// nodeDesc names a node for error messages.
func nodeDesc(n *node) string {
	switch n.op {
	case opConst:
		switch n.val.k {
		case kNull:
			return "NULL"
		case kBool:
			if n.val.b {
				return "TRUE"
			}
			return "FALSE"
		case kString:
			return quote(n.val.s)
		case kDouble:
			return strconv.FormatFloat(n.val.f, 'g', -1, 64)
		}
		return strconv.FormatInt(n.val.i, 10)
	case opProp:
		return "property " + n.name
	case opNeg:
		return "a negation"
	}
	return "a condition"
}

func opSymbol(o op) string {
	switch o {
	case opGt:
		return "'>'"
	case opGe:
		return "'>='"
	case opLt:
		return "'<'"
	}
	return "'<='"
}
