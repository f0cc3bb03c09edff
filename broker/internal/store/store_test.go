package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func testConfig(t testing.TB) Config {
	c := DefaultConfig()
	c.StorePathRootDir = t.TempDir()
	c.MappedFileSizeCommitLog = 64 << 10
	c.MappedFileSizeConsumeQueue = 20 * 100
	c.MaxMessageSize = 16 << 10
	c.MaxHashSlotNum = 64
	c.MaxIndexNum = 300
	c.FlushIntervalCommitLog = 10
	c.FlushIntervalConsumeQueue = 20
	return c
}

// fakeEnv is a clock and disk usage probe tests control.
type fakeEnv struct {
	clock atomic.Int64 // Unix ms
	usage atomic.Int32 // percent
}

func (e *fakeEnv) now() time.Time          { return time.UnixMilli(e.clock.Load()) }
func (e *fakeEnv) advance(d time.Duration) { e.clock.Add(d.Milliseconds()) }
func (e *fakeEnv) disk() (int, error)      { return int(e.usage.Load()), nil }

// openFake opens a store whose clock and disk usage come from the
// returned fakeEnv (clock starting at start, usage 10%).
func openFake(t testing.TB, c Config, start time.Time) (*Store, *fakeEnv) {
	e := &fakeEnv{}
	e.clock.Store(start.UnixMilli())
	e.usage.Store(10)
	openHook = func(s *Store) { s.now, s.usage = e.now, e.disk }
	defer func() { openHook = nil }()
	return openStore(t, c), e
}

func openStore(t testing.TB, c Config) *Store {
	t.Helper()
	s, err := Open(c, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var (
	bornHost  = netip.MustParseAddrPort("10.0.0.1:5000")
	storeHost = netip.MustParseAddrPort("10.0.0.2:10911")
)

func newMsg(topic string, qid int32, body string, props map[string]string) *protocol.MessageExt {
	m := &protocol.MessageExt{QueueID: qid, BornTimestamp: 1700000000000, BornHost: bornHost, StoreHost: storeHost}
	m.Topic, m.Body, m.Properties = topic, []byte(body), props
	return m
}

func put(t testing.TB, s *Store, m *protocol.MessageExt) PutResult {
	t.Helper()
	r, err := s.PutMessage(context.Background(), m)
	if err != nil {
		t.Fatalf("PutMessage: %v", err)
	}
	return r
}

func waitDispatched(t testing.TB, s *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitDispatched(ctx, s.MaxPhyOffset()); err != nil {
		t.Fatalf("WaitDispatched: %v", err)
	}
}

// encoded returns the bytes m must have in the log after a put.
func encoded(t testing.TB, m *protocol.MessageExt) []byte {
	c := *m
	b, err := protocol.AppendStored(nil, &c, protocol.EncodeProperties(m.Properties))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStorePutGetAcrossSegments(t *testing.T) {
	s := openStore(t, testConfig(t))
	var want [2][][]byte
	for i := 0; i < 600; i++ {
		qid := int32(i % 2)
		m := newMsg("orders", qid, fmt.Sprintf("body-%d-%s", i, bytes.Repeat([]byte("x"), i%300)), map[string]string{"TAGS": "t" + fmt.Sprint(i%3)})
		r := put(t, s, m)
		if r.QueueOffset != int64(len(want[qid])) || m.QueueOffset != r.QueueOffset || m.CommitLogOffset != r.CommitLogOffset {
			t.Fatalf("msg %d: queue offset %d, want %d", i, r.QueueOffset, len(want[qid]))
		}
		want[qid] = append(want[qid], encoded(t, m))
	}
	if n := len(s.cl.Segments()); n < 3 {
		t.Fatalf("only %d segments, want a roll-over", n)
	}
	waitDispatched(t, s)
	for qid := int32(0); qid < 2; qid++ {
		off := int64(0)
		for off < int64(len(want[qid])) {
			r := s.GetMessage("orders", qid, off, 32, 0, nil)
			if r.Status != Found {
				t.Fatalf("q%d@%d: status %v", qid, off, r.Status)
			}
			pos := 0
			for _, rec := range r.Records {
				got := r.Data[pos : pos+int(rec.Size)]
				if !bytes.Equal(got, want[qid][rec.QueueOffset]) {
					t.Fatalf("q%d@%d: record differs", qid, rec.QueueOffset)
				}
				pos += int(rec.Size)
			}
			off = r.NextBeginOffset
		}
		if got := s.MaxOffset("orders", qid); got != 300 {
			t.Fatalf("max offset %d", got)
		}
	}
	m, err := s.LookMessage(0)
	if err != nil || string(m.Body) != "body-0-" {
		t.Fatalf("LookMessage(0) = %v, %v", m, err)
	}
}

func TestStoreGetMessageStatuses(t *testing.T) {
	s := openStore(t, testConfig(t))
	for i := 0; i < 5; i++ {
		put(t, s, newMsg("t", 0, "x", nil))
	}
	waitDispatched(t, s)
	tests := []struct {
		name   string
		topic  string
		offset int64
		nums   int
		status GetStatus
		next   int64
		count  int
	}{
		{"found", "t", 0, 3, Found, 3, 3},
		{"zero max returns one", "t", 1, 0, Found, 2, 1},
		{"overflow one", "t", 5, 32, OffsetOverflowOne, 5, 0},
		{"overflow badly", "t", 9, 32, OffsetOverflowBadly, 5, 0},
		{"no logic queue", "none", 0, 32, NoMatchedLogicQueue, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.GetMessage(tc.topic, 0, tc.offset, tc.nums, 0, nil)
			if r.Status != tc.status || r.NextBeginOffset != tc.next || len(r.Records) != tc.count {
				t.Fatalf("got %v next %d count %d", r.Status, r.NextBeginOffset, len(r.Records))
			}
		})
	}
}

type tagFilter struct{ code int64 }

func (f tagFilter) MatchTagsCode(c int64) bool                    { return c == f.code }
func (f tagFilter) MatchProperties(func() map[string]string) bool { return true }

type propFilter struct{ key, val string }

func (f propFilter) MatchTagsCode(int64) bool { return true }
func (f propFilter) MatchProperties(p func() map[string]string) bool {
	return p()[f.key] == f.val
}

func TestStoreGetMessageFilter(t *testing.T) {
	s := openStore(t, testConfig(t))
	for i := 0; i < 10; i++ {
		tag := "A"
		if i%2 == 1 {
			tag = "B"
		}
		put(t, s, newMsg("t", 0, fmt.Sprint(i), map[string]string{"TAGS": tag, "n": fmt.Sprint(i)}))
	}
	waitDispatched(t, s)
	r := s.GetMessage("t", 0, 0, 32, 0, tagFilter{protocol.TagsHashCode("B")})
	if r.Status != Found || len(r.Records) != 5 || r.Records[0].QueueOffset != 1 || r.NextBeginOffset != 10 {
		t.Fatalf("tag filter: %v %d next %d", r.Status, len(r.Records), r.NextBeginOffset)
	}
	r = s.GetMessage("t", 0, 0, 32, 0, tagFilter{protocol.TagsHashCode("C")})
	if r.Status != NoMatchedMessage || r.NextBeginOffset != 10 {
		t.Fatalf("no match: %v next %d", r.Status, r.NextBeginOffset)
	}
	r = s.GetMessage("t", 0, 0, 32, 0, propFilter{"n", "7"})
	if len(r.Records) != 1 || r.Records[0].QueueOffset != 7 {
		t.Fatalf("property filter: %+v", r.Records)
	}
}

func TestStoreHalfTransactionNotDispatched(t *testing.T) {
	s := openStore(t, testConfig(t))
	put(t, s, newMsg("t", 0, "a", nil))
	half := newMsg("t", 0, "half", nil)
	half.SysFlag = protocol.SysFlagTxPrepared
	r := put(t, s, half)
	if r.QueueOffset != 0 {
		t.Fatalf("half message queue offset %d", r.QueueOffset)
	}
	commit := newMsg("t", 0, "commit", nil)
	commit.SysFlag = protocol.SysFlagTxCommit
	if r := put(t, s, commit); r.QueueOffset != 1 {
		t.Fatalf("commit queue offset %d", r.QueueOffset)
	}
	waitDispatched(t, s)
	if got := s.MaxOffset("t", 0); got != 2 {
		t.Fatalf("max offset %d, want 2", got)
	}
}

func TestStoreScheduleTopicTagsCode(t *testing.T) {
	const topic = "SCHEDULE_TOPIC_XXXX"
	// The broker's hook (schedule.TagsCoder): store time + level delay.
	coder := func(v *protocol.RecordView) (int64, bool) { return v.StoreTimestamp + 10_000, true }
	openHook = func(s *Store) { s.now = func() time.Time { return time.UnixMilli(1_000_000) } }
	s, err := Open(testConfig(t), nil, WithTagsCoder(topic, coder))
	openHook = nil
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m := newMsg(topic, 2, "later", map[string]string{"DELAY": "3", "TAGS": "x"})
	put(t, s, m)
	waitDispatched(t, s)
	u, err := s.ReadQueue(topic, 2, 0, 10)
	if err != nil || len(u) != 1 {
		t.Fatalf("ReadQueue: %v %v", u, err)
	}
	if want := int64(1_000_000 + 10_000); u[0].TagsCode != want {
		t.Fatalf("tags code %d, want %d", u[0].TagsCode, want)
	}
}

func TestStoreBatchConsecutiveOffsets(t *testing.T) {
	s := openStore(t, testConfig(t))
	put(t, s, newMsg("t", 1, "first", nil))
	batch := []*protocol.MessageExt{newMsg("t", 1, "a", nil), newMsg("t", 1, "b", nil), newMsg("t", 1, "c", nil)}
	r, err := s.PutMessages(context.Background(), batch)
	if err != nil || r.QueueOffset != 1 || r.Count != 3 {
		t.Fatalf("PutMessages: %+v %v", r, err)
	}
	for i, m := range batch {
		if m.QueueOffset != int64(1+i) {
			t.Fatalf("batch[%d] queue offset %d", i, m.QueueOffset)
		}
	}
	if _, err := s.PutMessages(context.Background(), []*protocol.MessageExt{newMsg("t", 1, "a", nil), newMsg("u", 1, "b", nil)}); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("mixed batch: %v", err)
	}
}

// TestStorePutEncoded: a put with the property strings already encoded
// writes the records PutMessages writes with the maps.
func TestStorePutEncoded(t *testing.T) {
	props := []map[string]string{{"TAGS": "a", "KEYS": "k1 k2", "UNIQ_KEY": "U1"}, nil, {"WAIT": "true"}}
	withMaps, withStrings := openStore(t, testConfig(t)), openStore(t, testConfig(t))
	var mapped, enc []*protocol.MessageExt
	var strs []string
	for i, p := range props {
		mapped = append(mapped, newMsg("t", 2, fmt.Sprint("body-", i), p))
		enc = append(enc, newMsg("t", 2, fmt.Sprint("body-", i), nil))
		strs = append(strs, protocol.EncodeProperties(p))
	}
	for _, batch := range [][2]int{{0, 1}, {1, 3}} {
		rm, err := withMaps.PutMessages(context.Background(), mapped[batch[0]:batch[1]])
		if err != nil {
			t.Fatal(err)
		}
		re, err := withStrings.PutEncoded(context.Background(), enc[batch[0]:batch[1]], strs[batch[0]:batch[1]])
		if err != nil {
			t.Fatal(err)
		}
		if rm.QueueOffset != re.QueueOffset || rm.WroteBytes != re.WroteBytes || rm.Count != re.Count {
			t.Fatalf("PutEncoded %+v, PutMessages %+v", re, rm)
		}
	}
	a, err := withMaps.ReadCommitLog(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	b, err := withStrings.ReadCommitLog(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	// Only the store timestamps may differ.
	for i, m := range mapped {
		if pos := storeTimestampPos(m.SysFlag) + int(m.CommitLogOffset); pos+8 <= len(a) && pos+8 <= len(b) {
			copy(b[pos:pos+8], a[pos:pos+8])
		} else {
			t.Fatalf("message %d beyond the log read", i)
		}
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("PutEncoded wrote other bytes:\n%q\n%q", b, a)
	}
	if _, err := withStrings.PutEncoded(context.Background(), enc[:2], strs[:1]); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("props for 1 of 2 messages: %v", err)
	}
}

func TestStoreRefusals(t *testing.T) {
	c := testConfig(t)
	s, env := openFake(t, c, time.Now())
	if _, err := s.PutMessage(context.Background(), newMsg("t", 0, string(make([]byte, c.MaxMessageSize)), nil)); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("large: %v", err)
	}
	env.usage.Store(95)
	s.checkDisk()
	if _, err := s.PutMessage(context.Background(), newMsg("t", 0, "x", nil)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("disk full: %v", err)
	}
	env.usage.Store(10)
	s.checkDisk()
	put(t, s, newMsg("t", 0, "x", nil))
	s.Close()
	if _, err := s.PutMessage(context.Background(), newMsg("t", 0, "x", nil)); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("closed: %v", err)
	}
}

func TestStoreReopenContinuesOffsets(t *testing.T) {
	c := testConfig(t)
	s, err := Open(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var recs [][]byte
	for i := 0; i < 300; i++ {
		m := newMsg("t", 0, fmt.Sprintf("m%d", i), map[string]string{"KEYS": fmt.Sprintf("k%d", i)})
		put(t, s, m)
		recs = append(recs, encoded(t, m))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.abortPath()); !os.IsNotExist(err) {
		t.Fatalf("abort file after Close: %v", err)
	}
	s = openStore(t, c)
	if got := s.MaxOffset("t", 0); got != 300 {
		t.Fatalf("max offset after reopen %d", got)
	}
	r := put(t, s, newMsg("t", 0, "next", nil))
	if r.QueueOffset != 300 {
		t.Fatalf("queue offset after reopen %d", r.QueueOffset)
	}
	waitDispatched(t, s)
	got := s.GetMessage("t", 0, 299, 2, 0, nil)
	if got.Status != Found || len(got.Records) != 2 || !bytes.Equal(got.Data[:got.Records[0].Size], recs[299]) {
		t.Fatalf("after reopen: %v %d", got.Status, len(got.Records))
	}
}

func TestStoreQueryMessages(t *testing.T) {
	s := openStore(t, testConfig(t))
	for i := 0; i < 400; i++ { // more than MaxIndexNum entries: the index rolls
		put(t, s, newMsg("t", 0, fmt.Sprint(i), map[string]string{"KEYS": fmt.Sprintf("k%d shared", i%50), "UNIQ_KEY": fmt.Sprintf("U%04d", i)}))
	}
	waitDispatched(t, s)
	if s.idx.Files() < 2 {
		t.Fatalf("index did not roll: %d files", s.idx.Files())
	}
	r := s.QueryMessages("t", "k7", 100, 0, time.Now().Add(time.Hour).UnixMilli())
	if len(r.Offsets) != 8 {
		t.Fatalf("k7: %d results", len(r.Offsets))
	}
	msgs, err := protocol.DecodeMessages(r.Data)
	if err != nil || len(msgs) != 8 {
		t.Fatalf("decode: %v", err)
	}
	for _, m := range msgs {
		if !bytes.Contains([]byte(m.Property("KEYS")), []byte("k7 ")) {
			t.Fatalf("wrong message %q", m.Property("KEYS"))
		}
	}
	r = s.QueryMessages("t", "U0123", 10, 0, time.Now().Add(time.Hour).UnixMilli())
	if len(r.Offsets) != 1 {
		t.Fatalf("uniq key: %d", len(r.Offsets))
	}
	if r := s.QueryMessages("other", "k7", 10, 0, time.Now().Add(time.Hour).UnixMilli()); len(r.Offsets) != 0 {
		t.Fatalf("other topic: %d", len(r.Offsets))
	}
	if r := s.QueryMessages("t", "shared", 5, 0, time.Now().Add(time.Hour).UnixMilli()); len(r.Offsets) != 5 {
		t.Fatalf("max num: %d", len(r.Offsets))
	}
}

func TestStoreSearchOffsetByTimestamp(t *testing.T) {
	s, env := openFake(t, testConfig(t), time.UnixMilli(10_000))
	for i := 0; i < 50; i++ {
		put(t, s, newMsg("t", 0, "x", nil))
		env.advance(10 * time.Millisecond)
	}
	waitDispatched(t, s)
	tests := []struct {
		ts   int64
		want int64
	}{{0, 0}, {10_000, 0}, {10_001, 1}, {10_100, 10}, {10_495, 50}, {99_999, 50}}
	for _, tc := range tests {
		if got := s.SearchOffsetByTimestamp("t", 0, tc.ts); got != tc.want {
			t.Errorf("ts %d: %d, want %d", tc.ts, got, tc.want)
		}
	}
	if ts, err := s.EarliestStoreTime("t", 0); err != nil || ts != 10_000 {
		t.Fatalf("earliest %d %v", ts, err)
	}
}

func TestStoreRetention(t *testing.T) {
	c := testConfig(t)
	c.DeleteWhen = "04"
	s, env := openFake(t, c, time.Date(2026, 1, 1, 12, 0, 0, 0, time.Local))
	body := string(bytes.Repeat([]byte("r"), 1000))
	for i := 0; i < 300; i++ {
		put(t, s, newMsg("t", 0, body, map[string]string{"KEYS": "key"}))
	}
	waitDispatched(t, s)
	before := len(s.cl.Segments())
	if n := s.Clean(false); n != 0 {
		t.Fatalf("deleted %d outside deleteWhen with space left", n)
	}
	env.advance(73 * time.Hour) // 13:00, not 04: only manual or disk pressure
	if n := s.Clean(false); n != 0 {
		t.Fatalf("deleted %d at the wrong hour", n)
	}
	env.usage.Store(80) // above diskMaxUsedSpaceRatio 75
	n := s.Clean(false)
	if n == 0 || len(s.cl.Segments()) != before-n {
		t.Fatalf("deleted %d of %d", n, before)
	}
	minQ := s.MinOffset("t", 0)
	if minQ == 0 {
		t.Fatal("consume queue min offset not moved")
	}
	r := s.GetMessage("t", 0, 0, 32, 0, nil)
	if r.Status != OffsetTooSmall || r.NextBeginOffset != minQ {
		t.Fatalf("old offset: %v next %d, min %d", r.Status, r.NextBeginOffset, minQ)
	}
	r = s.GetMessage("t", 0, minQ, 32, 0, nil)
	if r.Status != Found || r.Records[0].QueueOffset != minQ {
		t.Fatalf("new min: %v", r.Status)
	}
	if _, err := s.ReadRecord(0); !errors.Is(err, ErrOffsetRemoved) {
		t.Fatalf("ReadRecord(0): %v", err)
	}
	// Forced cleaning deletes unexpired files too, but never the last.
	env.advance(-73 * time.Hour)
	env.usage.Store(88)
	for s.Clean(false) > 0 {
	}
	if len(s.cl.Segments()) != 1 {
		t.Fatalf("%d segments left after forced cleaning", len(s.cl.Segments()))
	}
}

func TestStoreSyncFlushGroupCommit(t *testing.T) {
	c := testConfig(t)
	c.FlushDiskType = SyncFlush
	c.MappedFileSizeCommitLog = 4 << 20
	s := openStore(t, c)
	var wg sync.WaitGroup
	const writers, each = 32, 20
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				r, err := s.PutMessage(context.Background(), newMsg("t", int32(w%4), "payload", nil))
				if err != nil || r.Status != PutOK {
					t.Errorf("put: %v %v", r.Status, err)
					return
				}
				if s.ConfirmedOffset() < r.CommitLogOffset+int64(r.WroteBytes) {
					t.Errorf("acknowledged before flush")
				}
			}
		}()
	}
	wg.Wait()
	st := s.Stats()
	t.Logf("%d messages, %d fsyncs", st.Messages, st.Flushes)
	if st.Flushes >= st.Messages {
		t.Fatalf("no group commit: %d fsyncs for %d messages", st.Flushes, st.Messages)
	}
}

func TestStoreDispatchListenerAndDeleteTopics(t *testing.T) {
	s := openStore(t, testConfig(t))
	var mu sync.Mutex
	var seen []string
	s.SetDispatchListener(func(topic string, qid int32, qo, tags int64, props []byte) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s/%d@%d", topic, qid, qo))
		mu.Unlock()
	})
	put(t, s, newMsg("a", 0, "x", nil))
	put(t, s, newMsg("b", 3, "x", nil))
	waitDispatched(t, s)
	mu.Lock()
	if fmt.Sprint(seen) != "[a/0@0 b/3@0]" {
		t.Fatalf("listener saw %v", seen)
	}
	mu.Unlock()
	if got := fmt.Sprint(s.Topics()); got != "map[a:[0] b:[3]]" {
		t.Fatalf("topics %s", got)
	}
	s.DeleteTopics("a")
	if got := fmt.Sprint(s.Topics()); got != "map[b:[3]]" {
		t.Fatalf("topics after delete %s", got)
	}
	if _, err := os.Stat(filepath.Join(s.cfg.consumeQueueDir(), "a")); !os.IsNotExist(err) {
		t.Fatalf("topic dir left: %v", err)
	}
	if r := put(t, s, newMsg("a", 0, "x", nil)); r.QueueOffset != 0 {
		t.Fatalf("recreated topic offset %d", r.QueueOffset)
	}
}

func TestStoreReplicationRaw(t *testing.T) {
	master := openStore(t, testConfig(t))
	for i := 0; i < 200; i++ {
		put(t, master, newMsg("t", 0, fmt.Sprintf("m%d", i), nil))
	}
	slave := openStore(t, testConfig(t))
	slave.SetReadOnly(true)
	for off := int64(0); off < master.MaxPhyOffset(); {
		b, err := master.ReadCommitLog(off, 5000)
		if err != nil {
			t.Fatal(err)
		}
		if err := slave.AppendRaw(off, b); err != nil {
			t.Fatal(err)
		}
		off += int64(len(b))
	}
	waitDispatched(t, slave)
	if slave.MaxOffset("t", 0) != 200 || slave.MaxPhyOffset() != master.MaxPhyOffset() {
		t.Fatalf("slave max %d phy %d", slave.MaxOffset("t", 0), slave.MaxPhyOffset())
	}
	if _, err := slave.PutMessage(context.Background(), newMsg("t", 0, "x", nil)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("slave put: %v", err)
	}
}

// TestStoreDispatchLimit: records are dispatched only up to the limit (a
// record crossing it waits), the limit's rise is followed, and Close does
// not dispatch past it.
func TestStoreDispatchLimit(t *testing.T) {
	s := openStore(t, testConfig(t))
	var limit atomic.Int64
	s.SetDispatchLimit(limit.Load)
	var rs []PutResult
	for _, body := range []string{"a", "b", "c"} {
		rs = append(rs, put(t, s, newMsg("t", 0, body, nil)))
	}
	end := func(r PutResult) int64 { return r.CommitLogOffset + int64(r.WroteBytes) }
	wait := func(phy int64) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.WaitDispatched(ctx, phy); err != nil {
			t.Fatalf("WaitDispatched(%d): %v (dispatched %d)", phy, err, s.DispatchedOffset())
		}
	}
	limit.Store(end(rs[0]) + 10) // inside the second record
	s.WakeDispatcher()
	wait(end(rs[0]))
	if got := s.MaxOffset("t", 0); got != 1 {
		t.Fatalf("queue max offset %d under a limit inside the second record, want 1", got)
	}
	limit.Store(end(rs[1]))
	s.WakeDispatcher()
	wait(end(rs[1]))
	if got := s.MaxOffset("t", 0); got != 2 {
		t.Fatalf("queue max offset %d, want 2 (the third record is above the limit)", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := s.DispatchedOffset(), end(rs[1]); got != want {
		t.Fatalf("dispatched %d after Close, want the limit %d", got, want)
	}
}
