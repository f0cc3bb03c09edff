package protocol

import "testing"

// Ext on a typed header answers what Encode's map holds, for each of the
// header's keys, and "" for a key it has not (optional fields left out,
// keys of other headers).
func TestExtTypedHeader(t *testing.T) {
	for _, tt := range extAppenderCases() {
		c := &Command{Header: tt.h, ExtFields: map[string]string{ExtAccessKey: "ak"}}
		m := tt.h.Encode()
		for k, want := range m {
			if got := c.Ext(k); got != want {
				t.Errorf("%s: Ext(%q) = %q, want %q", tt.name, k, got, want)
			}
		}
		for _, k := range []string{"bname", "transactionId", "minOffset", "a", "nope", ""} {
			if _, ok := m[k]; !ok && c.Ext(k) != "" {
				t.Errorf("%s: Ext(%q) = %q, want none", tt.name, k, c.Ext(k))
			}
		}
		if got := c.Ext(ExtAccessKey); got != "ak" {
			t.Errorf("%s: Ext(AccessKey) = %q, want the ExtFields value", tt.name, got)
		}
	}
}

// BenchmarkExtTypedHeader: a field of a typed send header that ExtFields
// does not hold, and a key neither holds.
func BenchmarkExtTypedHeader(b *testing.B) {
	c := &Command{Header: hotSendHeader().V2()}
	for _, k := range []string{"b", "nope"} {
		b.Run(k, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if c.Ext(k) == "x" {
					b.Fatal(k)
				}
			}
		})
	}
}
