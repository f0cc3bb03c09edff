package protocol

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"testing"
)

// storedSeeds returns valid records: IPv4 and IPv6 hosts, the compressed
// flag, with and without properties, and two records back to back.
func storedSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	var all []byte
	for _, tc := range storedCases() {
		rec, err := AppendStored(nil, tc.m, EncodeProperties(tc.props))
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, rec)
		all = append(all, rec...)
	}
	return append(seeds, all, AppendBlank(nil, 64))
}

// unmapHosts makes hosts comparable after AppendStored, which writes an
// IPv4-mapped IPv6 host in the 4-byte form.
func unmapHosts(m *MessageExt) {
	m.BornHost = netip.AddrPortFrom(m.BornHost.Addr().Unmap(), m.BornHost.Port())
	m.StoreHost = netip.AddrPortFrom(m.StoreHost.Addr().Unmap(), m.StoreHost.Port())
}

func FuzzDecodeStored(f *testing.F) {
	seeds := storedSeeds(f)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, n, err := DecodeStored(data, false)
		if err != nil {
			if m != nil || n != 0 {
				t.Fatal("result alongside an error")
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		if n < RecordMinSize || n > len(data) || int(m.StoreSize) != n {
			t.Fatalf("consumed %d of %d (StoreSize %d)", n, len(data), m.StoreSize)
		}
		v, err := ViewRecord(data, false)
		if err != nil {
			t.Fatalf("DecodeStored accepted what ViewRecord rejects: %v", err)
		}
		// Decode, encode with the record's own property string, decode again:
		// the message must survive (hosts canonicalised to IPv4 when mapped).
		first := *m
		re, err := AppendStored(nil, m, string(v.Properties))
		if err != nil {
			if len(m.Topic) <= MaxTopicLength {
				t.Fatalf("re-encode: %v", err)
			}
			return // topics of 128..255 bytes decode but cannot be written
		}
		m2, n2, err := DecodeStored(re, true)
		if err != nil || n2 != len(re) {
			t.Fatalf("decode re-encoded: %v", err)
		}
		first.SysFlag = m.SysFlag // AppendStored fixes the IPv6 bits to the hosts
		first.StoreSize, first.BodyCRC = m.StoreSize, m.BodyCRC
		unmapHosts(&first)
		unmapHosts(m2)
		if !reflect.DeepEqual(m2, &first) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", m2, &first)
		}
		// A canonical record (our own encoding) is reproduced byte for byte.
		if bytes.Equal(re, data[:n]) {
			return
		}
		for _, s := range seeds {
			if bytes.Equal(data, s) {
				t.Fatal("a seed record does not re-encode to itself")
			}
		}
	})
}

func FuzzViewRecord(f *testing.F) {
	for _, s := range storedSeeds(f) {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, data []byte, checkCRC bool) {
		v, err := ViewRecord(data, checkCRC)
		if errors.Is(err, ErrBlank) {
			if len(data) < 8 {
				t.Fatal("blank reported on a short buffer")
			}
			return
		}
		if err != nil {
			return
		}
		if v.Size < RecordMinSize || int(v.Size) > len(data) || v.BodyOffset < 0 || v.BodyLength < 0 ||
			v.BodyOffset+v.BodyLength > int(v.Size) {
			t.Fatalf("view out of bounds: %+v (len %d)", v, len(data))
		}
		if checkCRC && BodyCRC(data[v.BodyOffset:v.BodyOffset+v.BodyLength]) != v.BodyCRC {
			t.Fatal("CRC accepted without matching")
		}
		_, _ = v.Property(PropTags)
		m, n, err := DecodeStored(data, checkCRC)
		if err != nil {
			t.Fatalf("ViewRecord accepted what DecodeStored rejects: %v", err)
		}
		if n != int(v.Size) || m.Topic != string(v.Topic) || !bytes.Equal(m.Body, data[v.BodyOffset:v.BodyOffset+v.BodyLength]) ||
			m.QueueOffset != v.QueueOffset || m.CommitLogOffset != v.PhysicalOffset || m.SysFlag != v.SysFlag ||
			m.StoreTimestamp != v.StoreTimestamp || m.ReconsumeTimes != v.ReconsumeTimes ||
			m.PreparedTransactionOffset != v.PreparedTransactionOffset {
			t.Fatalf("view %+v disagrees with decode %+v", v, m)
		}
	})
}

func FuzzDecodeBatch(f *testing.F) {
	doc := docBatch(f)
	f.Add(doc)
	f.Add(append(append([]byte(nil), doc...), doc...))
	more, err := AppendBatch(nil, []BatchItem{{Flag: 1, Body: []byte("x")}, {Body: nil, Properties: "a\x01b\x02"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(more)
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := DecodeBatch(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		re, err := AppendBatch(nil, items)
		if err != nil {
			for _, it := range items {
				if len(it.Properties) > MaxPropertiesLength {
					return // int16 length read as unsigned: 32768..65535 decode but cannot be written
				}
			}
			t.Fatalf("re-encode: %v", err)
		}
		if len(re) != len(data) {
			t.Fatalf("re-encoded %d bytes from %d", len(re), len(data))
		}
		back, err := DecodeBatch(re)
		if err != nil || !reflect.DeepEqual(back, items) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzDecodeProperties(f *testing.F) {
	f.Add("TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01C0A8010A30390000000097f248f00001\x02")
	f.Add("a\x011\x02b\x012")
	f.Add("\x02\x01\x02k\x01\x02x\x01y\x01z\x02")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		m := DecodeProperties(s)
		for k, v := range m {
			if k == "" || bytes.ContainsAny([]byte(k), "\x01\x02") || bytes.ContainsAny([]byte(v), "\x01\x02") {
				t.Fatalf("bad pair %q=%q", k, v)
			}
			if _, ok := PropertyValue(s, k); !ok {
				t.Fatalf("PropertyValue misses key %q", k)
			}
		}
		// Encoding drops empty values; everything else survives.
		back := DecodeProperties(EncodeProperties(m))
		for k, v := range m {
			if v == "" {
				delete(m, k)
			}
		}
		if !reflect.DeepEqual(back, m) {
			t.Fatalf("round trip %q -> %q", m, back)
		}
	})
}
