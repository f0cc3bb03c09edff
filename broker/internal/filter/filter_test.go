package filter

import (
	"errors"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func TestNew(t *testing.T) {
	tests := []struct {
		typ, expr string
		wantType  string
		err       error
	}{
		{"", "*", TypeTag, nil},
		{"TAG", "TagA || TagB", TypeTag, nil},
		{"TAG", "", TypeTag, nil},
		{"SQL92", "a > 1", TypeSQL92, nil},
		{"SQL92", "a >", "", ErrSyntax},
		{"SQL92", "", "", ErrSyntax},
		{"sql92", "a > 1", "", ErrUnsupportedType},
		{"CLASS", "x", "", ErrUnsupportedType},
	}
	for _, tc := range tests {
		f, err := New(tc.typ, tc.expr, nil)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("New(%q, %q) error = %v, want %v", tc.typ, tc.expr, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("New(%q, %q): %v", tc.typ, tc.expr, err)
		}
		if f.Type() != tc.wantType || f.Expression() != tc.expr {
			t.Errorf("New(%q, %q): type %q expression %q", tc.typ, tc.expr, f.Type(), f.Expression())
		}
	}
}

func TestFilterTag(t *testing.T) {
	// A codeSet as sent by rocketmq-client-go (UTF-8 hash) for a tag that
	// is not in the expression must still pass the pre-filter.
	extra := protocol.GoTagsHashCode("Other")
	f, err := New(TypeTag, "TagA || TagB", []int64{extra})
	if err != nil {
		t.Fatal(err)
	}
	if f.MatchAll() {
		t.Error("MatchAll for a tag list")
	}
	codeTests := []struct {
		code int64
		want bool
	}{
		{protocol.TagsHashCode("TagA"), true},
		{protocol.TagsHashCode("TagB"), true},
		{extra, true},
		{protocol.TagsHashCode("TagC"), false},
		{0, false},
	}
	for _, tc := range codeTests {
		if got := f.MatchTagsCode(tc.code); got != tc.want {
			t.Errorf("MatchTagsCode(%d) = %v, want %v", tc.code, got, tc.want)
		}
	}
	propTests := []struct {
		props map[string]string
		want  bool
	}{
		{props("TAGS", "TagA"), true},
		{props("TAGS", "TagB", "a", "1"), true},
		{props("TAGS", "Other"), false},
		{props("TAGS", "TagA || TagB"), false},
		{nil, false},
	}
	for _, tc := range propTests {
		if got := f.MatchProperties(tc.props); got != tc.want {
			t.Errorf("MatchProperties(%v) = %v, want %v", tc.props, got, tc.want)
		}
	}

	all, err := New("", "*", []int64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if !all.MatchAll() || !all.MatchTagsCode(12345) || !all.MatchProperties(nil) || !all.Tags().All {
		t.Error("* filter does not match everything")
	}
}

func TestFilterNonASCIITag(t *testing.T) {
	// The consume queue stores Java's UTF-16 hash; the Go client's codeSet
	// holds the UTF-8 one. Either way the entry must pass.
	const tag = "订单"
	goCode := protocol.GoTagsHashCode(tag)
	javaCode := protocol.TagsHashCode(tag)
	if goCode == javaCode {
		t.Fatal("test needs a tag whose hashes differ")
	}
	f, err := New(TypeTag, tag, []int64{goCode})
	if err != nil {
		t.Fatal(err)
	}
	if !f.MatchTagsCode(javaCode) || !f.MatchTagsCode(goCode) {
		t.Error("non-ASCII tag code rejected")
	}
	if !f.MatchProperties(props("TAGS", tag)) {
		t.Error("non-ASCII tag rejected")
	}
}

func TestFilterSQL92(t *testing.T) {
	f, err := New(TypeSQL92, "TAGS = 'TagA' AND (price > 10 OR vip = TRUE)", []int64{1})
	if err != nil {
		t.Fatal(err)
	}
	if f.MatchAll() {
		t.Error("MatchAll for SQL92")
	}
	if !f.MatchTagsCode(0) || !f.MatchTagsCode(protocol.TagsHashCode("TagB")) {
		t.Error("SQL92 pre-filter must pass everything")
	}
	tests := []struct {
		props map[string]string
		want  bool
	}{
		{props("TAGS", "TagA", "price", "11"), true},
		{props("TAGS", "TagA", "price", "5", "vip", "true"), true},
		{props("TAGS", "TagA", "price", "5"), false},
		{props("TAGS", "TagB", "price", "11"), false},
		{props("TAGS", "TagA", "price", "eleven", "vip", "true"), false}, // conversion error aborts
		{nil, false},
	}
	for _, tc := range tests {
		if got := f.MatchProperties(tc.props); got != tc.want {
			t.Errorf("MatchProperties(%v) = %v, want %v", tc.props, got, tc.want)
		}
	}
}
