package filter

import (
	"strings"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// SubAll is the tag expression that selects every message.
const SubAll = "*"

// TagSet is a parsed TAG subscription such as "TagA || TagB". The zero
// value selects nothing; use ParseTags.
type TagSet struct {
	// All is set for "*" and for the empty expression.
	All bool
	// Tags are the distinct tags in expression order, trimmed, never empty.
	Tags []string
	// Codes are the consume-queue codes a matching message can carry:
	// protocol.TagsHashCode of each tag, plus protocol.GoTagsHashCode where
	// that differs (non-ASCII tags), because rocketmq-client-go hashes
	// UTF-8 bytes. Distinct values, in no particular order.
	Codes []int64
}

// ParseTags parses a TAG expression the way RocketMQ's FilterAPI does: ""
// or exactly "*" select everything; anything else is split on "||", each
// part trimmed of characters <= ' ' (Java's String.trim), and empty parts
// dropped. Note that " * " is the tag "*", not a wildcard, as in RocketMQ.
// An expression such as "||" yields no tags and selects nothing.
func ParseTags(expr string) TagSet {
	if expr == "" || expr == SubAll {
		return TagSet{All: true}
	}
	var ts TagSet
	for part := range strings.SplitSeq(expr, "||") {
		tag := strings.TrimFunc(part, isJavaSpace)
		if tag == "" || contains(ts.Tags, tag) {
			continue
		}
		ts.Tags = append(ts.Tags, tag)
		ts.Codes = addCode(ts.Codes, protocol.TagsHashCode(tag))
		ts.Codes = addCode(ts.Codes, protocol.GoTagsHashCode(tag))
	}
	return ts
}

// MatchTag reports whether a message with this tag ("" for none) is
// selected, by exact string comparison.
func (t TagSet) MatchTag(tag string) bool {
	return t.All || contains(t.Tags, tag)
}

// MatchCode reports whether a consume-queue tags code may belong to a
// selected message. Like RocketMQ, which keeps codes as Java ints, only the
// low 32 bits are compared. Hash collisions make this a pre-filter; use
// MatchTag for the exact answer.
func (t TagSet) MatchCode(code int64) bool {
	if t.All {
		return true
	}
	for _, c := range t.Codes {
		if int32(c) == int32(code) {
			return true
		}
	}
	return false
}

func isJavaSpace(r rune) bool { return r <= ' ' }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func addCode(codes []int64, c int64) []int64 {
	for _, v := range codes {
		if int32(v) == int32(c) {
			return codes
		}
	}
	return append(codes, c)
}
