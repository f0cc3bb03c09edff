package store

import (
	"slices"
	"strings"
	"testing"
)

func TestEachField(t *testing.T) {
	for _, in := range []string{
		"", " ", "k1", "k1 k2", "  k1   k2  ", "k1\tk2\nk3\vk4\fk5\rk6", "a\u00a0b c", "ключ1 ключ2", "k1\u2003k2", "\xff k",
	} {
		var got []string
		eachField([]byte(in), func(f []byte) { got = append(got, string(f)) })
		if want := strings.Fields(in); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("eachField(%q) = %q, want strings.Fields' %q", in, got, want)
		}
	}
}
