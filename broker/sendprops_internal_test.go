package broker

import (
	"maps"
	"strings"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// mapPathProps is what the map path stores for a send: each message's
// properties decoded (a batch item's with the header's laid over them),
// CLUSTER set, encoded.
func mapPathProps(header string, items []string, batch bool, cluster string) []map[string]string {
	if !batch {
		m := protocol.DecodeProperties(header)
		m[protocol.PropCluster] = cluster
		return []map[string]string{m}
	}
	hp := protocol.DecodeProperties(header)
	var out []map[string]string
	for _, it := range items {
		m := protocol.DecodeProperties(it)
		maps.Copy(m, hp)
		m[protocol.PropCluster] = cluster
		out = append(out, m)
	}
	return out
}

// checkRawProps compares rawProps with the map path: when rawProps takes a
// message it must give the map path's stored string, the map must hold
// none of the properties the later steps read from it, and every read the
// send path makes on the raw path (producer stamp, UNIQ_KEY, TAGS, WAIT)
// must see what it sees in the map.
func checkRawProps(t *testing.T, header string, items []string, batch bool, cluster string) (enc []string, ok bool) {
	t.Helper()
	var bi []protocol.BatchItem
	if batch {
		if len(items) == 0 {
			return nil, false // the send path never asks (it takes the map path)
		}
		for _, it := range items {
			bi = append(bi, protocol.BatchItem{Properties: it})
		}
	}
	enc, ok = rawProps(header, bi, cluster)
	if !ok {
		return nil, false
	}
	want := mapPathProps(header, items, batch, cluster)
	if len(enc) != len(want) {
		t.Fatalf("rawProps gave %d strings for %d messages", len(enc), len(want))
	}
	for i, m := range want {
		if w := protocol.EncodeProperties(m); enc[i] != w {
			t.Fatalf("message %d: raw path stores %q, map path %q (header %q items %q)", i, enc[i], w, header, items)
		}
		for _, k := range rawFallback {
			if _, has := m[k]; has {
				t.Fatalf("message %d: raw path taken with %s in the properties %q", i, k, enc[i])
			}
		}
		for _, k := range []string{protocol.PropProducerStamp, protocol.PropUniqKey, protocol.PropTags, protocol.PropWaitStoreMsgOK} {
			rv, rok := protocol.PropertyValue(enc[i], k)
			mv, mok := m[k]
			if rv != mv || k == protocol.PropProducerStamp && rok != mok {
				t.Fatalf("message %d: %s reads (%q, %v) on the raw path, (%q, %v) from the map", i, k, rv, rok, mv, mok)
			}
		}
		const multi = protocol.SysFlagMultiTags
		br := &Broker{}
		a := protocol.MessageExt{SysFlag: multi}
		br.stampRaw(&a, enc[i])
		mm := protocol.MessageExt{SysFlag: multi}
		mm.Properties = maps.Clone(m)
		br.opts.BrokerClusterName = cluster
		br.stampProperties(&mm)
		if a.SysFlag != mm.SysFlag {
			t.Fatalf("message %d: sysFlag %#x on the raw path, %#x on the map path", i, a.SysFlag, mm.SysFlag)
		}
	}
	return enc, true
}

func TestRawProps(t *testing.T) {
	const c = protocol.PropCluster + "\x01DefaultCluster\x02"
	tests := []struct {
		name    string
		header  string
		items   []string // a batch when not nil
		want    []string // nil: the map path
		cluster string
	}{
		{name: "empty", header: "", want: []string{c}},
		{name: "empty cluster name", header: "", want: []string{""}, cluster: "-"},
		{name: "sorted (pkg/mqclient)", header: "KEYS\x01k1\x02UNIQ_KEY\x01AB\x02WAIT\x01true\x02", want: []string{c + "KEYS\x01k1\x02UNIQ_KEY\x01AB\x02WAIT\x01true\x02"}},
		{name: "unsorted, no trailing separator (official client order)", header: "WAIT\x01true\x02UNIQ_KEY\x01AB\x02TAGS\x01t", want: []string{c + "TAGS\x01t\x02UNIQ_KEY\x01AB\x02WAIT\x01true\x02"}},
		{name: "duplicate names: the last wins", header: "K\x01a\x02K\x01b\x02", want: []string{c + "K\x01b\x02"}},
		{name: "duplicate, the last empty: dropped", header: "K\x01a\x02K\x01\x02", want: []string{c}},
		{name: "client's CLUSTER replaced", header: "CLUSTER\x01theirs\x02", want: []string{c}},
		{name: "malformed pieces ignored", header: "\x02\x02\x01v\x02K\x01a\x01b\x02novalue\x02K2\x01v\x02\x02", want: []string{c + "K2\x01v\x02"}},
		{name: "delay level: map path", header: "DELAY\x013\x02"},
		{name: "empty delay level: map path too", header: "DELAY\x01\x02"},
		{name: "timer: map path", header: "TIMER_DELAY_SEC\x0110\x02"},
		{name: "timer recall: map path", header: "TIMER_DEL_UNIQKEY\x01x\x02"},
		{name: "transaction property: map path", header: "TRAN_MSG\x01true\x02"},
		{name: "real topic: map path", header: "REAL_TOPIC\x01t\x02"},
		{name: "empty producer stamp: map path", header: protocol.PropProducerStamp + "\x01\x02"},
		{name: "malformed fallback piece is ignored, as by the decoder", header: "DELAY\x013\x013\x02", want: []string{c}},
		{name: "stamp kept", header: protocol.PropProducerStamp + "\x011.2.3\x02", want: []string{c + protocol.PropProducerStamp + "\x011.2.3\x02"}},
		{name: "batch: header over items", header: "K\x01h\x02", items: []string{"K\x01i\x02Z\x01z\x02", "A\x01a\x02"},
			want: []string{c + "K\x01h\x02Z\x01z\x02", "A\x01a\x02" + c + "K\x01h\x02"}},
		{name: "batch: empty header value removes the item's", header: "K\x01\x02", items: []string{"K\x01i\x02"}, want: []string{c}},
		{name: "batch: item with a timer: map path", items: []string{"A\x01a\x02", "TIMER_DELIVER_MS\x011\x02"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster := "DefaultCluster"
			if tt.cluster == "-" {
				cluster = ""
			}
			enc, ok := checkRawProps(t, tt.header, tt.items, tt.items != nil, cluster)
			if ok != (tt.want != nil) {
				t.Fatalf("raw path taken: %v, want %v (%q)", ok, tt.want != nil, enc)
			}
			for i := range tt.want {
				if enc[i] != tt.want[i] {
					t.Errorf("message %d: %q, want %q", i, enc[i], tt.want[i])
				}
			}
		})
	}
}

func TestLastProperty(t *testing.T) {
	for _, s := range []string{"", "DELAY\x013", "DELAY\x013\x02DELAY\x01\x02", "DELAY\x01\x02DELAY\x014\x02", "DELAY\x013\x014\x02", "\x01DELAY\x02"} {
		if got, want := lastProperty(s, protocol.PropDelayLevel), protocol.DecodeProperties(s)[protocol.PropDelayLevel]; got != want {
			t.Errorf("lastProperty(%q) = %q, the map has %q", s, got, want)
		}
	}
}

// FuzzRawProps: for arbitrary property strings the raw path stores what
// the map path stores, or declines.
func FuzzRawProps(f *testing.F) {
	f.Add("", "", "", false, "DefaultCluster")
	f.Add("UNIQ_KEY\x01AB\x02WAIT\x01true\x02", "", "", false, "c")
	f.Add("WAIT\x01true\x02TAGS\x01t\x02KEYS\x01a b\x02UNIQ_KEY\x01AB", "", "", false, "c")
	f.Add("K\x01a\x02K\x01b\x02K\x01\x02", "", "", false, "")
	f.Add("\x02\x01\x02\x01\x01\x02a\x01\x02", "", "", false, "c")
	f.Add("CLUSTER\x01x\x02", "CLUSTER\x01y\x02", "", true, "")
	f.Add("DELAY\x012\x02", "", "", false, "c")
	f.Add(protocol.PropProducerStamp+"\x01\x02", "", "", false, "c")
	f.Add("", protocol.PropProducerStamp+"\x011.0.7\x02UNIQ_KEY\x01A\x02", protocol.PropProducerStamp+"\x011.0.8\x02UNIQ_KEY\x01B\x02", true, "c")
	f.Add("TAGS\x01\x02", "TAGS\x01x\x02", "B\x01b\x02A\x01a\x02", true, "c")
	f.Add("Z\x01z", "a\x01\x01", "TIMER_DELAY_MS\x015\x02", true, "c")
	f.Fuzz(func(t *testing.T, header, item1, item2 string, batch bool, cluster string) {
		var items []string
		if batch {
			items = []string{item1, item2}
		}
		checkRawProps(t, header, items, batch, cluster)
		if got, want := lastProperty(header, protocol.PropDelayLevel), protocol.DecodeProperties(header)[protocol.PropDelayLevel]; got != want {
			t.Fatalf("lastProperty(%q) = %q, the map has %q", header, got, want)
		}
	})
}

// BenchmarkSendProps: the property step of a send, per message: the map
// path (decode, CLUSTER, the size check, encode in the store) against the
// raw path (scan, sort, write once).
func BenchmarkSendProps(b *testing.B) {
	const cluster = "BenchCluster"
	single := map[string]string{
		"official": "WAIT\x01true\x02UNIQ_KEY\x01AC1100010001000000000000000000000000\x02TAGS\x01TagA\x02KEYS\x01order-42\x02",
		"mqclient": protocol.PropProducerStamp + "\x011.0.123456\x02UNIQ_KEY\x01AC1100010001000000000000000000000000\x02WAIT\x01true\x02",
	}
	for name, props := range single {
		b.Run(name+"/map", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m := protocol.DecodeProperties(props)
				m[protocol.PropCluster] = cluster
				_ = protocol.PropertiesLen(m)
				_ = m[protocol.PropProducerStamp]
				_ = protocol.EncodeProperties(m)
			}
		})
		b.Run(name+"/raw", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				enc, _ := rawProps(props, nil, cluster)
				_ = len(enc[0])
				_, _ = protocol.PropertyValue(enc[0], protocol.PropProducerStamp)
			}
		})
	}
	// A pkg/mqclient auto-batch of 32: stamps and UNIQ_KEY per item.
	items := make([]protocol.BatchItem, 32)
	for i := range items {
		items[i].Properties = protocol.PropProducerStamp + "\x011.0." + strings.Repeat("7", 6) + "\x02UNIQ_KEY\x01AC11000100010000000000000000000000" + string(rune('A'+i%26)) + "\x02"
	}
	const hdr = "WAIT\x01true\x02"
	b.Run("batch32/map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hp := protocol.DecodeProperties(hdr)
			for _, it := range items {
				m := protocol.DecodeProperties(it.Properties)
				maps.Copy(m, hp)
				m[protocol.PropCluster] = cluster
				_ = protocol.PropertiesLen(m)
				_ = m[protocol.PropProducerStamp]
				_ = protocol.EncodeProperties(m)
			}
		}
	})
	b.Run("batch32/raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			enc, _ := rawProps(hdr, items, cluster)
			for i := range enc {
				_ = len(enc[i])
				_, _ = protocol.PropertyValue(enc[i], protocol.PropProducerStamp)
			}
		}
	})
}
