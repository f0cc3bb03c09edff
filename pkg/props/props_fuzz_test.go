package props

import (
	"fmt"
	"strings"
	"testing"
)

// escape writes s so that Parse reads it back unchanged as a key (all
// separators and blanks escaped) or value.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '=', ':', ' ', '#', '!':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteByte(c) // bytes, not runes: invalid UTF-8 must survive
			}
		}
	}
	return b.String()
}

func FuzzParseProperties(f *testing.F) {
	for _, seed := range []string{
		"listenPort=9876\nkvConfigPath=/tmp/kv.json\n",
		"# comment\n! other\n a : b \\\n   continued\n",
		`key\ with\ blanks=\u0041\t\\`,
		"a=1\r\nb=2\rc=3\\",
		"=\\",
		"\\u12",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := Parse(data)
		if err != nil {
			return
		}
		// Writing the entries back and parsing again gives the same keys
		// and values.
		var b strings.Builder
		for _, e := range entries {
			if e.Line < 1 {
				t.Fatalf("line %d", e.Line)
			}
			b.WriteString(escape(e.Key))
			b.WriteByte('=')
			b.WriteString(escape(e.Value))
			b.WriteByte('\n')
		}
		again, err := Parse([]byte(b.String()))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", b.String(), err)
		}
		if len(again) != len(entries) {
			t.Fatalf("re-parse: %d entries, want %d", len(again), len(entries))
		}
		for i := range again {
			if again[i].Key != entries[i].Key || again[i].Value != entries[i].Value {
				t.Fatalf("re-parse entry %d: %q=%q, want %q=%q", i, again[i].Key, again[i].Value, entries[i].Key, entries[i].Value)
			}
		}
	})
}
