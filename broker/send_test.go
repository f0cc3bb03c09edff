package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

var hex32 = regexp.MustCompile(`^[0-9A-F]{32}$`)

// userProps are property values that must survive the round trip byte for
// byte (the separators \x01 and \x02 cannot appear in properties).
var userProps = map[string]string{
	"plain":   "value",
	"unicode": "héllo wörld ✓ 日本",
	"punct":   `a=b;c:d,e "quoted" 'single' \back`,
	"spaces":  "  leading and trailing  ",
	"long":    strings.Repeat("0123456789", 100),
}

// compressible makes a body of n bytes that zlib shrinks (the client
// compresses single-message bodies of 4 KiB and more).
func compressible(n int, seed string) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s line %d; ", seed, i)
	}
	return b.Bytes()[:n]
}

// TestSendModesDeliverIntact sends with SendSync, SendAsync, SendOneWay
// and as a batch, with keys, tags, user properties and bodies above the
// compression threshold, and checks that one consumer receives every
// message exactly as sent, with MsgId = UNIQ_KEY and 32-hex offset ids.
func TestSendModesDeliverIntact(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	topic := uniq("SendModes")
	p := e.producer()

	type sent struct {
		body  []byte
		mode  string
		msgID string // UNIQ_KEY ("" for batch members, which have none)
	}
	var (
		mu   sync.Mutex
		want = map[string]sent{} // by body prefix "mode-i"
	)
	mk := func(mode string, i int, body []byte) *primitive.Message {
		id := fmt.Sprintf("%s-%d", mode, i)
		if body == nil {
			body = []byte(id + "|")
		} else {
			body = append([]byte(id+"|"), body...)
		}
		m := primitive.NewMessage(topic, body)
		m.WithTag("Tag" + mode)
		m.WithKeys([]string{"key-" + id, "second-" + id})
		for k, v := range userProps { // WithProperties would share and replace the map
			m.WithProperty(k, v)
		}
		m.WithProperty("seq", id)
		mu.Lock()
		want[id] = sent{body: body, mode: mode}
		mu.Unlock()
		return m
	}

	// Sync sends, including two compressed bodies.
	for i := 0; i < 6; i++ {
		var body []byte
		switch i {
		case 4:
			body = compressible(5000, "small")
		case 5:
			body = compressible(300_000, "large")
		}
		m := mk("sync", i, body)
		res := sendOne(t, p, m)
		if !hex32.MatchString(res.OffsetMsgID) {
			t.Errorf("sync %d: offset msg id %q is not 32 upper-case hex digits", i, res.OffsetMsgID)
		}
		if res.MsgID == "" || res.MsgID != m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex) {
			t.Errorf("sync %d: MsgID %q, UNIQ_KEY %q", i, res.MsgID, m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex))
		}
		host, _, err := protocol.ParseOffsetMsgID(res.OffsetMsgID)
		if err != nil || host != netip.MustParseAddrPort(e.addr) {
			t.Errorf("sync %d: offset id %s names store host %v (err %v), want %s", i, res.OffsetMsgID, host, err, e.addr)
		}
		w := want[fmt.Sprintf("sync-%d", i)]
		w.msgID = res.MsgID
		want[fmt.Sprintf("sync-%d", i)] = w
	}

	// Async sends: every callback must arrive, each within 3 s (the
	// client's own timeout; v2.1.2 crashes on a late reply).
	type asyncResult struct {
		res *primitive.SendResult
		err error
		dt  time.Duration
	}
	results := make(chan asyncResult, 10)
	for i := 0; i < 10; i++ {
		var body []byte
		if i == 9 {
			body = compressible(8000, "async")
		}
		m := mk("async", i, body)
		start := time.Now()
		err := p.SendAsync(context.Background(), func(_ context.Context, res *primitive.SendResult, err error) {
			results <- asyncResult{res, err, time.Since(start)}
		}, m)
		if err != nil {
			t.Fatalf("SendAsync %d: %v", i, err)
		}
	}
	for i := 0; i < 10; i++ {
		select {
		case r := <-results:
			if r.err != nil || r.res == nil || r.res.Status != primitive.SendOK {
				t.Fatalf("async callback: %v %+v", r.err, r.res)
			}
			if r.dt > 3*time.Second {
				t.Errorf("async callback after %v", r.dt)
			}
			if !hex32.MatchString(r.res.OffsetMsgID) {
				t.Errorf("async: offset msg id %q", r.res.OffsetMsgID)
			}
		case <-time.After(4 * time.Second):
			t.Fatalf("only %d of 10 async callbacks arrived", i)
		}
	}

	// Oneway sends.
	for i := 0; i < 5; i++ {
		if err := p.SendOneWay(context.Background(), mk("oneway", i, nil)); err != nil {
			t.Fatalf("SendOneWay %d: %v", i, err)
		}
	}

	// One batch of 8 (code 320; no UNIQ_KEY on the records).
	var batch []*primitive.Message
	for i := 0; i < 8; i++ {
		batch = append(batch, mk("batch", i, nil))
	}
	res, err := p.SendSync(context.Background(), batch...)
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("batch: %v %+v", err, res)
	}
	ids := strings.Split(res.OffsetMsgID, ",")
	if len(ids) != 8 {
		t.Errorf("batch: %d offset ids in %q, want 8", len(ids), res.OffsetMsgID)
	}
	for _, id := range ids {
		if !hex32.MatchString(id) {
			t.Errorf("batch: offset id %q", id)
		}
	}

	total := len(want)
	// Oneway sends are not acknowledged: wait until the broker has them.
	eventually(t, 5*time.Second, "all messages stored", func() bool { return e.totalMax(topic, 4) == int64(total) })

	var ib inbox
	e.consumer(uniq("cg"), topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, ib.handler("c"))
	ib.waitLen(t, total, 20*time.Second)

	seen := map[string]bool{}
	for _, r := range ib.snapshot() {
		m := r.msg
		id := m.GetProperty("seq")
		w, ok := want[id]
		if !ok {
			t.Errorf("unexpected message %q", m.Body)
			continue
		}
		if seen[id] {
			t.Errorf("%s delivered twice", id)
		}
		seen[id] = true
		if !bytes.Equal(m.Body, w.body) {
			t.Errorf("%s: body of %d bytes differs from the %d sent", id, len(m.Body), len(w.body))
		}
		if m.GetTags() != "Tag"+w.mode {
			t.Errorf("%s: tag %q", id, m.GetTags())
		}
		if m.GetKeys() != "key-"+id+" second-"+id {
			t.Errorf("%s: keys %q", id, m.GetKeys())
		}
		for k, v := range userProps {
			if got := m.GetProperty(k); got != v {
				t.Errorf("%s: property %s = %q, want %q", id, k, got, v)
			}
		}
		if !hex32.MatchString(m.OffsetMsgId) {
			t.Errorf("%s: consumer-side offset id %q", id, m.OffsetMsgId)
		}
		uniqKey := m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)
		switch {
		case w.mode == "batch":
			if m.MsgId != m.OffsetMsgId {
				t.Errorf("%s: batch member MsgId %q, want its offset id %q", id, m.MsgId, m.OffsetMsgId)
			}
		case m.MsgId != uniqKey || uniqKey == "":
			t.Errorf("%s: MsgId %q, UNIQ_KEY %q", id, m.MsgId, uniqKey)
		case w.msgID != "" && w.msgID != m.MsgId:
			t.Errorf("%s: consumer MsgId %q, producer MsgID %q", id, m.MsgId, w.msgID)
		}
		if m.GetProperty(primitive.PropertyCluster) != "DefaultCluster" {
			t.Errorf("%s: CLUSTER property %q", id, m.GetProperty(primitive.PropertyCluster))
		}
	}
	if len(seen) != total {
		t.Errorf("received %d distinct messages, want %d", len(seen), total)
	}

	// The compressed bodies are stored compressed, flag bit 0 kept.
	compressed := 0
	for q := int32(0); q < 4; q++ {
		for _, m := range e.pullAll("raw_reader", topic, q) {
			if m.SysFlag&protocol.SysFlagCompressed != 0 {
				compressed++
			}
		}
	}
	if compressed != 3 {
		t.Errorf("%d stored records have the compressed flag, want 3", compressed)
	}
}

// TestSendOffsetIDViewAndQuery checks the offset message id of a send
// against VIEW_MESSAGE_BY_ID, QUERY_MESSAGE by key and by unique key,
// GET_MIN/MAX_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP.
func TestSendOffsetIDViewAndQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	topic := uniq("Query")
	p := e.producer()

	// Five messages to queue 0 with store times at least 2 ms apart.
	type rec struct {
		res   *primitive.SendResult
		body  string
		store int64
	}
	var recs []rec
	for i := 0; i < 5; i++ {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("query body %d", i)))
		m.WithKeys([]string{fmt.Sprintf("order-%d", i), "shared-key"})
		m.WithTag("TagQ")
		res := sendOne(t, p, m)
		recs = append(recs, rec{res: res, body: string(m.Body)})
		// Wait for the clock to move on so store times differ.
		now := time.Now().UnixMilli()
		eventually(t, time.Second, "clock", func() bool { return time.Now().UnixMilli() >= now+2 })
	}
	byQueue := map[int32][]int{}
	for i, r := range recs {
		byQueue[int32(r.res.MessageQueue.QueueId)] = append(byQueue[int32(r.res.MessageQueue.QueueId)], i)
	}

	// VIEW_MESSAGE_BY_ID with the offset of each offset id.
	for i, r := range recs {
		host, off, err := protocol.ParseOffsetMsgID(r.res.OffsetMsgID)
		if err != nil || host.String() != e.addr {
			t.Fatalf("offset id %s: %v %v", r.res.OffsetMsgID, host, err)
		}
		vh := protocol.ViewMessageRequestHeader{Offset: off}
		resp := e.invoke(protocol.NewRequest(protocol.ViewMessageByID, vh.Encode(), nil))
		if resp.Code != protocol.Success {
			t.Fatalf("view %d: code %d %s", off, resp.Code, resp.Remark)
		}
		m, _, err := protocol.DecodeStored(resp.Body, true)
		if err != nil {
			t.Fatalf("view %d: %v", off, err)
		}
		if string(m.Body) != r.body || m.CommitLogOffset != off || m.MsgID() != r.res.MsgID || m.QueueOffset != r.res.QueueOffset {
			t.Errorf("view %d: got body %q offset %d id %s queueOffset %d", off, m.Body, m.CommitLogOffset, m.MsgID(), m.QueueOffset)
		}
		recs[i].store = m.StoreTimestamp
	}
	// An offset with no record is refused, not a crash.
	vh := protocol.ViewMessageRequestHeader{Offset: 1 << 40}
	if resp := e.invoke(protocol.NewRequest(protocol.ViewMessageByID, vh.Encode(), nil)); resp.Code != protocol.SystemError || resp.Remark == "" {
		t.Errorf("view of a missing offset: code %d %q, want 1 with a remark", resp.Code, resp.Remark)
	}

	// QUERY_MESSAGE by key (the index is built asynchronously: poll).
	query := func(key string, unique bool) []*protocol.MessageExt {
		h := protocol.QueryMessageRequestHeader{Topic: topic, Key: key, MaxNum: 32, BeginTimestamp: 0, EndTimestamp: time.Now().Add(time.Hour).UnixMilli(), UniqueKeyQuery: unique}
		resp := e.invoke(protocol.NewRequest(protocol.QueryMessage, h.Encode(), nil))
		if resp.Code == protocol.QueryNotFound {
			return nil
		}
		if resp.Code != protocol.Success {
			t.Fatalf("query %q: code %d %s", key, resp.Code, resp.Remark)
		}
		var qh protocol.QueryMessageResponseHeader
		if err := qh.Decode(resp.ExtFields); err != nil {
			t.Errorf("query %q: response header: %v", key, err)
		}
		msgs, err := protocol.DecodeMessages(resp.Body)
		if err != nil {
			t.Fatalf("query %q: %v", key, err)
		}
		return msgs
	}
	var got []*protocol.MessageExt
	eventually(t, 5*time.Second, "key index", func() bool { got = query("shared-key", false); return len(got) == 5 })
	if msgs := query("order-3", false); len(msgs) != 1 || string(msgs[0].Body) != recs[3].body {
		t.Errorf("query order-3: %d messages", len(msgs))
	}
	if msgs := query(recs[2].res.MsgID, true); len(msgs) != 1 || string(msgs[0].Body) != recs[2].body {
		t.Errorf("unique key query: %d messages", len(msgs))
	}
	if msgs := query("no-such-key", false); len(msgs) != 0 {
		t.Errorf("query of an unknown key returned %d messages", len(msgs))
	}

	// Offsets and search by store time, per queue.
	eventually(t, 5*time.Second, "dispatch of the 5 messages", func() bool { return e.totalMax(topic, 4) == 5 })
	for q, idx := range byQueue {
		if got := e.maxOffset(topic, q); got != int64(len(idx)) {
			t.Errorf("queue %d: max offset %d, want %d", q, got, len(idx))
		}
		if got := e.minOffset(topic, q); got != 0 {
			t.Errorf("queue %d: min offset %d, want 0", q, got)
		}
		for k, i := range idx {
			h := protocol.SearchOffsetRequestHeader{Topic: topic, QueueID: q, Timestamp: recs[i].store}
			resp := e.invoke(protocol.NewRequest(protocol.SearchOffsetByTimestamp, h.Encode(), nil))
			var oh protocol.OffsetResponseHeader
			if err := oh.Decode(resp.ExtFields); err != nil || oh.Offset != int64(k) {
				t.Errorf("queue %d: search by store time of offset %d answered %d (%v)", q, k, oh.Offset, err)
			}
		}
		h := protocol.SearchOffsetRequestHeader{Topic: topic, QueueID: q, Timestamp: 1}
		resp := e.invoke(protocol.NewRequest(protocol.SearchOffsetByTimestamp, h.Encode(), nil))
		if resp.Ext("offset") != "0" {
			t.Errorf("queue %d: search before the first message answered %q, want 0", q, resp.Ext("offset"))
		}
	}
	// Unknown queues answer 0 with the offset field present.
	if got := e.maxOffset(topic, 77); got != 0 {
		t.Errorf("max offset of a queue never written: %d", got)
	}
}

// TestSendStoredProperties: what the broker stores as a send's property
// string, on the raw path (no map) and on the map path alike: the
// client's properties sorted by name, the last of a repeated name, no
// empty values or malformed pieces, the broker's CLUSTER (the batch
// header's laid over each item's), checked on the bytes a pull returns.
func TestSendStoredProperties(t *testing.T) {
	t.Parallel()
	const cluster = "PropsCluster"
	e := newEnv(t, func(o *broker.Options) { o.BrokerClusterName = cluster })
	topic := uniq("StoredProps")
	const c = protocol.PropCluster + "\x01"
	props := func(s ...string) string { return strings.Join(s, "") }
	tests := []struct {
		name   string
		header string
		items  []string // a batch when not nil
		want   []string
	}{
		{name: "unsorted, repeated, empty, malformed, the client's CLUSTER (raw path)",
			header: props("WAIT\x01true\x02K\x01a\x02K\x01b\x02E\x01\x02bad\x02CLUSTER\x01theirs\x02A\x01x\x01y\x02UNIQ_KEY\x01U1"),
			want:   []string{props(c, cluster, "\x02K\x01b\x02UNIQ_KEY\x01U1\x02WAIT\x01true\x02")}},
		{name: "sorted already (raw path)", header: "A\x01a\x02Z\x01z\x02",
			want: []string{props("A\x01a\x02", c, cluster, "\x02Z\x01z\x02")}},
		{name: "batch, the header over the items (raw path)", header: "K\x01h\x02", items: []string{"K\x01i\x02B\x01b\x02", "Z\x01z\x02"},
			want: []string{props("B\x01b\x02", c, cluster, "\x02K\x01h\x02"), props(c, cluster, "\x02K\x01h\x02Z\x01z\x02")}},
		{name: "REAL_TOPIC from the client (map path)", header: "Z\x01z\x02REAL_TOPIC\x01elsewhere\x02A\x01a",
			want: []string{props("A\x01a\x02", c, cluster, "\x02REAL_TOPIC\x01elsewhere\x02Z\x01z\x02")}},
	}
	for _, tt := range tests {
		h := protocol.SendMessageRequestHeaderV2{ProducerGroup: "pg", Topic: topic, DefaultTopic: protocol.DefaultTopicTemplate,
			DefaultTopicQueueNums: 4, QueueID: 1, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1, Properties: tt.header}
		before := e.maxOffset(topic, 1)
		if tt.items == nil {
			sendResult(t, e.invoke(protocol.NewRequest(protocol.SendMessageV2, h.Encode(), []byte("body"))))
		} else {
			var items []protocol.BatchItem
			for _, p := range tt.items {
				items = append(items, protocol.BatchItem{Body: []byte("b"), Properties: p})
			}
			body, err := protocol.AppendBatch(nil, items)
			if err != nil {
				t.Fatal(err)
			}
			h.Batch = true
			sendResult(t, e.invoke(protocol.NewRequest(protocol.SendBatchMessage, h.Encode(), body)))
		}
		eventually(t, 10*time.Second, tt.name+": dispatched", func() bool { return e.maxOffset(topic, 1) >= before+int64(len(tt.want)) })
		resp, _ := e.pull("g", topic, 1, before, int32(len(tt.want)), "TAG", "*")
		if resp.Code != protocol.Success {
			t.Fatalf("%s: pull: %d %s", tt.name, resp.Code, resp.Remark)
		}
		rest := resp.Body
		for i, want := range tt.want {
			v, err := protocol.ViewRecord(rest, false)
			if err != nil {
				t.Fatalf("%s: record %d: %v", tt.name, i, err)
			}
			if string(v.Properties) != want {
				t.Errorf("%s: message %d stored %q, want %q", tt.name, i, v.Properties, want)
			}
			rest = rest[v.Size:]
		}
	}
}
