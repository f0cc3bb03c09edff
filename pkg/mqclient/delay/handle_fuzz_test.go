package delay_test

import (
	"testing"

	"github.com/tidemq/tide/pkg/mqclient/delay"
)

func FuzzParseHandle(f *testing.F) {
	f.Add("t1/broker-a/Topic/3/1700000000000/7F0000010001")
	f.Add("l1/b/T/0/0/x")
	f.Add("t1/////")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := delay.ParseHandle(s)
		if err == nil && (string(h) != s || h.ID() == "") {
			t.Fatalf("accepted %q with id %q", s, h.ID())
		}
	})
}
