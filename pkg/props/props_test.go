package props

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Entry
	}{
		{"empty", "", nil},
		{"simple", "listenPort=9876\n", []Entry{{"listenPort", "9876", 1}}},
		{"colon and blanks", "  a : b  \n", []Entry{{"a", "b", 1}}},
		{"blank separator", "a b c", []Entry{{"a", "b c", 1}}},
		{"blank then equals", "a \t= b", []Entry{{"a", "b", 1}}},
		{"no value", "a\nb=\n", []Entry{{"a", "", 1}, {"b", "", 2}}},
		{"comments", "# c\n! c\n   # indented\na=1 # not a comment\n", []Entry{{"a", "1 # not a comment", 4}}},
		{"blank lines", "\n\n  \t\na=1\n\n", []Entry{{"a", "1", 4}}},
		{"crlf and cr", "a=1\r\nb=2\rc=3", []Entry{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}}},
		{"continuation", "a=1,\\\n    2,\\\n  3\nb=4", []Entry{{"a", "1,2,3", 1}, {"b", "4", 4}}},
		{"continuation line looks like comment", "a=x\\\n#y\n", []Entry{{"a", "x#y", 1}}},
		{"even backslashes do not continue", "a=x\\\\\nb=y", []Entry{{"a", `x\`, 1}, {"b", "y", 2}}},
		{"continuation at eof", "a=x\\", []Entry{{"a", "x", 1}}},
		{"continuation into blank line", "a=x\\\n\nb=1", []Entry{{"a", "x", 1}, {"b", "1", 3}}},
		{"comment does not continue", "# c \\\na=1", []Entry{{"a", "1", 2}}},
		{"escapes", `a=\t\n\r\f\u0041\\\q`, []Entry{{"a", "\t\n\r\fA\\q", 1}}},
		{"escaped separators in key", `a\=b\:c\ d=e`, []Entry{{"a=b:c d", "e", 1}}},
		{"escaped trailing blank kept", "a=x\\ \n", []Entry{{"a", "x ", 1}}},
		{"unicode", "名=値\n", []Entry{{"名", "値", 1}}},
		{"empty key", "=v", []Entry{{"", "v", 1}}},
		{"duplicate keys kept in order", "a=1\na=2", []Entry{{"a", "1", 1}, {"a", "2", 2}}},
		{"form feed blank", "\fa\f=\fb", []Entry{{"a", "b", 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{`a=\u12`, `a=\uzzzz`, "x=1\nb=\\u00G0"} {
		if _, err := Parse([]byte(in)); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: err %v, want ErrSyntax", in, err)
		}
	}
	_, err := Parse([]byte("x=1\nb=\\u00G0"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("error lacks the line: %v", err)
	}
}

func TestParseFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "namesrv.properties")
	os.WriteFile(path, []byte("listenPort=9877\n"), 0o644)
	got, err := ParseFile(path)
	if err != nil || len(got) != 1 || got[0].Value != "9877" {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := ParseFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("missing file parsed")
	}
}
