package broker

import (
	"testing"

	"github.com/tidemq/tide/broker/internal/filter"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestStoreFilterOf: a subscription to every message reads the store
// without a filter; any other keeps its tags-code and property checks.
func TestStoreFilterOf(t *testing.T) {
	tests := []struct {
		typ, expr string
		wantNil   bool
	}{
		{filter.TypeTag, "*", true},
		{filter.TypeTag, "", true},
		{filter.TypeTag, "a || b", false},
		{filter.TypeSQL92, "a > 1", false},
	}
	for _, tt := range tests {
		f, err := filter.New(tt.typ, tt.expr, nil)
		if err != nil {
			t.Fatalf("%s %q: %v", tt.typ, tt.expr, err)
		}
		sf := storeFilterOf(f)
		if (sf == nil) != tt.wantNil {
			t.Fatalf("%s %q: store filter %v, want nil %v", tt.typ, tt.expr, sf, tt.wantNil)
		}
		if sf == nil {
			continue
		}
		props := func() map[string]string { return map[string]string{protocol.PropTags: "c", "a": "2"} }
		if got, want := sf.MatchProperties(props), f.MatchProperties(props()); got != want {
			t.Errorf("%s %q: MatchProperties %v, want %v", tt.typ, tt.expr, got, want)
		}
	}
	if storeFilterOf(nil) != nil {
		t.Error("nil filter: want no store filter")
	}
}
