package protocol

import (
	"maps"
	"net/netip"
	"testing"
)

// TestNextPropertyMatchesDecodeProperties: iterating with NextProperty
// sees exactly the pieces DecodeProperties keeps.
func TestNextPropertyMatchesDecodeProperties(t *testing.T) {
	for _, s := range []string{
		"",
		"a\x01b\x02",
		"a\x01b",
		"a\x01b\x02c\x01d\x02",
		"\x01x\x02novalue\x02a\x01b\x01c\x02k\x01\x02",
		"k\x01one\x02k\x01two\x02\x02\x02",
	} {
		got := map[string]string{}
		for rest := s; len(rest) > 0; {
			var k, v string
			var ok bool
			if k, v, rest, ok = NextProperty(rest); ok {
				got[k] = v
			}
		}
		if want := DecodeProperties(s); !maps.Equal(got, want) {
			t.Errorf("%q: NextProperty saw %v, DecodeProperties %v", s, got, want)
		}
	}
}

func TestRecordHosts(t *testing.T) {
	for _, hosts := range [][2]string{
		{"10.0.0.2:40000", "10.0.0.1:10911"},
		{"[2001:db8::2]:40000", "10.0.0.1:10911"},
		{"10.0.0.2:40000", "[2001:db8::1]:10911"},
	} {
		m := MessageExt{Message: Message{Topic: "t", Body: []byte("b")},
			BornHost: netip.MustParseAddrPort(hosts[0]), StoreHost: netip.MustParseAddrPort(hosts[1])}
		rec, err := AppendStored(nil, &m, "")
		if err != nil {
			t.Fatal(err)
		}
		d, _, err := DecodeStored(rec, true)
		if err != nil {
			t.Fatal(err)
		}
		v, err := ViewRecord(rec, true)
		if err != nil {
			t.Fatal(err)
		}
		born, store := RecordHosts(rec, v.SysFlag)
		if born != d.BornHost || store != d.StoreHost {
			t.Errorf("%v: RecordHosts %v %v, DecodeStored %v %v", hosts, born, store, d.BornHost, d.StoreHost)
		}
		if b, s := RecordHosts(rec[:60], v.SysFlag); b.IsValid() || s.IsValid() {
			t.Errorf("%v: short record gave %v %v", hosts, b, s)
		}
	}
}
