package protocol

import (
	"unicode"
	"unicode/utf16"
)

// TagsHashCode returns the consume-queue tags code of a tag: Java's
// String.hashCode over the tag's UTF-16 code units, widened to int64. An
// empty tag has code 0.
//
// rocketmq-client-go v2.1.2 hashes the UTF-8 bytes instead, which equals
// this only for ASCII tags; see GoTagsHashCode.
func TagsHashCode(tag string) int64 {
	var h int32
	for _, r := range tag { // Java hashes UTF-16 code units
		if r1, r2 := utf16.EncodeRune(r); r1 != unicode.ReplacementChar || r2 != unicode.ReplacementChar {
			h = 31*(31*h+int32(r1)) + int32(r2)
			continue
		}
		h = 31*h + int32(r)
	}
	return int64(h)
}

// GoTagsHashCode is the hash rocketmq-client-go v2.1.2 puts in a
// heartbeat's codeSet: Java's formula over the UTF-8 bytes taken as
// unsigned values. Brokers that filter on codeSet accept both.
func GoTagsHashCode(tag string) int64 {
	var h int32
	for i := 0; i < len(tag); i++ {
		h = 31*h + int32(tag[i])
	}
	return int64(h)
}
