package filter

// op is the operation of an expression node.
type op uint8

const (
	opConst op = iota // literal; val holds it
	opProp            // message property; name holds the key
	opNeg             // unary minus of kids[0]
	opNot             // three-valued NOT of kids[0]
	opCast            // a bare property used as a condition (Java's BooleanCast)
	opAnd             // three-valued AND over kids, left to right, short-circuit
	opOr              // three-valued OR over kids, left to right, short-circuit
	opEq              // kids[0] = kids[1]
	opGt              // kids[0] > kids[1]
	opGe              // kids[0] >= kids[1]
	opLt              // kids[0] < kids[1]
	opLe              // kids[0] <= kids[1]
	opIn              // kids[0] (a property) IN / NOT IN (neg) the list
)

// node is one vertex of a compiled expression. Nodes are immutable after
// Compile, so an Expression can be evaluated from many goroutines.
type node struct {
	op     op
	neg    bool            // opIn: NOT IN
	isBool bool            // opConst: TRUE, FALSE or NULL (Java's BooleanConstantExpression)
	val    value           // opConst
	name   string          // opProp
	kids   []*node         // operands
	list   []string        // opIn with few elements
	set    map[string]bool // opIn with many elements
	height int             // longest path to a leaf, bounded by MaxDepth
}

// inSetThreshold is the IN list size from which a map beats a linear scan.
const inSetThreshold = 8

// Expression is a compiled SQL92 selector. It is immutable and safe for
// concurrent use.
type Expression struct {
	src  string
	root *node
}

// String returns the source text the expression was compiled from.
func (e *Expression) String() string {
	if e == nil {
		return ""
	}
	return e.src
}

// Match reports whether a message with the given properties is selected.
// It follows RocketMQ 4.x: the expression is evaluated with three-valued
// logic and only a definite TRUE matches; UNKNOWN (e.g. a comparison with a
// missing property) does not. A conversion that RocketMQ answers with an
// exception (comparing "abc" with a number, say) makes the whole
// expression not match, whatever the other operands say. Match does not
// allocate and does not retain props. A nil Expression matches nothing.
func (e *Expression) Match(props map[string]string) bool {
	if e == nil || e.root == nil {
		return false
	}
	v, ok := e.root.eval(props)
	return ok && v.k == kBool && v.b
}

// eval computes the node's value. ok is false when RocketMQ's evaluator
// would throw, which aborts the whole evaluation.
func (n *node) eval(props map[string]string) (value, bool) {
	switch n.op {
	case opConst:
		return n.val, true
	case opProp:
		s, found := props[n.name]
		if !found {
			return nullValue, true
		}
		return value{k: kString, s: s}, true
	case opNeg:
		v, ok := n.kids[0].eval(props)
		if !ok {
			return v, false
		}
		switch v.k {
		case kInt:
			return value{k: kInt, i: int64(-int32(v.i))}, true
		case kLong:
			return value{k: kLong, i: -v.i}, true
		case kDouble:
			return value{k: kDouble, f: -v.f}, true
		}
		return nullValue, true
	case opNot:
		v, ok := n.kids[0].eval(props)
		if !ok || v.k != kBool {
			return nullValue, ok
		}
		return boolValue(!v.b), true
	case opCast:
		v, ok := n.kids[0].eval(props)
		if !ok || v.k == kNull {
			return nullValue, ok
		}
		return boolValue(v.k == kBool && v.b), true
	case opAnd:
		unknown := false
		for _, k := range n.kids {
			v, ok := k.eval(props)
			if !ok {
				return v, false
			}
			if v.k != kBool {
				unknown = true
			} else if !v.b {
				return falseValue, true
			}
		}
		if unknown {
			return nullValue, true
		}
		return trueValue, true
	case opOr:
		unknown := false
		for _, k := range n.kids {
			v, ok := k.eval(props)
			if !ok {
				return v, false
			}
			if v.k != kBool {
				unknown = true
			} else if v.b {
				return trueValue, true
			}
		}
		if unknown {
			return nullValue, true
		}
		return falseValue, true
	case opEq:
		return n.evalEqual(props)
	case opGt, opGe, opLt, opLe:
		return n.evalOrder(props)
	case opIn:
		v, ok := n.kids[0].eval(props)
		if !ok || v.k != kString {
			return nullValue, ok
		}
		var found bool
		if n.set != nil {
			found = n.set[v.s]
		} else {
			for _, s := range n.list {
				if s == v.s {
					found = true
					break
				}
			}
		}
		return boolValue(found != n.neg), true
	}
	return nullValue, false
}

// evalEqual is RocketMQ's equality: NULL = NULL is TRUE; NULL on the left
// of a non-null value is UNKNOWN, but a non-null left against a NULL right
// is FALSE (the Java code is asymmetric, and so is this); otherwise the
// values are compared with type conversion.
func (n *node) evalEqual(props map[string]string) (value, bool) {
	l, ok := n.kids[0].eval(props)
	if !ok {
		return l, false
	}
	r, ok := n.kids[1].eval(props)
	if !ok {
		return r, false
	}
	if l.k == kNull || r.k == kNull {
		switch {
		case l.k == r.k:
			return trueValue, true
		case l.k == kNull:
			return nullValue, true
		}
		return falseValue, true
	}
	c, ok := compare(l, r)
	if !ok {
		return nullValue, false
	}
	return boolValue(c == 0), true
}

// evalOrder is RocketMQ's < <= > >=: UNKNOWN if either side is NULL (the
// right side is not evaluated when the left is NULL); two strings (two
// properties) are both parsed as doubles; otherwise compare converts.
func (n *node) evalOrder(props map[string]string) (value, bool) {
	l, ok := n.kids[0].eval(props)
	if !ok || l.k == kNull {
		return nullValue, ok
	}
	r, ok := n.kids[1].eval(props)
	if !ok || r.k == kNull {
		return nullValue, ok
	}
	var c int
	if l.k == kString && r.k == kString {
		lf, lok := parseJavaDouble(l.s)
		rf, rok := parseJavaDouble(r.s)
		if !lok || !rok {
			return nullValue, false
		}
		c = compareDouble(lf, rf)
	} else if c, ok = compare(l, r); !ok {
		return nullValue, false
	}
	switch n.op {
	case opGt:
		return boolValue(c > 0), true
	case opGe:
		return boolValue(c >= 0), true
	case opLt:
		return boolValue(c < 0), true
	}
	return boolValue(c <= 0), true
}

// producesBool reports whether Java would type the node as a
// BooleanExpression, which is what AND, OR, NOT and the top level accept
// (a bare property is wrapped in opCast instead).
func (n *node) producesBool() bool {
	switch n.op {
	case opConst:
		return n.isBool
	case opProp, opNeg:
		return false
	}
	return true
}
