package mqclient

import (
	"errors"
	"math"
	"net/netip"
	"reflect"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// storedRecord appends one stored record with the raw property string props.
func storedRecord(t testing.TB, dst []byte, m protocol.MessageExt, props string) []byte {
	t.Helper()
	out, err := protocol.AppendStored(dst, &m, props)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// decodeRecordCases are records covering every field decodePull derives.
func decodeRecordCases(t testing.TB) []byte {
	v4 := netip.MustParseAddrPort("10.1.2.3:10911")
	v4b := netip.MustParseAddrPort("192.168.0.7:50000")
	v6 := netip.MustParseAddrPort("[2001:db8::1]:10911")
	base := func(qo int64) protocol.MessageExt {
		return protocol.MessageExt{
			Message: protocol.Message{Topic: "t", Flag: 7, Body: []byte("body")},
			QueueID: 3, QueueOffset: qo, CommitLogOffset: 1000 + qo*200, BornTimestamp: 1700000000123,
			BornHost: v4b, StoreTimestamp: 1700000000456, StoreHost: v4, ReconsumeTimes: int32(qo % 3),
		}
	}
	var buf []byte
	add := func(m protocol.MessageExt, props string) { buf = storedRecord(t, buf, m, props) }
	// plain, with a client id
	add(base(0), protocol.EncodeProperties(map[string]string{protocol.PropUniqKey: "ABC", "user": "u"}))
	// every reserved property, and one that does not parse
	add(base(1), protocol.EncodeProperties(map[string]string{protocol.PropTags: "tagA", protocol.PropKeys: " k1  k2 ",
		protocol.PropShardingKey: "sk", protocol.PropDelayLevel: "3", protocol.PropTimerDeliverMS: "1800000000000"}))
	add(base(2), protocol.EncodeProperties(map[string]string{protocol.PropDelayLevel: "x", protocol.PropTimerDeliverMS: "y"}))
	// no properties at all; only invalid pieces; repeated and odd pieces
	add(base(3), "")
	add(base(4), "novalue\x02\x01x\x02a\x01b\x01c\x02")
	add(base(5), "k\x01one\x02TAGS\x01t1\x02k\x01two\x02TAGS\x01t2\x02UNIQ_KEY\x01\x02junk")
	// IPv6 hosts, empty body, another topic
	m := base(6)
	m.BornHost, m.StoreHost, m.Body, m.Topic = v6, v6, nil, "other"
	add(m, protocol.EncodeProperties(map[string]string{protocol.PropTags: "tagB"}))
	// a retry message
	m = base(7)
	m.Topic = RetryTopicPrefix + "g"
	add(m, protocol.EncodeProperties(map[string]string{protocol.PropRetryTopic: "t", protocol.PropTags: "tagA"}))
	// a compressed body, and one whose compression is broken
	m = base(8)
	m.Body, m.SysFlag = deflate([]byte("compressed body")), protocol.SysFlagCompressed
	add(m, "")
	m = base(9)
	m.Body, m.SysFlag = []byte("not zlib"), protocol.SysFlagCompressed
	add(m, "")
	return buf
}

// oldDecodePull is what the pull path did before decodePull: the
// reference decodePull must agree with.
func oldDecodePull(body []byte, q Queue, from int64, keep func(string) bool) ([]*MessageExt, int, error) {
	recs, err := protocol.DecodeMessages(body)
	var out []*MessageExt
	for _, r := range recs {
		if r.QueueOffset < from {
			continue
		}
		m := fromStored(r, q.BrokerName)
		if keep != nil && !keep(m.Tag) {
			continue
		}
		if rt := r.Property(protocol.PropRetryTopic); rt != "" && len(m.Topic) >= len(RetryTopicPrefix) && m.Topic[:len(RetryTopicPrefix)] == RetryTopicPrefix {
			m.Topic = rt
		}
		out = append(out, m)
	}
	return out, len(recs), err
}

func TestDecodePullMatchesDecodeStored(t *testing.T) {
	body := decodeRecordCases(t)
	q := Queue{Topic: "t", BrokerName: "b", QueueID: 3}
	tagA := func(tag string) bool { return tag == "tagA" }
	tests := []struct {
		name string
		body []byte
		from int64
		keep func(string) bool
	}{
		{"all", body, math.MinInt64, nil},
		{"from offset 4", body, 4, nil},
		{"tag filter", body, 0, tagA},
		{"truncated", body[:len(body)-5], 0, nil},
		{"bad magic", append(append([]byte(nil), body...), make([]byte, protocol.RecordMinSize)...), 0, nil},
		{"empty", nil, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, wantN, wantErr := oldDecodePull(tt.body, q, tt.from, tt.keep)
			got, n, last, err := decodePull(append([]byte(nil), tt.body...), q, tt.from, tt.keep)
			if (err == nil) != (wantErr == nil) || n != wantN {
				t.Fatalf("decoded %d, err %v; want %d, err %v", n, err, wantN, wantErr)
			}
			if err != nil && !errors.Is(err, protocol.ErrMalformed) && !errors.Is(err, protocol.ErrTruncated) {
				t.Fatalf("err %v", err)
			}
			if n > 0 && last != int64(n-1) {
				t.Fatalf("last %d, want %d", last, n-1)
			}
			if tt.name == "all" && len(want) != 10 {
				t.Fatalf("reference decoded %d messages, want all 10", len(want))
			}
			if len(got) != len(want) {
				t.Fatalf("%d messages, want %d", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("message %d:\n got %+v\nwant %+v", i, *got[i], *want[i])
				}
			}
		})
	}
}

// TestDecodePullBodyIsolated checks that a handler appending to one
// message's body cannot overwrite the next record.
func TestDecodePullBodyIsolated(t *testing.T) {
	body := decodeRecordCases(t)
	got, _, _, err := decodePull(body, Queue{Topic: "t"}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(got[0].Body, "XXXXXXXXXXXXXXXX"...)
	again, _, _, err := decodePull(body, Queue{Topic: "t"}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got[1:], again[1:]) {
		t.Fatal("appending to a body changed the records after it")
	}
}

// pullBody is a pull response body of n 1 KiB messages with a client id,
// as a producer of pkg/mqclient stores them.
func pullBody(t testing.TB, n int) []byte {
	var body []byte
	for i := range n {
		body = storedRecord(t, body, protocol.MessageExt{
			Message:     protocol.Message{Topic: "bench", Body: make([]byte, 1024)},
			QueueOffset: int64(i), CommitLogOffset: int64(i) * 1200,
			BornHost: netip.MustParseAddrPort("10.0.0.2:40000"), StoreHost: netip.MustParseAddrPort("10.0.0.1:10911"),
		}, protocol.EncodeProperties(map[string]string{protocol.PropUniqKey: "0A000002000000000000000000000001"}))
	}
	return body
}

func TestDecodePullAllocs(t *testing.T) {
	body := pullBody(t, 64)
	q := Queue{Topic: "bench", BrokerName: "b"}
	allocs := testing.AllocsPerRun(20, func() {
		if _, _, _, err := decodePull(body, q, 0, nil); err != nil {
			t.Fatal(err)
		}
	})
	// per message: the offset id and the user property map (two); the
	// MessageExts, the property strings and the host strings once per body.
	if perMsg := allocs / 64; perMsg > 3.5 {
		t.Errorf("%.1f allocations per message, want at most 3.5", perMsg)
	}
	t.Logf("%.2f allocations per message", allocs/64)
}

// BenchmarkDecodePull decodes a pull of 32 1 KiB messages (the broker's
// default pull limit); ns/op and allocs/op are per pull.
func BenchmarkDecodePull(b *testing.B) {
	body := pullBody(b, 32)
	q := Queue{Topic: "bench", BrokerName: "b"}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, _, err := decodePull(body, q, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDecodePull: on any body, decodePull agrees with DecodeMessages and
// fromStored, and never panics.
func FuzzDecodePull(f *testing.F) {
	body := decodeRecordCases(f)
	f.Add(body)
	f.Add(body[:len(body)/2])
	f.Fuzz(func(t *testing.T, body []byte) {
		q := Queue{Topic: "t", BrokerName: "b"}
		want, wantN, wantErr := oldDecodePull(body, q, 2, nil)
		got, n, _, err := decodePull(append([]byte(nil), body...), q, 2, nil)
		if (err == nil) != (wantErr == nil) || n != wantN || len(got) != len(want) {
			t.Fatalf("decoded %d (%d kept), err %v; want %d (%d kept), err %v", n, len(got), err, wantN, len(want), wantErr)
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("message %d:\n got %+v\nwant %+v", i, *got[i], *want[i])
			}
		}
	})
}
