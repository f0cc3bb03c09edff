package protocol

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func sampleRoute() *TopicRouteData {
	return &TopicRouteData{
		BrokerDatas: []BrokerData{
			{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerAddrs: map[int64]string{10: "10.0.0.7:10911", 0: "10.0.0.5:10911", 1: "10.0.0.6:10911"}},
			{Cluster: "DefaultCluster", BrokerName: "broker-b", BrokerAddrs: map[int64]string{}},
		},
		QueueDatas: []QueueData{
			{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6},
			{BrokerName: "broker-b", ReadQueueNums: 8, WriteQueueNums: 2, Perm: 4, TopicSysFlag: 1},
		},
	}
}

func TestTopicRouteDataEncodeExact(t *testing.T) {
	got := string(sampleRoute().Encode())
	want := `{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.5:10911","1":"10.0.0.6:10911","10":"10.0.0.7:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"},` +
		`{"brokerAddrs":{},"brokerName":"broker-b","cluster":"DefaultCluster"}],"filterServerTable":{},"orderTopicConf":"",` +
		`"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},` +
		`{"brokerName":"broker-b","perm":4,"readQueueNums":8,"topicSysFlag":1,"writeQueueNums":2}]}`
	if got != want {
		t.Fatalf("encode:\n got %s\nwant %s", got, want)
	}
	if strings.ContainsAny(got, " \t\r\n") {
		t.Fatal("encoding contains whitespace")
	}
}

func TestTopicRouteDataEncodeEmpty(t *testing.T) {
	got := string((&TopicRouteData{}).Encode())
	want := `{"brokerDatas":[],"filterServerTable":{},"orderTopicConf":"","queueDatas":[]}`
	if got != want {
		t.Fatalf("got %s want %s", got, want)
	}
}

// goClientAddrs mimics how rocketmq-client-go v2.1.2 reads brokerAddrs: the
// raw object text minus its braces, split on ',' and on the first ':' of
// each piece, quotes removed.
func goClientAddrs(raw string) map[int64]string {
	m := map[int64]string{}
	for _, piece := range strings.Split(raw[1:len(raw)-1], ",") {
		i := strings.Index(piece, ":")
		if i < 0 {
			continue
		}
		id, _ := strconv.ParseInt(strings.ReplaceAll(piece[:i], `"`, ""), 10, 64)
		m[id] = strings.ReplaceAll(piece[i+1:], `"`, "")
	}
	return m
}

func TestTopicRouteDataEncodeReadableByGoClientParser(t *testing.T) {
	r := sampleRoute()
	enc := string(r.Encode())
	for _, bd := range r.BrokerDatas {
		start := strings.Index(enc, `{"brokerAddrs":`)
		if start < 0 {
			t.Fatal("brokerAddrs missing")
		}
		rest := enc[start+len(`{"brokerAddrs":`):]
		end := strings.IndexByte(rest, '}')
		raw := rest[:end+1]
		enc = rest[end:]
		if got := goClientAddrs(raw); !reflect.DeepEqual(got, bd.BrokerAddrs) {
			t.Fatalf("%s: client parser got %v want %v", bd.BrokerName, got, bd.BrokerAddrs)
		}
	}
}

func TestTopicRouteDataRoundTrip(t *testing.T) {
	r := sampleRoute()
	r.OrderTopicConf = "broker-a:4;broker-b:8"
	r.FilterServerTable = map[string][]string{"10.0.0.5:10911": {"10.0.0.5:2000"}}
	got, err := DecodeTopicRouteData(r.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
	}
}

func TestDecodeTopicRouteDataFastjson(t *testing.T) {
	// As a Java NameServer writes it for clients older than 4.9.4.
	in := `{"brokerDatas":[{"brokerAddrs":{0:"192.168.1.5:10911",1:"192.168.1.6:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`
	r, err := DecodeTopicRouteData([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{0: "192.168.1.5:10911", 1: "192.168.1.6:10911"}
	if len(r.BrokerDatas) != 1 || !reflect.DeepEqual(r.BrokerDatas[0].BrokerAddrs, want) {
		t.Fatalf("brokerDatas %+v", r.BrokerDatas)
	}
	if len(r.QueueDatas) != 1 || r.QueueDatas[0] != (QueueData{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}) {
		t.Fatalf("queueDatas %+v", r.QueueDatas)
	}
}

func TestDecodeTopicRouteDataErrors(t *testing.T) {
	for _, in := range []string{"", "{", `{"queueDatas":5}`, `{"brokerDatas":[{"brokerAddrs":{x:"a"}}]}`} {
		if _, err := DecodeTopicRouteData([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: err %v, want ErrMalformed", in, err)
		}
	}
}

func TestQuoteIntKeys(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"none", `{"a":1}`, `{"a":1}`},
		{"first", `{0:"x"}`, `{"0":"x"}`},
		{"several", `{0:"x",12:"y"}`, `{"0":"x","12":"y"}`},
		{"negative", `{-1:"x"}`, `{"-1":"x"}`},
		{"spaces", `{ 0 : "x" , 1:"y"}`, `{ "0" : "x" , "1":"y"}`},
		{"array numbers untouched", `[1,2,{3:4}]`, `[1,2,{"3":4}]`},
		{"inside string untouched", `{"k":"{0:1,2:3}"}`, `{"k":"{0:1,2:3}"}`},
		{"escaped quote in string", `{"k":"a\"{0:1"}`, `{"k":"a\"{0:1"}`},
		{"nested", `{"a":{"b":{7:"z"}}}`, `{"a":{"b":{"7":"z"}}}`},
		{"empty", ``, ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(QuoteIntKeys([]byte(tc.in))); got != tc.want {
				t.Fatalf("got %s want %s", got, tc.want)
			}
		})
	}
}

func sampleRegisterBody() *RegisterBrokerBody {
	return &RegisterBrokerBody{
		TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
			DataVersion: DataVersion{Timestamp: 1690000000000, Counter: 3},
			TopicConfigTable: map[string]TopicConfig{
				"TopicTest": {TopicName: "TopicTest", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: TopicFilterSingleTag},
				"TBW102":    {TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: TopicFilterSingleTag},
			},
		},
		FilterServerList: []string{},
	}
}

func TestRegisterBrokerBodyPlainRoundTrip(t *testing.T) {
	b := sampleRegisterBody()
	tc := b.TopicConfigSerializeWrapper.TopicConfigTable["TopicTest"]
	tc.Order, tc.TopicSysFlag = true, 1
	b.TopicConfigSerializeWrapper.TopicConfigTable["TopicTest"] = tc
	enc, err := b.Encode(false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRegisterBrokerBody(enc, false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, b) {
		t.Fatalf("got %+v\nwant %+v", got, b)
	}
}

func TestDecodeRegisterBrokerBodyJavaJSON(t *testing.T) {
	in := `{"filterServerList":[],
 "topicConfigSerializeWrapper":{
   "dataVersion":{"counter":3,"timestamp":1690000000000},
   "topicConfigTable":{
     "TopicTest":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG",
                  "topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}}}}`
	got, err := DecodeRegisterBrokerBody([]byte(in), false)
	if err != nil {
		t.Fatal(err)
	}
	want := TopicConfig{TopicName: "TopicTest", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	if got.TopicConfigSerializeWrapper.TopicConfigTable["TopicTest"] != want {
		t.Fatalf("topic %+v", got.TopicConfigSerializeWrapper.TopicConfigTable)
	}
	if got.TopicConfigSerializeWrapper.DataVersion != (DataVersion{Timestamp: 1690000000000, Counter: 3}) {
		t.Fatalf("version %+v", got.TopicConfigSerializeWrapper.DataVersion)
	}
}

func TestRegisterBrokerBodyCompressedRoundTrip(t *testing.T) {
	b := sampleRegisterBody()
	b.FilterServerList = []string{"10.0.0.5:2000"}
	enc, err := b.Encode(true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRegisterBrokerBody(enc, true)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, b) {
		t.Fatalf("got %+v\nwant %+v", got, b)
	}
}

// javaCompressed builds a compressed body the way a Java broker does,
// independently of Encode.
func javaCompressed(t *testing.T, dv string, lines []string, filters string) []byte {
	t.Helper()
	var raw bytes.Buffer
	put := func(s string) {
		binary.Write(&raw, binary.BigEndian, int32(len(s)))
		raw.WriteString(s)
	}
	put(dv)
	binary.Write(&raw, binary.BigEndian, int32(len(lines)))
	for _, l := range lines {
		put(l)
	}
	put(filters)
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	w.Write(raw.Bytes())
	w.Close()
	return z.Bytes()
}

func TestDecodeRegisterBrokerBodyCompressedJava(t *testing.T) {
	in := javaCompressed(t, `{"counter":9,"timestamp":5}`,
		[]string{"a 4 4 6 SINGLE_TAG", "b 1 2 4 MULTI_TAG {\"k\":\"v\"}"}, `[]`)
	got, err := DecodeRegisterBrokerBody(in, true)
	if err != nil {
		t.Fatal(err)
	}
	want := &RegisterBrokerBody{
		TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
			DataVersion: DataVersion{Timestamp: 5, Counter: 9},
			TopicConfigTable: map[string]TopicConfig{
				"a": {TopicName: "a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"},
				"b": {TopicName: "b", ReadQueueNums: 1, WriteQueueNums: 2, Perm: 4, TopicFilterType: "MULTI_TAG"},
			},
		},
		FilterServerList: []string{},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestDecodeRegisterBrokerBodyErrors(t *testing.T) {
	good, err := sampleRegisterBody().Encode(true)
	if err != nil {
		t.Fatal(err)
	}
	// A stream announcing a 1 GiB data version section.
	var raw bytes.Buffer
	binary.Write(&raw, binary.BigEndian, int32(1<<30))
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(raw.Bytes())
	w.Close()

	tests := []struct {
		name       string
		in         []byte
		compressed bool
		want       error
	}{
		{"plain garbage", []byte("{nope"), false, ErrMalformed},
		{"not zlib", []byte("hello"), true, ErrMalformed},
		{"truncated stream", good[:len(good)/2], true, ErrTruncated},
		{"huge section", z.Bytes(), true, ErrMalformed},
		{"bad topic line", javaCompressed(t, `{}`, []string{"a x 4 6 SINGLE_TAG"}, `[]`), true, ErrMalformed},
		{"short topic line", javaCompressed(t, `{}`, []string{"a 4 4"}, `[]`), true, ErrMalformed},
		{"bad version", javaCompressed(t, `{x`, nil, `[]`), true, ErrMalformed},
		{"bad filters", javaCompressed(t, `{}`, nil, `{`), true, ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeRegisterBrokerBody(tc.in, tc.compressed); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

func TestRegisterBrokerBodyCompressedRejectsSpaces(t *testing.T) {
	b := &RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
		TopicConfigTable: map[string]TopicConfig{"a b": {TopicName: "a b"}},
	}}
	if _, err := b.Encode(true); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err %v", err)
	}
}

func TestBodyCRCMasked(t *testing.T) {
	// crc32("123456789") = 0xCBF43926; masked drops the top bit.
	if got := BodyCRC([]byte("123456789")); got != 0x4BF43926 {
		t.Fatalf("got %#x", got)
	}
}

func TestClusterInfoRoundTrip(t *testing.T) {
	c := &ClusterInfo{
		BrokerAddrTable: map[string]BrokerData{
			"broker-a": {Cluster: "c1", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "h:1", 1: "h:2"}},
			"broker-b": {Cluster: "c1", BrokerName: "broker-b", BrokerAddrs: map[int64]string{}},
		},
		ClusterAddrTable: map[string][]string{"c1": {"broker-a", "broker-b"}},
	}
	enc := string(c.Encode())
	want := `{"brokerAddrTable":{"broker-a":{"brokerAddrs":{"0":"h:1","1":"h:2"},"brokerName":"broker-a","cluster":"c1"},` +
		`"broker-b":{"brokerAddrs":{},"brokerName":"broker-b","cluster":"c1"}},"clusterAddrTable":{"c1":["broker-a","broker-b"]}}`
	if enc != want {
		t.Fatalf("got %s\nwant %s", enc, want)
	}
	got, err := DecodeClusterInfo([]byte(enc))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("got %+v", got)
	}
	// fastjson form
	got, err = DecodeClusterInfo([]byte(`{"brokerAddrTable":{"b":{"brokerAddrs":{0:"h:1"},"brokerName":"b","cluster":"c"}},"clusterAddrTable":{"c":["b"]}}`))
	if err != nil || got.BrokerAddrTable["b"].BrokerAddrs[0] != "h:1" {
		t.Fatalf("fastjson: %+v %v", got, err)
	}
}

func TestTopicListAndKVTable(t *testing.T) {
	if got := string((&TopicList{}).Encode()); got != `{"topicList":[]}` {
		t.Fatalf("empty topic list %s", got)
	}
	l := &TopicList{TopicList: []string{"a", "b"}, BrokerAddr: "h:1"}
	got, err := DecodeTopicList(l.Encode())
	if err != nil || !reflect.DeepEqual(got, l) {
		t.Fatalf("topic list %+v %v", got, err)
	}
	kv := &KVTable{Table: map[string]string{"b": "2", "a": "1"}}
	if s := string(kv.Encode()); s != `{"table":{"a":"1","b":"2"}}` {
		t.Fatalf("kv %s", s)
	}
	gkv, err := DecodeKVTable(kv.Encode())
	if err != nil || !reflect.DeepEqual(gkv, kv) {
		t.Fatalf("kv %+v %v", gkv, err)
	}
	if _, err := DecodeKVTable([]byte("[")); !errors.Is(err, ErrMalformed) {
		t.Fatalf("kv err %v", err)
	}
}

func TestDataVersion(t *testing.T) {
	v := DataVersion{Timestamp: 1, Counter: 2}
	got, err := DecodeDataVersion(v.Encode())
	if err != nil || got != v {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := DecodeDataVersion([]byte("x")); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err %v", err)
	}
}

func TestPerm(t *testing.T) {
	tests := []struct {
		perm     int32
		r, w, x  bool
		rendered string
	}{
		{6, true, true, false, "RW-"},
		{7, true, true, true, "RWX"},
		{4, true, false, false, "R--"},
		{2, false, true, false, "-W-"},
		{0, false, false, false, "---"},
	}
	for _, tc := range tests {
		if PermReadable(tc.perm) != tc.r || PermWritable(tc.perm) != tc.w || PermInheritable(tc.perm) != tc.x || PermString(tc.perm) != tc.rendered {
			t.Errorf("perm %d: %v %v %v %s", tc.perm, PermReadable(tc.perm), PermWritable(tc.perm), PermInheritable(tc.perm), PermString(tc.perm))
		}
	}
}

func TestNameServerHeadersRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		in, zero Header
	}{
		{"register", &RegisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "h:1", ClusterName: "c", HAServerAddr: "h:2", BrokerID: 1, Compressed: true, BodyCRC32: 12345}, &RegisterBrokerRequestHeader{}},
		{"register response", &RegisterBrokerResponseHeader{HAServerAddr: "h:2", MasterAddr: "h:1"}, &RegisterBrokerResponseHeader{}},
		{"unregister", &UnregisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "h:1", ClusterName: "c", BrokerID: 2}, &UnregisterBrokerRequestHeader{}},
		{"route", &GetRouteInfoRequestHeader{Topic: "t", AcceptStandardJSONOnly: true}, &GetRouteInfoRequestHeader{}},
		{"delete topic", &DeleteTopicInNamesrvRequestHeader{Topic: "t", ClusterName: "c"}, &DeleteTopicInNamesrvRequestHeader{}},
		{"put kv", &PutKVConfigRequestHeader{Namespace: "n", Key: "k", Value: "v"}, &PutKVConfigRequestHeader{}},
		{"kv", &KVConfigRequestHeader{Namespace: "n", Key: "k"}, &KVConfigRequestHeader{}},
		{"kv response", &GetKVConfigResponseHeader{Value: "v"}, &GetKVConfigResponseHeader{}},
		{"kv list", &GetKVListByNamespaceRequestHeader{Namespace: "n"}, &GetKVListByNamespaceRequestHeader{}},
		{"data version", &QueryDataVersionRequestHeader{BrokerName: "b", BrokerAddr: "h:1", ClusterName: "c", BrokerID: 0}, &QueryDataVersionRequestHeader{}},
		{"data version response", &QueryDataVersionResponseHeader{Changed: true}, &QueryDataVersionResponseHeader{}},
		{"topics by cluster", &GetTopicsByClusterRequestHeader{Cluster: "c"}, &GetTopicsByClusterRequestHeader{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.zero.Decode(tc.in.Encode()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tc.zero, tc.in) {
				t.Fatalf("got %+v want %+v", tc.zero, tc.in)
			}
		})
	}
}

func TestNameServerHeadersDecodeErrors(t *testing.T) {
	reg := func(mod func(m map[string]string)) map[string]string {
		m := (&RegisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "h:1", ClusterName: "c", BrokerID: 0}).Encode()
		mod(m)
		return m
	}
	tests := []struct {
		name string
		ext  map[string]string
		want error
	}{
		{"no broker name", reg(func(m map[string]string) { delete(m, "brokerName") }), ErrMissingField},
		{"no broker id", reg(func(m map[string]string) { delete(m, "brokerId") }), ErrMissingField},
		{"bad broker id", reg(func(m map[string]string) { m["brokerId"] = "x" }), ErrBadField},
		{"bad compressed", reg(func(m map[string]string) { m["compressed"] = "maybe" }), ErrBadField},
		{"bad crc", reg(func(m map[string]string) { m["bodyCrc32"] = "99999999999" }), ErrBadField},
		{"optional defaults", reg(func(m map[string]string) { delete(m, "compressed"); delete(m, "bodyCrc32"); delete(m, "haServerAddr") }), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h RegisterBrokerRequestHeader
			if err := h.Decode(tc.ext); !errors.Is(err, tc.want) {
				t.Fatalf("err %v want %v", err, tc.want)
			}
		})
	}
	var r GetRouteInfoRequestHeader
	if err := r.Decode(map[string]string{}); !errors.Is(err, ErrMissingField) {
		t.Fatalf("route: %v", err)
	}
	var p PutKVConfigRequestHeader
	if err := p.Decode(map[string]string{"namespace": "n", "key": "k"}); !errors.Is(err, ErrMissingField) {
		t.Fatalf("put kv: %v", err)
	}
}
