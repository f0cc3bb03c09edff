package protocol

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// docBatchHex is the batch body recorded from the v2.1.2 client in
// rocketmq-protocol.md §4.7: body "hi", tag TagA, keys "k1 k2".
const docBatchHex = "0000002d" + "00000000" + "00000000" + "00000000" + "00000002" + "6869" + "0015" +
	"54414753" + "01" + "54616741" + "02" + "4b455953" + "01" + "6b31206b32" + "02"

func docBatch(t testing.TB) []byte {
	b, err := hex.DecodeString(docBatchHex)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type storedCase struct {
	name  string
	m     *MessageExt
	props map[string]string
}

func storedCases() []storedCase {
	base := func() *MessageExt {
		return &MessageExt{
			Message: Message{Topic: "TopicTest", Flag: 3, Body: []byte("hello world")},
			QueueID: 2, QueueOffset: 17, CommitLogOffset: 4096, SysFlag: 0,
			BornTimestamp: 1690000000000, BornHost: netip.MustParseAddrPort("192.168.1.10:50123"),
			StoreTimestamp: 1690000000005, StoreHost: netip.MustParseAddrPort("192.168.1.5:10911"),
			ReconsumeTimes: 1, PreparedTransactionOffset: 0,
		}
	}
	props := map[string]string{PropTags: "TagA", PropKeys: "k1 k2", PropUniqKey: "C0A8010A30390000000097f248f00001"}
	v6born := base()
	v6born.BornHost = netip.MustParseAddrPort("[2001:db8::1]:50123")
	v6store := base()
	v6store.StoreHost = netip.MustParseAddrPort("[2001:db8::5]:10911")
	v6both := base()
	v6both.BornHost, v6both.StoreHost = v6born.BornHost, v6store.StoreHost
	compressed := base()
	compressed.SysFlag = SysFlagCompressed
	compressed.Body = []byte{0x78, 0x9c, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x06, 0x2c, 0x02, 0x15} // zlib("hello")
	committed := base()
	committed.SysFlag = SysFlagTxCommit
	committed.PreparedTransactionOffset = 1024
	empty := base()
	empty.Body, empty.Topic = nil, ""
	return []storedCase{
		{"ipv4", base(), props},
		{"ipv4 no properties", base(), nil},
		{"ipv6 born host", v6born, props},
		{"ipv6 store host", v6store, props},
		{"ipv6 both", v6both, props},
		{"compressed", compressed, props},
		{"committed tx", committed, map[string]string{PropProducerGroup: "txg", PropUniqKey: "X"}},
		{"empty body and topic", empty, nil},
	}
}

func TestStoredRoundTrip(t *testing.T) {
	for _, tc := range storedCases() {
		t.Run(tc.name, func(t *testing.T) {
			props := EncodeProperties(tc.props)
			buf, err := AppendStored([]byte("prefix"), tc.m, props)
			if err != nil {
				t.Fatal(err)
			}
			rec := buf[len("prefix"):]
			if len(rec) != StoredSize(tc.m.SysFlag, len(tc.m.Body), len(tc.m.Topic), len(props)) || int(tc.m.StoreSize) != len(rec) {
				t.Fatalf("record of %d bytes, StoredSize %d", len(rec), tc.m.StoreSize)
			}
			wantV6 := 0
			if tc.m.SysFlag&SysFlagBornHostV6 != 0 {
				wantV6 += 12
			}
			if tc.m.SysFlag&SysFlagStoreHostV6 != 0 {
				wantV6 += 12
			}
			if len(rec) != 91+len(tc.m.Body)+len(tc.m.Topic)+len(props)+wantV6 {
				t.Fatalf("size %d does not follow the §4.1 formula", len(rec))
			}
			got, n, err := DecodeStored(append(rec, 0xEE), true)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(rec) {
				t.Fatalf("consumed %d of %d", n, len(rec))
			}
			want := *tc.m
			want.Properties = tc.props
			if len(tc.props) == 0 {
				want.Properties = nil
			}
			if len(want.Body) == 0 {
				want.Body = nil // DecodeStored copies, and a copy of nothing is nil
			}
			if !reflect.DeepEqual(got, &want) {
				t.Fatalf("decoded:\n got %+v\nwant %+v", got, &want)
			}
			if got.OffsetMsgID() != OffsetMsgID(tc.m.StoreHost, tc.m.CommitLogOffset) {
				t.Fatal("OffsetMsgID")
			}

			v, err := ViewRecord(rec, true)
			if err != nil {
				t.Fatal(err)
			}
			if v.Size != int32(len(rec)) || v.QueueID != tc.m.QueueID || v.Flag != tc.m.Flag || v.QueueOffset != tc.m.QueueOffset ||
				v.PhysicalOffset != tc.m.CommitLogOffset || v.SysFlag != tc.m.SysFlag || v.BornTimestamp != tc.m.BornTimestamp ||
				v.StoreTimestamp != tc.m.StoreTimestamp || v.ReconsumeTimes != tc.m.ReconsumeTimes ||
				v.PreparedTransactionOffset != tc.m.PreparedTransactionOffset || v.BodyCRC != BodyCRC(tc.m.Body) {
				t.Fatalf("view %+v", v)
			}
			if !bytes.Equal(rec[v.BodyOffset:v.BodyOffset+v.BodyLength], tc.m.Body) || string(v.Topic) != tc.m.Topic || string(v.Properties) != props {
				t.Fatal("view slices")
			}
			if tags, ok := v.Property(PropTags); tc.props[PropTags] != "" && (!ok || tags != tc.props[PropTags]) {
				t.Fatalf("view TAGS = %q", tags)
			}
		})
	}
}

func TestStoredQueueOffsetPositions(t *testing.T) {
	m := storedCases()[0].m
	rec, err := AppendStored(nil, m, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(be64(rec[RecordQueueOffsetPos:])); got != m.QueueOffset {
		t.Errorf("queue offset at %d = %d", RecordQueueOffsetPos, got)
	}
	if got := int64(be64(rec[RecordPhyOffsetPos:])); got != m.CommitLogOffset {
		t.Errorf("physical offset at %d = %d", RecordPhyOffsetPos, got)
	}
}

func be64(b []byte) uint64 {
	var v uint64
	for _, x := range b[:8] {
		v = v<<8 | uint64(x)
	}
	return v
}

func TestStoredBadCRC(t *testing.T) {
	rec, err := AppendStored(nil, storedCases()[0].m, "")
	if err != nil {
		t.Fatal(err)
	}
	rec[88] ^= 0xFF // first body byte
	if _, _, err := DecodeStored(rec, true); !errors.Is(err, ErrBadCRC) {
		t.Fatalf("DecodeStored(checkCRC) = %v, want ErrBadCRC", err)
	}
	if _, err := ViewRecord(rec, true); !errors.Is(err, ErrBadCRC) {
		t.Fatalf("ViewRecord(checkCRC) = %v, want ErrBadCRC", err)
	}
	if _, _, err := DecodeStored(rec, false); err != nil {
		t.Fatalf("DecodeStored without CRC check: %v", err)
	}
	if _, err := ViewRecord(rec, false); err != nil {
		t.Fatalf("ViewRecord without CRC check: %v", err)
	}
}

func TestStoredTruncated(t *testing.T) {
	for _, tc := range storedCases() {
		rec, err := AppendStored(nil, tc.m, EncodeProperties(tc.props))
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(rec); n++ {
			if _, _, err := DecodeStored(rec[:n], false); !errors.Is(err, ErrTruncated) {
				t.Fatalf("%s: DecodeStored of %d/%d bytes = %v, want ErrTruncated", tc.name, n, len(rec), err)
			}
			if _, err := ViewRecord(rec[:n], false); !errors.Is(err, ErrTruncated) {
				t.Fatalf("%s: ViewRecord of %d/%d bytes = %v, want ErrTruncated", tc.name, n, len(rec), err)
			}
		}
	}
}

func TestStoredMalformed(t *testing.T) {
	good, err := AppendStored(nil, storedCases()[0].m, "TAGS\x01a\x02")
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	for _, tc := range []struct {
		name string
		rec  []byte
	}{
		{"bad magic", mutate(func(b []byte) { b[4] = 0 })},
		{"size below minimum", mutate(func(b []byte) { b[0], b[1], b[2], b[3] = 0, 0, 0, 90 })},
		{"body length too big", mutate(func(b []byte) { b[84] = 0x7F })},
		{"topic length too big", mutate(func(b []byte) { b[88+11] = 200 })},
		{"properties length short", mutate(func(b []byte) { b[len(b)-8] = 1 })},
		{"size larger than fields", append(mutate(func(b []byte) { b[3]++ }), 0)},
		{"ipv6 flag on ipv4 record", mutate(func(b []byte) { b[39] |= byte(SysFlagStoreHostV6 | SysFlagBornHostV6) })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := DecodeStored(tc.rec, false); !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTruncated) {
				t.Errorf("DecodeStored = %v", err)
			}
			if _, err := ViewRecord(tc.rec, false); !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTruncated) {
				t.Errorf("ViewRecord = %v", err)
			}
		})
	}
	long := storedCases()[0].m
	long.Topic = strings.Repeat("t", MaxTopicLength+1)
	if _, err := AppendStored(nil, long, ""); !errors.Is(err, ErrMalformed) {
		t.Errorf("long topic: %v", err)
	}
	if _, err := AppendStored(nil, storedCases()[0].m, strings.Repeat("p", MaxPropertiesLength+1)); !errors.Is(err, ErrMalformed) {
		t.Errorf("long properties: %v", err)
	}
}

func TestBlankFiller(t *testing.T) {
	b := AppendBlank(nil, 100)
	if len(b) != BlankRecordSize {
		t.Fatalf("blank of %d bytes", len(b))
	}
	size, magic, err := PeekRecord(b)
	if err != nil || size != 100 || magic != BlankMagic {
		t.Fatalf("PeekRecord = %d %#x %v", size, magic, err)
	}
	v, err := ViewRecord(b, true)
	if !errors.Is(err, ErrBlank) || v.Size != 100 {
		t.Fatalf("ViewRecord = %+v %v, want ErrBlank with size 100", v, err)
	}
	if _, _, err := DecodeStored(b, false); !errors.Is(err, ErrMalformed) {
		t.Fatalf("DecodeStored of blank = %v", err)
	}
	if !bytes.Equal(b, []byte{0, 0, 0, 100, 0xCB, 0xD4, 0x31, 0x94}) {
		t.Fatalf("blank bytes % x", b)
	}
}

func TestDecodeMessages(t *testing.T) {
	var buf []byte
	var want []*MessageExt
	for _, tc := range storedCases() {
		var err error
		if buf, err = AppendStored(buf, tc.m, EncodeProperties(tc.props)); err != nil {
			t.Fatal(err)
		}
		want = append(want, tc.m)
	}
	got, err := DecodeMessages(buf)
	if err != nil || len(got) != len(want) {
		t.Fatalf("DecodeMessages: %d messages, %v", len(got), err)
	}
	for i := range got {
		if got[i].Topic != want[i].Topic || got[i].CommitLogOffset != want[i].CommitLogOffset || !bytes.Equal(got[i].Body, want[i].Body) {
			t.Errorf("message %d: %+v", i, got[i])
		}
	}
	got, err = DecodeMessages(buf[:len(buf)-1])
	if err == nil || len(got) != len(want)-1 {
		t.Fatalf("truncated tail: %d messages, %v", len(got), err)
	}
}

func TestOffsetMsgID(t *testing.T) {
	for _, tc := range []struct {
		host string
		off  int64
		want string
	}{
		{"127.0.0.1:10911", 0, "7F00000100002A9F0000000000000000"},
		{"192.168.1.5:10911", 4096, "C0A8010500002A9F0000000000001000"},
		{"[::ffff:10.0.0.1]:10911", 1, "0A00000100002A9F0000000000000001"},
		{"[2001:db8::5]:10911", 255, "20010DB800000000000000000000000500002A9F00000000000000FF"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			ap := netip.MustParseAddrPort(tc.host)
			id := OffsetMsgID(ap, tc.off)
			if id != tc.want {
				t.Fatalf("OffsetMsgID = %s, want %s", id, tc.want)
			}
			host, off, err := ParseOffsetMsgID(id)
			if err != nil || off != tc.off || host.Port() != ap.Port() || host.Addr() != ap.Addr().Unmap() {
				t.Fatalf("ParseOffsetMsgID = %v %d %v", host, off, err)
			}
			if _, off, err := ParseOffsetMsgID(strings.ToLower(id)); err != nil || off != tc.off {
				t.Fatalf("lower case: %d %v", off, err)
			}
		})
	}
	if n := len(OffsetMsgID(netip.MustParseAddrPort("1.2.3.4:5"), 1)); n != 32 {
		t.Errorf("IPv4 id length %d", n)
	}
	if n := len(OffsetMsgID(netip.MustParseAddrPort("[::1]:5"), 1)); n != 56 {
		t.Errorf("IPv6 id length %d", n)
	}
	for _, bad := range []string{"", "7F", "7F00000100002A9F000000000000000", "7F00000100002A9F000000000000000G",
		"C000020243AA00000000983d5bb000031", strings.Repeat("0", 40)} {
		if _, _, err := ParseOffsetMsgID(bad); !errors.Is(err, ErrBadField) {
			t.Errorf("ParseOffsetMsgID(%q) = %v, want ErrBadField", bad, err)
		}
	}
}

func TestUniqIDGenerator(t *testing.T) {
	g := NewUniqIDGenerator(netip.MustParseAddr("192.168.1.10"), 0x3039, 7)
	hex32 := regexp.MustCompile(`^[0-9A-Fa-f]{32}$`)
	const n = 100000
	seen := make(map[string]struct{}, n)
	for i := 0; i < n; i++ {
		id := g.Next()
		if !hex32.MatchString(id) {
			t.Fatalf("id %q is not 32 hex characters", id)
		}
		if _, dup := seen[id]; dup {
			t.Fatalf("duplicate id %s after %d ids", id, i)
		}
		seen[id] = struct{}{}
	}
	for id := range seen {
		if !strings.HasPrefix(id, "C0A8010A"+"3039"+"00000007") {
			t.Fatalf("id %s does not start with ip, pid and instance", id)
		}
		break
	}
	if id := NewUniqIDGenerator(netip.Addr{}, 1, 0).Next(); !strings.HasPrefix(id, "00000000") || len(id) != 32 {
		t.Fatalf("zero address id %s", id)
	}
}

func TestTagsHashCode(t *testing.T) {
	for _, tc := range []struct {
		tag       string
		java, go_ int64
	}{
		{"", 0, 0},
		{"TagA", 2598919, 2598919},
		{"TagB", 2598920, 2598920},
		{"TagC", 2598921, 2598921},
		{"hello world", 1794106052, 1794106052},
		{"标签", 857175, GoTagsHashCode("标签")},
		// outside the BMP Java hashes the surrogate pair D83D DE00
		{"\U0001F600", 31*0xD83D + 0xDE00, GoTagsHashCode("\U0001F600")},
		// invalid UTF-8 hashes as U+FFFD, as Java decodes it
		{"\xff", 0xFFFD, 0xFF},
	} {
		if got := TagsHashCode(tc.tag); got != tc.java {
			t.Errorf("TagsHashCode(%q) = %d, want %d", tc.tag, got, tc.java)
		}
		if got := GoTagsHashCode(tc.tag); got != tc.go_ {
			t.Errorf("GoTagsHashCode(%q) = %d, want %d", tc.tag, got, tc.go_)
		}
	}
	if TagsHashCode("标签") == GoTagsHashCode("标签") {
		t.Error("non-ASCII tags should hash differently in the Go client")
	}
	// An int32 overflow stays negative, as in Java.
	if got := TagsHashCode("zzzzzzzzzz"); got >= 0 || got < -1<<31 {
		t.Errorf("overflowing hash %d", got)
	}
}

func TestProperties(t *testing.T) {
	props := map[string]string{"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "X", "empty": "", "": "nokey"}
	enc := EncodeProperties(props)
	if enc != "KEYS\x01k1 k2\x02TAGS\x01TagA\x02UNIQ_KEY\x01X\x02" {
		t.Fatalf("EncodeProperties = %q", enc)
	}
	if EncodeProperties(nil) != "" {
		t.Fatal("nil properties")
	}
	for _, tc := range []struct {
		name string
		in   string
		want map[string]string
	}{
		{"encoded", enc, map[string]string{"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "X"}},
		{"no trailing separator", "a\x011\x02b\x012", map[string]string{"a": "1", "b": "2"}},
		{"junk pieces ignored", "\x02noval\x02\x01v\x02a\x01b\x01c\x02k\x01v\x02", map[string]string{"k": "v"}},
		{"empty value kept", "k\x01\x02", map[string]string{"k": ""}},
		{"empty", "", map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DecodeProperties(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("DecodeProperties(%q) = %q", tc.in, got)
			}
		})
	}
	if v, ok := PropertyValue(enc, "TAGS"); !ok || v != "TagA" {
		t.Errorf("PropertyValue TAGS = %q %v", v, ok)
	}
	if _, ok := PropertyValue(enc, "TAG"); ok {
		t.Error("PropertyValue matched a key prefix")
	}
	if _, ok := PropertyValue(enc, "MISSING"); ok {
		t.Error("PropertyValue found a missing key")
	}
}

func TestBatchDocBytes(t *testing.T) {
	raw := docBatch(t)
	items, err := DecodeBatch(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || string(items[0].Body) != "hi" || items[0].Properties != "TAGS\x01TagA\x02KEYS\x01k1 k2\x02" {
		t.Fatalf("items %+v", items)
	}
	again, err := AppendBatch(nil, items)
	if err != nil || !bytes.Equal(again, raw) {
		t.Fatalf("AppendBatch = % x, %v", again, err)
	}
	two := append(append([]byte(nil), raw...), raw...)
	if items, err := DecodeBatch(two); err != nil || len(items) != 2 {
		t.Fatalf("two records: %d %v", len(items), err)
	}
	for n := 0; n < len(raw); n++ {
		if _, err := DecodeBatch(raw[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("DecodeBatch of %d bytes = %v", n, err)
		}
	}
}

func TestPropertiesLen(t *testing.T) {
	for _, props := range []map[string]string{
		nil,
		{},
		{"KEYS": "k1 k2", "TAGS": "TagA", "UNIQ_KEY": "0A0B"},
		{"": "skipped", "EMPTY": "", "A": "b"},
	} {
		if got, want := PropertiesLen(props), len(EncodeProperties(props)); got != want {
			t.Errorf("PropertiesLen(%v) = %d, want %d", props, got, want)
		}
	}
}
