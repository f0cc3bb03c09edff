package mqclient

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestEncodePropsAsMap checks that encodeProps gives the bytes
// protocol.EncodeProperties gives for the map with UNIQ_KEY and TIDE_PSEQ
// set, for property sets with names sorting before, between and after
// those two, empty names and values, and stale UNIQ_KEY and TIDE_PSEQ
// entries (which it ignores).
func TestEncodePropsAsMap(t *testing.T) {
	names := []string{"", "A", "KEYS", "TAGS", "TIDE_A", "TIDE_PSEQ", "TIDE_Z", "UNIQ_KEY", "UNIQ_KEZ", "UNIQ", "WAIT", "a", "zz"}
	values := []string{"", "v", "1 2 3", "true"}
	r := rand.New(rand.NewPCG(1, 2))
	st := &protocol.ProducerStamp{ProducerID: 123456789, Epoch: 3, Sequence: 42}
	for i := range 2000 {
		var props map[string]string
		if n := r.IntN(6); n > 0 || i%2 == 0 {
			props = map[string]string{}
			for range n {
				props[names[r.IntN(len(names))]] = values[r.IntN(len(values))]
			}
		}
		uniq := fmt.Sprintf("7F00000100002A9F0000000%09d", i)
		if i%7 == 0 {
			uniq = ""
		}
		for _, stamp := range []*protocol.ProducerStamp{nil, st} {
			m := maps.Clone(props)
			if m == nil {
				m = map[string]string{}
			}
			delete(m, protocol.PropUniqKey)
			delete(m, protocol.PropProducerStamp)
			if uniq != "" {
				m[protocol.PropUniqKey] = uniq
			}
			if stamp != nil {
				m[protocol.PropProducerStamp] = stamp.String()
			}
			want := protocol.EncodeProperties(m)
			if got := encodeProps(props, uniq, stamp); got != want {
				t.Fatalf("encodeProps(%q, %q, %v) = %q, want %q", props, uniq, stamp, got, want)
			}
			if stamp == nil {
				clean := maps.Clone(props)
				delete(clean, protocol.PropUniqKey)
				delete(clean, protocol.PropProducerStamp)
				if got := propsLen(clean, uniq); got != len(want) {
					t.Fatalf("propsLen(%q, %q) = %d, want %d", clean, uniq, got, len(want))
				}
			}
		}
	}
}

// TestMessagePropertiesNone checks that a message with nothing to put in
// its properties gets no map, and one with anything does.
func TestMessagePropertiesNone(t *testing.T) {
	if p := (&Message{Topic: "T", Body: []byte("b")}).properties(); p != nil {
		t.Fatalf("properties of a plain message = %v, want nil", p)
	}
	for _, m := range []*Message{
		{Tag: "t"}, {Keys: []string{"k"}}, {ShardingKey: "s"}, {DelayLevel: 2},
		{Properties: map[string]string{"a": "b"}},
	} {
		if p := m.properties(); len(p) != 1 {
			t.Errorf("properties of %+v = %v, want one entry", m, p)
		}
	}
}
