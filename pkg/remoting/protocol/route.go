package protocol

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Permission bits of a topic or broker (RocketMQ PermName). A normal topic
// has PermRead|PermWrite (6); the auto-create template TBW102 has 7.
const (
	PermPriority int32 = 8 // unused by the 4.x line
	PermRead     int32 = 4 // queues may be consumed
	PermWrite    int32 = 2 // queues may be produced to
	PermInherit  int32 = 1 // topic may serve as an auto-creation template
)

// PermReadable reports whether perm allows consuming.
func PermReadable(perm int32) bool { return perm&PermRead != 0 }

// PermWritable reports whether perm allows producing.
func PermWritable(perm int32) bool { return perm&PermWrite != 0 }

// PermInheritable reports whether perm marks an auto-creation template.
func PermInheritable(perm int32) bool { return perm&PermInherit != 0 }

// PermString renders perm as RocketMQ's perm2String does: "RWX" with '-'
// for each missing bit (X standing for inherit).
func PermString(perm int32) string {
	b := []byte("---")
	if PermReadable(perm) {
		b[0] = 'R'
	}
	if PermWritable(perm) {
		b[1] = 'W'
	}
	if PermInheritable(perm) {
		b[2] = 'X'
	}
	return string(b)
}

// Topic filter types as carried in TopicConfig.TopicFilterType.
const (
	TopicFilterSingleTag = "SINGLE_TAG"
	TopicFilterMultiTag  = "MULTI_TAG"
)

// MasterID is the broker id of a master; slaves have ids >= 1.
const MasterID int64 = 0

// NamespaceOrderTopicConfig is the NameServer KV namespace whose value for a
// topic becomes TopicRouteData.OrderTopicConf ("brokerName:queueNum;...").
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// QueueData is one broker's queues of a topic inside a route.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
}

// BrokerData is one logical broker (a master and its slaves): broker id ->
// "host:port".
type BrokerData struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
}

// Clone returns a deep copy of b.
func (b BrokerData) Clone() BrokerData {
	c := b
	c.BrokerAddrs = make(map[int64]string, len(b.BrokerAddrs))
	for id, addr := range b.BrokerAddrs {
		c.BrokerAddrs[id] = addr
	}
	return c
}

// TopicRouteData is the body of a GET_ROUTEINFO_BY_TOPIC response.
type TopicRouteData struct {
	OrderTopicConf    string
	QueueDatas        []QueueData
	BrokerDatas       []BrokerData
	FilterServerTable map[string][]string // broker address -> filter servers (obsolete, normally empty)
}

// Encode returns the route as compact JSON in the one shape every client
// can read, rocketmq-client-go v2.1.2's hand-written parser included:
//
//	{"brokerDatas":[{"brokerAddrs":{"0":"h:p","1":"h:p"},"brokerName":"b","cluster":"c"}],
//	 "filterServerTable":{},"orderTopicConf":"","queueDatas":[{"brokerName":"b","perm":6,
//	 "readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}
//
// (one line on the wire). Object keys are in lexical order, broker ids are
// quoted and in numeric order, every field is always present (brokerAddrs
// is {} when empty) and no whitespace is written: v2.1.2 cuts brokerAddrs
// out as raw text and splits it on ',' and ':', so a space would end up in a
// dialled address and a missing brokerAddrs makes it panic. Slices are
// written in the order given.
func (r *TopicRouteData) Encode() []byte {
	dst := make([]byte, 0, 128+96*len(r.BrokerDatas)+96*len(r.QueueDatas))
	dst = append(dst, `{"brokerDatas":[`...)
	for i := range r.BrokerDatas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = r.BrokerDatas[i].appendJSON(dst)
	}
	dst = append(dst, `],"filterServerTable":`...)
	dst = appendStringListMap(dst, r.FilterServerTable)
	dst = append(dst, `,"orderTopicConf":`...)
	dst = appendJSONString(dst, r.OrderTopicConf)
	dst = append(dst, `,"queueDatas":[`...)
	for i := range r.QueueDatas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = r.QueueDatas[i].appendJSON(dst)
	}
	return append(dst, "]}"...)
}

func (q *QueueData) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"brokerName":`...)
	dst = appendJSONString(dst, q.BrokerName)
	dst = append(dst, `,"perm":`...)
	dst = strconv.AppendInt(dst, int64(q.Perm), 10)
	dst = append(dst, `,"readQueueNums":`...)
	dst = strconv.AppendInt(dst, int64(q.ReadQueueNums), 10)
	dst = append(dst, `,"topicSysFlag":`...)
	dst = strconv.AppendInt(dst, int64(q.TopicSysFlag), 10)
	dst = append(dst, `,"writeQueueNums":`...)
	dst = strconv.AppendInt(dst, int64(q.WriteQueueNums), 10)
	return append(dst, '}')
}

func (b *BrokerData) appendJSON(dst []byte) []byte {
	ids := make([]int64, 0, len(b.BrokerAddrs))
	for id := range b.BrokerAddrs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	dst = append(dst, `{"brokerAddrs":{`...)
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, id, 10)
		dst = append(dst, `":`...)
		dst = appendJSONString(dst, b.BrokerAddrs[id])
	}
	dst = append(dst, `},"brokerName":`...)
	dst = appendJSONString(dst, b.BrokerName)
	dst = append(dst, `,"cluster":`...)
	dst = appendJSONString(dst, b.Cluster)
	return append(dst, '}')
}

func appendStringListMap(dst []byte, m map[string][]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ":["...)
		for j, v := range m[k] {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, v)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

type routeJSON struct {
	OrderTopicConf    string              `json:"orderTopicConf"`
	QueueDatas        []QueueData         `json:"queueDatas"`
	BrokerDatas       []BrokerData        `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"`
}

// DecodeTopicRouteData parses a route body. It accepts standard JSON and
// the fastjson form a Java NameServer sends to old clients, whose
// brokerAddrs keys are unquoted integers ({0:"h:p"}).
func DecodeTopicRouteData(data []byte) (*TopicRouteData, error) {
	var j routeJSON
	if err := json.Unmarshal(QuoteIntKeys(data), &j); err != nil {
		return nil, fmt.Errorf("%w: topic route: %v", ErrMalformed, err)
	}
	r := &TopicRouteData{
		OrderTopicConf:    j.OrderTopicConf,
		QueueDatas:        j.QueueDatas,
		BrokerDatas:       j.BrokerDatas,
		FilterServerTable: j.FilterServerTable,
	}
	for i := range r.BrokerDatas {
		if r.BrokerDatas[i].BrokerAddrs == nil {
			r.BrokerDatas[i].BrokerAddrs = map[int64]string{}
		}
	}
	return r, nil
}

// QuoteIntKeys rewrites fastjson's unquoted integer object keys ({0:"a"})
// as standard JSON ({"0":"a"}) so that encoding/json can read them. Input
// without such keys is returned as is (same slice); text inside strings is
// never touched.
func QuoteIntKeys(b []byte) []byte {
	var out []byte
	last := 0
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', ',':
			j := skipJSONSpace(b, i+1)
			k := j
			if k < len(b) && b[k] == '-' {
				k++
			}
			d := k
			for k < len(b) && b[k] >= '0' && b[k] <= '9' {
				k++
			}
			if k == d {
				continue
			}
			if m := skipJSONSpace(b, k); m < len(b) && b[m] == ':' {
				out = append(out, b[last:j]...)
				out = append(out, '"')
				out = append(out, b[j:k]...)
				out = append(out, '"')
				last = k
				i = k - 1
			}
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// DataVersion versions a broker's topic table: a broker bumps Counter (and
// sets Timestamp) on every topic change, and the NameServer rebuilds its
// queue data when the version it receives differs from the stored one.
type DataVersion struct {
	Timestamp int64 `json:"timestamp"`
	Counter   int64 `json:"counter"`
}

// Encode returns the version as JSON.
func (v DataVersion) Encode() []byte {
	b, _ := json.Marshal(v) // cannot fail for two ints
	return b
}

// DecodeDataVersion parses a DataVersion JSON body.
func DecodeDataVersion(data []byte) (DataVersion, error) {
	var v DataVersion
	if err := json.Unmarshal(data, &v); err != nil {
		return DataVersion{}, fmt.Errorf("%w: data version: %v", ErrMalformed, err)
	}
	return v, nil
}

// TopicConfig is a broker's configuration of one topic.
type TopicConfig struct {
	TopicName       string `json:"topicName"`
	ReadQueueNums   int32  `json:"readQueueNums"`
	WriteQueueNums  int32  `json:"writeQueueNums"`
	Perm            int32  `json:"perm"`
	TopicFilterType string `json:"topicFilterType"` // TopicFilterSingleTag or TopicFilterMultiTag
	TopicSysFlag    int32  `json:"topicSysFlag"`
	Order           bool   `json:"order"`
}

// TopicConfigSerializeWrapper is a broker's whole topic table with its
// version, as sent in registrations (and as Java stores topics.json).
type TopicConfigSerializeWrapper struct {
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion            `json:"dataVersion"`
}

// RegisterBrokerBody is the body of REGISTER_BROKER.
type RegisterBrokerBody struct {
	TopicConfigSerializeWrapper TopicConfigSerializeWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string                    `json:"filterServerList"`
}

// Limits applied when decoding a compressed RegisterBrokerBody, so that a
// hostile body cannot make the decoder allocate without bound.
const (
	maxRegisterInflated = 64 << 20 // bytes of inflated stream read at most
	maxRegisterSection  = 16 << 20 // bytes of one length-prefixed section
)

// Encode returns the body in its plain JSON form, or, with compressed, in
// the form a broker sends with compressed=true:
//
//	zlib stream (best compression) of:
//	  int32 len | DataVersion JSON
//	  int32 topicCount
//	  topicCount x ( int32 len | "topicName readQueueNums writeQueueNums perm topicFilterType" )
//	  int32 len | filterServerList JSON
//
// All int32 are big-endian. The compressed form drops topicSysFlag and
// order. Topics are written in name order. A topic name containing a space
// cannot be written compressed and yields an error.
//
// bodyCrc32 in the request header is BodyCRC of the returned bytes.
func (b *RegisterBrokerBody) Encode(compressed bool) ([]byte, error) {
	filters := b.FilterServerList
	if filters == nil {
		filters = []string{}
	}
	if !compressed {
		w := b.TopicConfigSerializeWrapper
		if w.TopicConfigTable == nil {
			w.TopicConfigTable = map[string]TopicConfig{}
		}
		return json.Marshal(RegisterBrokerBody{TopicConfigSerializeWrapper: w, FilterServerList: filters})
	}
	var raw []byte
	raw = appendSection(raw, b.TopicConfigSerializeWrapper.DataVersion.Encode())
	names := make([]string, 0, len(b.TopicConfigSerializeWrapper.TopicConfigTable))
	for name := range b.TopicConfigSerializeWrapper.TopicConfigTable {
		names = append(names, name)
	}
	sort.Strings(names)
	raw = binary.BigEndian.AppendUint32(raw, uint32(len(names)))
	for _, name := range names {
		tc := b.TopicConfigSerializeWrapper.TopicConfigTable[name]
		if tc.TopicName == "" {
			tc.TopicName = name
		}
		if strings.ContainsAny(tc.TopicName, " \t\r\n") || strings.ContainsAny(tc.TopicFilterType, " \t\r\n") {
			return nil, fmt.Errorf("%w: topic %q cannot be written in a compressed register body", ErrMalformed, tc.TopicName)
		}
		filter := tc.TopicFilterType
		if filter == "" {
			filter = TopicFilterSingleTag
		}
		line := fmt.Sprintf("%s %d %d %d %s", tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm, filter)
		raw = appendSection(raw, []byte(line))
	}
	fj, err := json.Marshal(filters)
	if err != nil {
		return nil, err
	}
	raw = appendSection(raw, fj)

	var buf bytes.Buffer
	zw, err := zlib.NewWriterLevel(&buf, zlib.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func appendSection(dst, b []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// DecodeRegisterBrokerBody parses a REGISTER_BROKER body in the form the
// compressed header flag announces. An empty plain body decodes to an empty
// registration (Java brokers never send one, but it is harmless).
func DecodeRegisterBrokerBody(data []byte, compressed bool) (*RegisterBrokerBody, error) {
	if !compressed {
		var b RegisterBrokerBody
		if len(data) > 0 {
			if err := json.Unmarshal(data, &b); err != nil {
				return nil, fmt.Errorf("%w: register broker body: %v", ErrMalformed, err)
			}
		}
		if b.TopicConfigSerializeWrapper.TopicConfigTable == nil {
			b.TopicConfigSerializeWrapper.TopicConfigTable = map[string]TopicConfig{}
		}
		for name, tc := range b.TopicConfigSerializeWrapper.TopicConfigTable {
			if tc.TopicName == "" {
				tc.TopicName = name
				b.TopicConfigSerializeWrapper.TopicConfigTable[name] = tc
			}
		}
		return &b, nil
	}
	zr, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: compressed register body: %v", ErrMalformed, err)
	}
	defer zr.Close()
	r := io.LimitReader(zr, maxRegisterInflated)

	dv, err := readSection(r, "data version")
	if err != nil {
		return nil, err
	}
	b := &RegisterBrokerBody{}
	if b.TopicConfigSerializeWrapper.DataVersion, err = DecodeDataVersion(dv); err != nil {
		return nil, err
	}
	var cnt [4]byte
	if _, err := io.ReadFull(r, cnt[:]); err != nil {
		return nil, sectionErr("topic count", err)
	}
	n := binary.BigEndian.Uint32(cnt[:])
	if n > maxRegisterInflated/4 {
		return nil, fmt.Errorf("%w: compressed register body: topic count %d", ErrMalformed, n)
	}
	b.TopicConfigSerializeWrapper.TopicConfigTable = make(map[string]TopicConfig, min(n, 1024))
	for i := uint32(0); i < n; i++ {
		line, err := readSection(r, "topic config")
		if err != nil {
			return nil, err
		}
		tc, err := parseTopicLine(string(line))
		if err != nil {
			return nil, err
		}
		b.TopicConfigSerializeWrapper.TopicConfigTable[tc.TopicName] = tc
	}
	fj, err := readSection(r, "filter server list")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(fj, &b.FilterServerList); err != nil {
		return nil, fmt.Errorf("%w: compressed register body: filter server list: %v", ErrMalformed, err)
	}
	if b.FilterServerList == nil {
		b.FilterServerList = []string{}
	}
	return b, nil
}

func readSection(r io.Reader, what string) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, sectionErr(what, err)
	}
	n := binary.BigEndian.Uint32(l[:])
	if n > maxRegisterSection {
		return nil, fmt.Errorf("%w: compressed register body: %s length %d", ErrMalformed, what, n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, sectionErr(what, err)
	}
	return buf, nil
}

func sectionErr(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: compressed register body: %s", ErrTruncated, what)
	}
	return fmt.Errorf("%w: compressed register body: %s: %v", ErrMalformed, what, err)
}

// parseTopicLine reads "name read write perm filterType"; later RocketMQ
// versions append more space-separated fields, which are ignored.
func parseTopicLine(s string) (TopicConfig, error) {
	f := strings.Split(s, " ")
	if len(f) < 5 || f[0] == "" {
		return TopicConfig{}, fmt.Errorf("%w: compressed register body: topic line %q", ErrMalformed, s)
	}
	var nums [3]int32
	for i := range nums {
		v, err := strconv.ParseInt(f[i+1], 10, 32)
		if err != nil {
			return TopicConfig{}, fmt.Errorf("%w: compressed register body: topic line %q", ErrMalformed, s)
		}
		nums[i] = int32(v)
	}
	return TopicConfig{
		TopicName:       f[0],
		ReadQueueNums:   nums[0],
		WriteQueueNums:  nums[1],
		Perm:            nums[2],
		TopicFilterType: f[4],
	}, nil
}

// ClusterInfo is the body of a GET_BROKER_CLUSTER_INFO response.
type ClusterInfo struct {
	BrokerAddrTable  map[string]BrokerData `json:"brokerAddrTable"`  // brokerName -> broker
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"` // cluster -> brokerNames
}

// Encode returns compact JSON with sorted keys and quoted broker ids, in
// the same style as TopicRouteData.Encode.
func (c *ClusterInfo) Encode() []byte {
	names := make([]string, 0, len(c.BrokerAddrTable))
	for n := range c.BrokerAddrTable {
		names = append(names, n)
	}
	sort.Strings(names)
	dst := append([]byte(nil), `{"brokerAddrTable":{`...)
	for i, n := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, n)
		dst = append(dst, ':')
		bd := c.BrokerAddrTable[n]
		dst = bd.appendJSON(dst)
	}
	dst = append(dst, `},"clusterAddrTable":`...)
	dst = appendStringListMap(dst, c.ClusterAddrTable)
	return append(dst, '}')
}

// DecodeClusterInfo parses a cluster info body (standard or fastjson).
func DecodeClusterInfo(data []byte) (*ClusterInfo, error) {
	var c ClusterInfo
	if err := json.Unmarshal(QuoteIntKeys(data), &c); err != nil {
		return nil, fmt.Errorf("%w: cluster info: %v", ErrMalformed, err)
	}
	if c.BrokerAddrTable == nil {
		c.BrokerAddrTable = map[string]BrokerData{}
	}
	if c.ClusterAddrTable == nil {
		c.ClusterAddrTable = map[string][]string{}
	}
	return &c, nil
}

// TopicList is the body of GET_ALL_TOPIC_LIST_FROM_NAMESERVER and
// GET_TOPICS_BY_CLUSTER responses.
type TopicList struct {
	TopicList  []string `json:"topicList"`
	BrokerAddr string   `json:"brokerAddr,omitempty"`
}

// Encode returns the list as JSON ("topicList" is [] when empty).
func (l *TopicList) Encode() []byte {
	c := *l
	if c.TopicList == nil {
		c.TopicList = []string{}
	}
	b, _ := json.Marshal(c) // cannot fail for strings
	return b
}

// DecodeTopicList parses a topic list body.
func DecodeTopicList(data []byte) (*TopicList, error) {
	var l TopicList
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("%w: topic list: %v", ErrMalformed, err)
	}
	return &l, nil
}

// KVTable is the body of GET_KVLIST_BY_NAMESPACE responses and of
// REGISTER_BROKER responses (the ORDER_TOPIC_CONFIG namespace).
type KVTable struct {
	Table map[string]string `json:"table"`
}

// Encode returns the table as JSON with sorted keys.
func (t *KVTable) Encode() []byte {
	c := *t
	if c.Table == nil {
		c.Table = map[string]string{}
	}
	b, _ := json.Marshal(c) // cannot fail for strings
	return b
}

// DecodeKVTable parses a KV table body.
func DecodeKVTable(data []byte) (*KVTable, error) {
	var t KVTable
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("%w: kv table: %v", ErrMalformed, err)
	}
	if t.Table == nil {
		t.Table = map[string]string{}
	}
	return &t, nil
}
