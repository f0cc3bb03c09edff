package filter

import (
	"errors"
	"fmt"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Expression types as carried in heartbeats and pull requests
// (expressionType).
const (
	TypeTag   = "TAG"
	TypeSQL92 = "SQL92"
)

// ErrUnsupportedType is returned by New for an expression type other than
// TAG, SQL92 or empty (which means TAG).
var ErrUnsupportedType = errors.New("filter: unsupported expression type")

// Filter decides which messages a subscription receives. It is built once
// per subscription (New) and is immutable and safe for concurrent use.
//
// The pull path applies it in two steps: MatchTagsCode on every
// consume-queue entry (cheap, may let false positives through), then
// MatchProperties on the messages that passed, once their properties are
// decoded.
type Filter struct {
	typ  string
	expr string
	tags TagSet
	sql  *Expression
}

// New builds the filter for a subscription. expressionType is TAG (or
// empty) or SQL92. For TAG, the expression is parsed with ParseTags and
// codeSet (the heartbeat's codeSet, which may come from either hash; see
// TagSet.Codes) is merged into the tag codes. For SQL92 the expression is
// compiled; its errors wrap ErrSyntax, and codeSet is ignored.
func New(expressionType, expression string, codeSet []int64) (*Filter, error) {
	switch expressionType {
	case "", TypeTag:
		ts := ParseTags(expression)
		if !ts.All {
			for _, c := range codeSet {
				ts.Codes = addCode(ts.Codes, c)
			}
		}
		return &Filter{typ: TypeTag, expr: expression, tags: ts}, nil
	case TypeSQL92:
		e, err := Compile(expression)
		if err != nil {
			return nil, err
		}
		return &Filter{typ: TypeSQL92, expr: expression, sql: e}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnsupportedType, expressionType)
}

// Type returns TypeTag or TypeSQL92.
func (f *Filter) Type() string { return f.typ }

// Expression returns the expression the filter was built from.
func (f *Filter) Expression() string { return f.expr }

// Tags returns the parsed TAG subscription (the zero TagSet for SQL92).
// The caller must not modify its slices.
func (f *Filter) Tags() TagSet { return f.tags }

// MatchAll reports whether the filter selects every message, so the pull
// path can skip filtering altogether.
func (f *Filter) MatchAll() bool { return f.typ == TypeTag && f.tags.All }

// MatchTagsCode is the consume-queue pre-filter: for TAG it checks the
// entry's tags code against the subscription codes (low 32 bits, as
// RocketMQ does); for SQL92 it always passes.
func (f *Filter) MatchTagsCode(tagsCode int64) bool {
	if f.typ == TypeSQL92 {
		return true
	}
	return f.tags.MatchCode(tagsCode)
}

// MatchProperties is the exact check on a decoded message: for TAG the
// TAGS property must equal one of the subscribed tags; for SQL92 the
// expression is evaluated over the properties (see Expression.Match). It
// does not allocate or retain props.
func (f *Filter) MatchProperties(props map[string]string) bool {
	if f.typ == TypeSQL92 {
		return f.sql.Match(props)
	}
	return f.tags.All || contains(f.tags.Tags, props[protocol.PropTags])
}
