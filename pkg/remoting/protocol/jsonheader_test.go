package protocol

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// slowJSONHeader is decodeJSONHeader without the fast path: the reference
// the fast decoder must agree with.
func slowJSONHeader(hdr []byte) (*Command, error) {
	saved := fastJSONHeader
	fastJSONHeader = false
	defer func() { fastJSONHeader = saved }()
	return decodeJSONHeader(hdr)
}

// checkFastJSON fails if the fast decoder accepts hdr and disagrees with
// encoding/json.
func checkFastJSON(t *testing.T, hdr []byte) (fast bool) {
	t.Helper()
	got, ok := decodeJSONHeaderFast(hdr)
	want, err := slowJSONHeader(hdr)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("fast path accepted %q, encoding/json refused it: %v", hdr, err)
	}
	if !reflect.DeepEqual(asMap(got), want) {
		t.Fatalf("%q:\n fast %#v\n json %#v", hdr, got, want)
	}
	return true
}

// asMap returns c with all its ext fields in ExtFields: a header the
// decoder typed (Command.Header) encoded into the map encoding/json gives.
func asMap(c *Command) *Command {
	if c.Header == nil {
		return c
	}
	m := *c
	m.ExtFields, m.Header, m.typedHeader = c.Fields(), nil, false
	return &m
}

func TestJSONHeaderFast(t *testing.T) {
	tests := []struct {
		hdr  string
		fast bool
	}{
		{`{}`, true},
		{`{"code":10,"language":"GO","version":317,"opaque":7,"flag":0,"remark":"","extFields":{"a":"g","b":"t"},"serializeTypeCurrentRPC":"JSON"}`, true},
		{` { "code" : -1 , "extFields" : { } } `, true},
		{`{"extFields":{"i":"k\u0001v\u0002UNIQ_KEY\u0001x","q":"\"\\\/\b\f\n\r\t"}}`, true},
		{`{"remark":"héllo ✓","extFields":{"k":"v","k":"w"}}`, true},
		{`{"extFields":{"a":"1"},"extFields":{"b":"2"}}`, true},
		{`{"code":32768}`, false},        // int16 overflow: json's error
		{`{"code":1.0}`, false},          // float
		{`{"code":01}`, false},           // invalid JSON
		{`{"Code":1}`, false},            // case-insensitive match is json's business
		{`{"remark":null}`, false},       // null
		{`{"extFields":{"a":1}}`, false}, // loose: non-string ext value
		{`{"language":3}`, false},
		{`{"remark":"\ud83d\ude00"}`, false}, // surrogate pair
		{"{\"remark\":\"\xff\"}", false},     // invalid UTF-8
		{`{"other":[1,2]}`, false},
		{`{"code":1} x`, false},
		{`{"code":1`, false},
		{``, false},
	}
	for _, tc := range tests {
		if got := checkFastJSON(t, []byte(tc.hdr)); got != tc.fast {
			t.Errorf("%q: fast path %v, want %v", tc.hdr, got, tc.fast)
		}
	}
}

// TestJSONHeaderFastGolden: every recorded official-client frame takes the
// fast path and decodes exactly as with encoding/json.
func TestJSONHeaderFastGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(goldenDir, "*.bin"))
	if len(files) == 0 {
		t.Fatal("no golden frames")
	}
	for _, f := range files {
		hdr := goldenHeader(t, f)
		if !checkFastJSON(t, hdr) {
			t.Errorf("%s: header not on the fast path: %s", filepath.Base(f), hdr)
		}
	}
}

func goldenHeader(t testing.TB, f string) []byte {
	raw, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.BigEndian.Uint32(raw[4:8]) & 0xFFFFFF
	return raw[8 : 8+n]
}
