package filter

import (
	"slices"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func TestParseTags(t *testing.T) {
	tests := []struct {
		expr string
		all  bool
		tags []string
	}{
		{"", true, nil},
		{"*", true, nil},
		{"TagA", false, []string{"TagA"}},
		{"TagA || TagB", false, []string{"TagA", "TagB"}},
		{"TagA||TagB||TagA", false, []string{"TagA", "TagB"}},
		{" TagA ||\tTagB\n", false, []string{"TagA", "TagB"}},
		{"TagA || || TagB ||", false, []string{"TagA", "TagB"}},
		{"||", false, nil},
		{" * ", false, []string{"*"}},
		{"TagA || *", false, []string{"TagA", "*"}},
		{"Tag A", false, []string{"Tag A"}},
		{"TagA | TagB", false, []string{"TagA | TagB"}},
		{"标签", false, []string{"标签"}},
	}
	for _, tc := range tests {
		ts := ParseTags(tc.expr)
		if ts.All != tc.all || !slices.Equal(ts.Tags, tc.tags) {
			t.Errorf("ParseTags(%q) = all %v tags %q, want all %v tags %q", tc.expr, ts.All, ts.Tags, tc.all, tc.tags)
		}
		for _, tag := range tc.tags {
			if !ts.MatchTag(tag) {
				t.Errorf("ParseTags(%q).MatchTag(%q) = false", tc.expr, tag)
			}
			if !ts.MatchCode(protocol.TagsHashCode(tag)) || !ts.MatchCode(protocol.GoTagsHashCode(tag)) {
				t.Errorf("ParseTags(%q) misses a code of %q", tc.expr, tag)
			}
		}
	}
}

func TestTagSetMatch(t *testing.T) {
	ts := ParseTags("TagA || 标签")
	if len(ts.Codes) != 3 {
		t.Errorf("codes = %v, want 3 (ASCII tag once, non-ASCII tag under both hashes)", ts.Codes)
	}
	tests := []struct {
		tag  string
		want bool
	}{
		{"TagA", true},
		{"标签", true},
		{"taga", false},
		{"TagB", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := ts.MatchTag(tc.tag); got != tc.want {
			t.Errorf("MatchTag(%q) = %v, want %v", tc.tag, got, tc.want)
		}
		if got := ts.MatchCode(protocol.TagsHashCode(tc.tag)); got != tc.want {
			t.Errorf("MatchCode(hash %q) = %v, want %v", tc.tag, got, tc.want)
		}
	}
	// Only the low 32 bits count, as with Java's Integer codeSet.
	if !ts.MatchCode(protocol.TagsHashCode("TagA") + 1<<32) {
		t.Error("MatchCode compares more than 32 bits")
	}
	all := ParseTags("*")
	if !all.MatchTag("") || !all.MatchTag("x") || !all.MatchCode(0) || !all.MatchCode(12345) {
		t.Error("* does not match everything")
	}
	var none TagSet
	if none.MatchTag("") || none.MatchCode(0) {
		t.Error("zero TagSet matches")
	}
	if empty := ParseTags("||"); empty.MatchTag("") || empty.MatchCode(0) {
		t.Error(`"||" matches`)
	}
}
