package schedule

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/internal/jsonfile"
	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

const fastLevels = "100ms 200ms 1s"

func storeConfig(dir string) store.Config {
	c := store.DefaultConfig()
	c.StorePathRootDir = dir
	c.MappedFileSizeCommitLog = 64 << 10
	c.MappedFileSizeConsumeQueue = 20 * 100
	c.MaxMessageSize = 16 << 10
	c.MaxHashSlotNum = 64
	c.MaxIndexNum = 300
	c.FlushIntervalCommitLog = 10
	c.FlushIntervalConsumeQueue = 20
	c.MessageDelayLevel = fastLevels
	return c
}

func openStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	s, err := store.Open(storeConfig(dir), nil, testCoder())
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newService starts a service on st whose goroutines the dispatch
// listener wakes.
func newService(t *testing.T, st *store.Store, dir string, mod func(*Options)) *Service {
	t.Helper()
	levels, err := store.ParseDelayLevels(fastLevels)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Store: st, Levels: levels, OffsetPath: filepath.Join(dir, "config", "delayOffset.json"),
		FlushInterval: 50 * time.Millisecond, PollInterval: 20 * time.Millisecond, RetryBackoff: 10 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	st.SetDispatchListener(func(topic string, qid int32, _, _ int64, _ []byte) {
		if topic == Topic {
			s.Notify(int(qid) + 1)
		}
	})
	s.Start()
	t.Cleanup(func() { s.Stop(context.Background()) })
	return s
}

var host = netip.MustParseAddrPort("10.0.0.1:5000")

func newMsg(topic string, qid int32, body string, props map[string]string) *protocol.MessageExt {
	m := &protocol.MessageExt{QueueID: qid, BornTimestamp: 1700000000000, BornHost: host, StoreHost: host, ReconsumeTimes: 2}
	m.Topic, m.Body, m.Properties, m.Flag = topic, []byte(body), props, 7
	return m
}

// sendDelayed diverts and stores a message like the broker's send path.
func sendDelayed(t *testing.T, st *store.Store, topic string, qid int32, level int, id string) *protocol.MessageExt {
	t.Helper()
	m := newMsg(topic, qid, "body-"+id, map[string]string{
		protocol.PropDelayLevel: strconv.Itoa(level), protocol.PropUniqKey: id, protocol.PropTags: "T", "user": "u",
	})
	if !Divert(m, 3) {
		t.Fatalf("Divert(%s) = false", id)
	}
	if _, err := st.PutMessage(context.Background(), m); err != nil {
		t.Fatalf("PutMessage: %v", err)
	}
	return m
}

// readAll returns every message of topic/qid.
func readAll(t *testing.T, st *store.Store, topic string, qid int32) []*protocol.MessageExt {
	t.Helper()
	var out []*protocol.MessageExt
	for off := int64(0); off < st.MaxOffset(topic, qid); {
		r := st.GetMessage(topic, qid, off, 32, 0, nil)
		ms, err := protocol.DecodeMessages(r.Data)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		out = append(out, ms...)
		if r.NextBeginOffset <= off {
			break
		}
		off = r.NextBeginOffset
	}
	return out
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDivert(t *testing.T) {
	tests := []struct {
		name    string
		delay   string
		sysFlag int32
		want    bool
		level   int
	}{
		{"level 3", "3", 0, true, 3},
		{"clamped", "99", 0, true, 18},
		{"level 1", "1", 0, true, 1},
		{"zero", "0", 0, false, 0},
		{"negative", "-1", 0, false, 0},
		{"absent", "", 0, false, 0},
		{"garbage", "x", 0, false, 0},
		{"prepared", "3", protocol.SysFlagTxPrepared, false, 0},
		{"rollback", "3", protocol.SysFlagTxRollback, false, 0},
		{"committed", "3", protocol.SysFlagTxCommit, true, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMsg("Orders", 5, "b", map[string]string{protocol.PropDelayLevel: tc.delay})
			m.SysFlag = tc.sysFlag
			if got := Divert(m, 18); got != tc.want {
				t.Fatalf("Divert = %v, want %v", got, tc.want)
			}
			if !tc.want {
				if m.Topic != "Orders" || m.QueueID != 5 {
					t.Fatalf("changed: %s/%d", m.Topic, m.QueueID)
				}
				return
			}
			if m.Topic != Topic || m.QueueID != int32(tc.level-1) || m.Property(protocol.PropRealTopic) != "Orders" ||
				m.Property(protocol.PropRealQueueID) != "5" || m.Property(protocol.PropDelayLevel) != strconv.Itoa(tc.level) {
				t.Fatalf("diverted to %s/%d props %v", m.Topic, m.QueueID, m.Properties)
			}
		})
	}
}

func TestRestore(t *testing.T) {
	m := newMsg("Orders", 5, "b", map[string]string{protocol.PropDelayLevel: "2", protocol.PropUniqKey: "U", "k": "v"})
	m.SysFlag = protocol.SysFlagTxCommit
	Divert(m, 18)
	m.QueueOffset, m.CommitLogOffset, m.StoreTimestamp = 9, 99, 999
	out, err := Restore(m)
	if err != nil {
		t.Fatal(err)
	}
	if out.Topic != "Orders" || out.QueueID != 5 || string(out.Body) != "b" || out.Flag != 7 || out.SysFlag != protocol.SysFlagTxCommit ||
		out.BornTimestamp != m.BornTimestamp || out.BornHost != host || out.ReconsumeTimes != 2 || out.QueueOffset != 0 || out.StoreTimestamp != 0 {
		t.Fatalf("restored %+v", out)
	}
	if len(out.Properties) != 2 || out.Properties[protocol.PropUniqKey] != "U" || out.Properties["k"] != "v" {
		t.Fatalf("properties %v", out.Properties)
	}
	for _, bad := range []map[string]string{{}, {protocol.PropRealTopic: "T"}, {protocol.PropRealTopic: "T", protocol.PropRealQueueID: "-1"}} {
		if _, err := Restore(newMsg(Topic, 0, "", bad)); !errors.Is(err, ErrBadRecord) {
			t.Errorf("Restore(%v) = %v, want ErrBadRecord", bad, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	st := openStore(t, t.TempDir())
	good := Options{Store: st, Levels: []time.Duration{time.Second}, OffsetPath: "x"}
	for name, mod := range map[string]func(*Options){
		"no store":  func(o *Options) { o.Store = nil },
		"no levels": func(o *Options) { o.Levels = nil },
		"no path":   func(o *Options) { o.OffsetPath = "" },
		"negative":  func(o *Options) { o.Levels = []time.Duration{-1} },
	} {
		o := good
		mod(&o)
		if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: New = %v", name, err)
		}
	}
}

// TestDeliveryNeverEarly sends messages on every level and checks each
// is delivered once, restored, and not before store time + delay.
func TestDeliveryNeverEarly(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	svc := newService(t, st, dir, nil)
	levels, _ := store.ParseDelayLevels(fastLevels)
	type sent struct {
		storeTS int64
		level   int
	}
	want := map[string]sent{}
	for i := range 30 {
		level := i%3 + 1
		if i%7 == 0 {
			level = 40 // clamped to 3
		}
		id := fmt.Sprintf("m%02d", i)
		m := sendDelayed(t, st, "Orders", int32(i%2), level, id)
		want[id] = sent{m.StoreTimestamp, min(level, 3)}
	}
	waitFor(t, "all delivered", 10*time.Second, func() bool {
		return st.MaxOffset("Orders", 0)+st.MaxOffset("Orders", 1) >= int64(len(want))
	})
	seen := map[string]bool{}
	for qid := range int32(2) {
		for _, m := range readAll(t, st, "Orders", qid) {
			id := m.Property(protocol.PropUniqKey)
			w, ok := want[id]
			if !ok || seen[id] {
				t.Fatalf("unexpected or duplicate delivery %q", id)
			}
			seen[id] = true
			due := w.storeTS + levels[w.level-1].Milliseconds()
			if m.StoreTimestamp < due {
				t.Errorf("%s level %d delivered at %d, due %d (%d ms early)", id, w.level, m.StoreTimestamp, due, due-m.StoreTimestamp)
			}
			if string(m.Body) != "body-"+id || m.Property("user") != "u" || m.Property(protocol.PropDelayLevel) != "" ||
				m.Property(protocol.PropRealTopic) != "" || m.Property(protocol.PropRealQueueID) != "" ||
				m.BornTimestamp != 1700000000000 || m.ReconsumeTimes != 2 || m.Flag != 7 {
				t.Errorf("%s restored badly: %+v", id, m)
			}
		}
	}
	waitFor(t, "progress", 5*time.Second, func() bool {
		for _, ls := range svc.Stats() {
			if ls.Pending != 0 {
				return false
			}
		}
		return true
	})
	var delivered int64
	for _, ls := range svc.Stats() {
		delivered += ls.Delivered
		if ls.Delivered > 0 && ls.MaxLateness < ls.LastLateness {
			t.Errorf("level %d: max lateness %v < last %v", ls.Level, ls.MaxLateness, ls.LastLateness)
		}
	}
	if delivered != int64(len(want)) {
		t.Fatalf("Delivered = %d, want %d", delivered, len(want))
	}
}

// TestRestartWithPending stops the service and the store while messages
// wait, restarts both, and checks every message is delivered exactly once.
func TestRestartWithPending(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(storeConfig(dir), nil, testCoder())
	if err != nil {
		t.Fatal(err)
	}
	svc := newService(t, st, dir, nil)
	for i := range 10 {
		sendDelayed(t, st, "Orders", 0, 3, fmt.Sprintf("slow%d", i)) // 1s
	}
	for i := range 5 {
		sendDelayed(t, st, "Orders", 0, 1, fmt.Sprintf("fast%d", i)) // 100ms
	}
	waitFor(t, "fast ones", 5*time.Second, func() bool { return st.MaxOffset("Orders", 0) >= 5 })
	if err := svc.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	var f offsetFile
	if found, err := jsonfile.Load(filepath.Join(dir, "config", "delayOffset.json"), &f); err != nil || !found {
		t.Fatalf("progress file: found=%v err=%v", found, err)
	}
	if f.OffsetTable["1"] != 5 || f.OffsetTable["2"] != 0 {
		t.Fatalf("persisted %v", f.OffsetTable)
	}
	pendingSlow := 10 - f.OffsetTable["3"]
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if pendingSlow == 0 {
		t.Skip("machine too slow: every 1s message was delivered before the restart")
	}

	st = openStore(t, dir)
	svc = newService(t, st, dir, nil)
	waitFor(t, "all delivered after restart", 10*time.Second, func() bool { return st.MaxOffset("Orders", 0) >= 15 })
	if err := svc.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range readAll(t, st, "Orders", 0) {
		seen[m.Property(protocol.PropUniqKey)]++
	}
	if len(seen) != 15 {
		t.Fatalf("delivered %d distinct, want 15: %v", len(seen), seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times", id, n)
		}
	}
	// A third start finds nothing pending: nothing will be delivered again.
	svc = newService(t, st, dir, nil)
	for _, ls := range svc.Stats() {
		if ls.Pending != 0 {
			t.Errorf("level %d still has %d pending after a clean restart", ls.Level, ls.Pending)
		}
	}
}

// flakyStore fails the first n delivery puts.
type flakyStore struct {
	*store.Store
	fail atomic.Int32
}

func (f *flakyStore) PutMessage(ctx context.Context, m *protocol.MessageExt) (store.PutResult, error) {
	if m.Topic != Topic && f.fail.Add(-1) >= 0 {
		return store.PutResult{}, store.ErrDiskFull
	}
	return f.Store.PutMessage(ctx, m)
}

func TestPutErrorRetriedNeverSkipped(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	fs := &flakyStore{Store: st}
	fs.fail.Store(3)
	svc := newService(t, st, dir, func(o *Options) { o.Store = fs })
	for i := range 3 {
		sendDelayed(t, st, "Orders", 0, 1, fmt.Sprintf("r%d", i))
	}
	waitFor(t, "delivery after failures", 5*time.Second, func() bool { return st.MaxOffset("Orders", 0) == 3 })
	got := readAll(t, st, "Orders", 0)
	for i, m := range got {
		if id := m.Property(protocol.PropUniqKey); id != fmt.Sprintf("r%d", i) {
			t.Errorf("delivery %d is %s: order broken", i, id)
		}
	}
	if ls := svc.Stats()[0]; ls.PutFailures != 3 || ls.Skipped != 0 {
		t.Fatalf("stats %+v", ls)
	}
}

func TestMalformedRecordSkipped(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	svc := newService(t, st, dir, nil)
	bad := newMsg(Topic, 0, "no real topic", map[string]string{protocol.PropDelayLevel: "1"})
	if _, err := st.PutMessage(context.Background(), bad); err != nil {
		t.Fatal(err)
	}
	sendDelayed(t, st, "Orders", 0, 1, "good")
	waitFor(t, "good delivered", 5*time.Second, func() bool { return st.MaxOffset("Orders", 0) == 1 })
	waitFor(t, "progress", 5*time.Second, func() bool { return svc.Stats()[0].Pending == 0 })
	if ls := svc.Stats()[0]; ls.Skipped != 1 || ls.Delivered != 1 {
		t.Fatalf("stats %+v", ls)
	}
}

func TestStartClampsProgress(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	p := filepath.Join(dir, "config", "delayOffset.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := jsonfile.Save(p, offsetFile{OffsetTable: map[string]int64{"1": 50}}); err != nil {
		t.Fatal(err)
	}
	svc := newService(t, st, dir, nil)
	if off := svc.Stats()[0].Offset; off != 0 {
		t.Fatalf("offset beyond the queue end not rewound: %d", off)
	}
	sendDelayed(t, st, "Orders", 0, 1, "after")
	waitFor(t, "delivery", 5*time.Second, func() bool { return st.MaxOffset("Orders", 0) == 1 })
}

// testCoder is the store hook the broker installs for Topic, with the
// test's levels.
func testCoder() store.Option {
	levels, _ := store.ParseDelayLevels(fastLevels)
	return store.WithTagsCoder(Topic, TagsCoder(levels))
}

func TestTagsCoderIsDeliveryTime(t *testing.T) {
	levels := []time.Duration{time.Second, 5 * time.Second, 10 * time.Second}
	coder := TagsCoder(levels)
	tests := []struct {
		name  string
		qid   int32
		props map[string]string
		want  int64
	}{
		{"DELAY level", 0, map[string]string{protocol.PropDelayLevel: "3"}, 1_000_000 + 10_000},
		{"queue id without DELAY", 1, nil, 1_000_000 + 5_000},
		{"level clamped", 0, map[string]string{protocol.PropDelayLevel: "99"}, 1_000_000 + 10_000},
		{"bad DELAY falls back to the queue", 0, map[string]string{protocol.PropDelayLevel: "x"}, 1_000_000 + 1_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &protocol.RecordView{QueueID: tt.qid, StoreTimestamp: 1_000_000, Properties: []byte(protocol.EncodeProperties(tt.props))}
			if got, ok := coder(v); !ok || got != tt.want {
				t.Fatalf("tags code %d %v, want %d", got, ok, tt.want)
			}
		})
	}
	if _, ok := TagsCoder(nil)(&protocol.RecordView{}); ok {
		t.Fatal("no levels: want the tags hash fallback")
	}
}

// TestProgressHeldToReplicated: with Options.Replicated, the progress a
// replica copies (Progress) and the persisted one stop before the first
// message whose delivered copy ends above the replicated offset, and catch
// up when the bound does: a replica promoted with that progress has every
// delivered copy before it and delivers the rest again (chaos finding 4:
// the delivery position was copied while the copies were not replicated,
// and a promoted slave skipped them).
func TestProgressHeldToReplicated(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	var bound atomic.Int64
	svc := newService(t, st, dir, func(o *Options) { o.Replicated = bound.Load })
	for i := range 4 {
		sendDelayed(t, st, "Orders", 0, 1, fmt.Sprintf("m%d", i))
	}
	waitFor(t, "all four delivered", 5*time.Second, func() bool { return st.MaxOffset("Orders", 0) == 4 })
	copies := readAll(t, st, "Orders", 0)
	ends := make([]int64, len(copies))
	for i, m := range copies {
		ends[i] = m.CommitLogOffset + int64(m.StoreSize)
	}
	if got := svc.Stats()[0].Offset; got != 4 {
		t.Fatalf("delivery position %d, want 4", got)
	}
	for i, b := range []int64{0, ends[0], ends[2] - 1, ends[2], ends[3]} {
		bound.Store(b)
		want := []int64{0, 1, 2, 3, 4}[i]
		if got := svc.Progress()[0]; got != want {
			t.Errorf("replicated to %d: progress %d, want %d (copies end at %v)", b, got, want, ends)
		}
	}
	bound.Store(ends[1])
	if got := svc.Progress()[0]; got != 4 {
		t.Errorf("progress moved back to %d when the bound did", got)
	}
	if err := svc.Persist(); err != nil {
		t.Fatal(err)
	}
	var f offsetFile
	if _, err := jsonfile.Load(filepath.Join(dir, "config", "delayOffset.json"), &f); err != nil || f.OffsetTable["1"] != 4 {
		t.Fatalf("persisted %v, %v", f.OffsetTable, err)
	}
}
