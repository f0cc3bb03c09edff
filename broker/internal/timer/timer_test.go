package timer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/broker/internal/topic"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func storeConfig(dir string) store.Config {
	c := store.DefaultConfig()
	c.StorePathRootDir = dir
	c.MappedFileSizeCommitLog = 256 << 10
	c.MappedFileSizeConsumeQueue = 20 * 1000
	c.MaxMessageSize = 16 << 10
	c.MaxHashSlotNum = 64
	c.MaxIndexNum = 300
	c.FlushIntervalCommitLog = 10
	c.FlushIntervalConsumeQueue = 20
	c.MessageIndexEnable = false
	return c
}

func openStore(t testing.TB, dir string) *store.Store {
	t.Helper()
	s, err := store.Open(storeConfig(dir), nil, store.WithTagsCoder(Topic, TagsCode))
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newService(t testing.TB, st *store.Store, dir string, mod func(*Options)) *Service {
	t.Helper()
	o := Options{Store: st, CheckpointPath: filepath.Join(dir, "config", "timerCheckpoint"),
		FlushInterval: 20 * time.Millisecond, PollInterval: 20 * time.Millisecond, RetryBackoff: 10 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	st.SetDispatchListener(func(tp string, _ int32, _, _ int64, _ []byte) {
		if tp == Topic {
			s.Notify()
		}
	})
	s.Start()
	t.Cleanup(func() { s.Stop(context.Background()) })
	return s
}

var host = netip.MustParseAddrPort("10.0.0.1:5000")

func newMsg(tp string, qid int32, id string, props map[string]string) *protocol.MessageExt {
	m := &protocol.MessageExt{QueueID: qid, BornTimestamp: 1700000000000, BornHost: host, StoreHost: host, ReconsumeTimes: 1}
	if props == nil {
		props = map[string]string{}
	}
	if id != "" {
		props[protocol.PropUniqKey] = id
	}
	m.Topic, m.Body, m.Properties, m.Flag = tp, []byte("body-"+id), props, 3
	return m
}

// send runs a message through Accept and stores it, like the send path.
func send(t testing.TB, svc *Service, st *store.Store, m *protocol.MessageExt) (string, bool) {
	t.Helper()
	h, diverted, err := svc.Accept(m, time.Now())
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	if _, err := st.PutMessage(context.Background(), m); err != nil {
		t.Fatalf("PutMessage: %v", err)
	}
	return h, diverted
}

func sendAt(t testing.TB, svc *Service, st *store.Store, tp, id string, at time.Time) {
	t.Helper()
	m := newMsg(tp, 0, id, map[string]string{PropDeliverMS: strconv.FormatInt(at.UnixMilli(), 10), "user": "u"})
	send(t, svc, st, m)
}

func readAll(t testing.TB, st *store.Store, tp string, qid int32) []*protocol.MessageExt {
	t.Helper()
	var out []*protocol.MessageExt
	for off := int64(0); off < st.MaxOffset(tp, qid); {
		r := st.GetMessage(tp, qid, off, 32, 0, nil)
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

func waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkDelivered verifies the real topic holds exactly the ids in want
// (each once, or at least once with atLeast), none before TIMER_OUT_MS.
func checkDelivered(t *testing.T, st *store.Store, tp string, want map[string]bool, atLeast bool) []string {
	t.Helper()
	count := map[string]int{}
	var order []string
	for _, m := range readAll(t, st, tp, 0) {
		id := m.Property(protocol.PropUniqKey)
		count[id]++
		order = append(order, id)
		at, err := strconv.ParseInt(m.Property(PropOutMS), 10, 64)
		if err != nil {
			t.Fatalf("%s: TIMER_OUT_MS %q", id, m.Property(PropOutMS))
		}
		if m.StoreTimestamp < at {
			t.Errorf("%s delivered %d ms early", id, at-m.StoreTimestamp)
		}
		if m.Property(protocol.PropRealTopic) != "" || m.Property(PropDeliverMS) != "" || string(m.Body) != "body-"+id ||
			m.BornTimestamp != 1700000000000 || m.ReconsumeTimes != 1 || m.Flag != 3 {
			t.Errorf("%s restored badly: %+v", id, m)
		}
	}
	for id, n := range count {
		if !want[id] {
			t.Errorf("%s delivered but not expected", id)
		} else if n > 1 && !atLeast {
			t.Errorf("%s delivered %d times", id, n)
		}
	}
	for id := range want {
		if count[id] == 0 {
			t.Errorf("%s not delivered", id)
		}
	}
	return order
}

func TestTopicNames(t *testing.T) {
	if Topic != topic.TimerTopic {
		t.Fatalf("store.TimerTopic %q != topic.TimerTopic %q", Topic, topic.TimerTopic)
	}
}

func TestAccept(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	nowMS := now.UnixMilli()
	svc, err := New(Options{Store: &store.Store{}, CheckpointPath: filepath.Join(t.TempDir(), "cp"), MaxDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		props    map[string]string
		sysFlag  int32
		err      error
		diverted bool
		out      int64 // expected TIMER_OUT_MS, 0: none
	}{
		{"no timer", map[string]string{"a": "b"}, 0, nil, false, 0},
		{"delay sec", map[string]string{PropDelaySec: "10"}, 0, nil, true, nowMS + 10000},
		{"delay ms", map[string]string{PropDelayMS: "1500"}, 0, nil, true, nowMS + 1500},
		{"deliver ms", map[string]string{PropDeliverMS: strconv.FormatInt(nowMS+42, 10)}, 0, nil, true, nowMS + 42},
		{"sec wins", map[string]string{PropDelaySec: "1", PropDelayMS: "5", PropDeliverMS: "7"}, 0, nil, true, nowMS + 1000},
		{"ms before deliver", map[string]string{PropDelayMS: "5", PropDeliverMS: "7"}, 0, nil, true, nowMS + 5},
		{"past", map[string]string{PropDeliverMS: strconv.FormatInt(nowMS-5000, 10)}, 0, nil, false, nowMS - 5000},
		{"now", map[string]string{PropDelayMS: "0"}, 0, nil, false, nowMS},
		{"max delay", map[string]string{PropDelaySec: "3600"}, 0, nil, true, nowMS + 3600000},
		{"too long", map[string]string{PropDelaySec: "3601"}, 0, ErrDelayTooLong, false, 0},
		{"too long abs", map[string]string{PropDeliverMS: strconv.FormatInt(nowMS+3600001, 10)}, 0, ErrDelayTooLong, false, 0},
		{"overflow", map[string]string{PropDelaySec: "9223372036854775807"}, 0, ErrDelayTooLong, false, 0},
		{"garbage", map[string]string{PropDelaySec: "soon"}, 0, ErrBadTimer, false, 0},
		{"negative", map[string]string{PropDelayMS: "-1"}, 0, ErrBadTimer, false, 0},
		{"delay level dropped", map[string]string{PropDelayMS: "100", protocol.PropDelayLevel: "3"}, 0, nil, true, nowMS + 100},
		{"prepared", map[string]string{PropDelaySec: "10"}, protocol.SysFlagTxPrepared, nil, false, 0},
		{"committed", map[string]string{PropDelaySec: "10"}, protocol.SysFlagTxCommit, nil, true, nowMS + 10000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMsg("Orders", 4, "ID1", tc.props)
			m.SysFlag = tc.sysFlag
			h, diverted, err := svc.Accept(m, now)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if diverted != tc.diverted {
				t.Fatalf("diverted = %v", diverted)
			}
			if tc.out == 0 {
				if m.Property(PropOutMS) != "" || m.Topic != "Orders" {
					t.Fatalf("changed: %s %v", m.Topic, m.Properties)
				}
				return
			}
			if h != "ID1" || m.Property(PropOutMS) != strconv.FormatInt(tc.out, 10) {
				t.Fatalf("handle %q TIMER_OUT_MS %q, want %d", h, m.Property(PropOutMS), tc.out)
			}
			for _, k := range []string{PropDelaySec, PropDelayMS, PropDeliverMS, protocol.PropDelayLevel} {
				if m.Property(k) != "" {
					t.Errorf("%s kept", k)
				}
			}
			if diverted {
				if m.Topic != Topic || m.QueueID != 0 || m.Property(protocol.PropRealTopic) != "Orders" || m.Property(protocol.PropRealQueueID) != "4" {
					t.Fatalf("diverted to %s/%d %v", m.Topic, m.QueueID, m.Properties)
				}
			} else if m.Topic != "Orders" || m.QueueID != 4 {
				t.Fatalf("direct delivery moved to %s/%d", m.Topic, m.QueueID)
			}
		})
	}
	t.Run("recall message", func(t *testing.T) {
		m := newMsg("Orders", 2, "R1", map[string]string{PropDelUniqKey: "ID9"})
		h, diverted, err := svc.Accept(m, now)
		if err != nil || !diverted || h != "ID9" || m.Topic != Topic || m.Property(protocol.PropRealTopic) != "Orders" {
			t.Fatalf("h=%q diverted=%v err=%v topic=%s", h, diverted, err, m.Topic)
		}
	})
}

func TestStoreTagsCodeIsDeliveryTime(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	svc, err := New(Options{Store: st, CheckpointPath: filepath.Join(dir, "cp")})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour)
	m := newMsg("Orders", 0, "X", map[string]string{PropDeliverMS: strconv.FormatInt(at.UnixMilli(), 10)})
	send(t, svc, st, m)
	marker := newMsg("Orders", 0, "Y", map[string]string{PropDelUniqKey: "X"})
	send(t, svc, st, marker)
	waitFor(t, "dispatch", 5*time.Second, func() bool { return st.MaxOffset(Topic, 0) == 2 })
	units, err := st.ReadQueue(Topic, 0, 0, 2)
	if err != nil || len(units) != 2 {
		t.Fatalf("units %v err %v", units, err)
	}
	if units[0].TagsCode != at.UnixMilli() {
		t.Fatalf("timer tagsCode %d, want delivery time %d", units[0].TagsCode, at.UnixMilli())
	}
	if units[1].TagsCode != 0 {
		t.Fatalf("marker tagsCode %d, want 0 (no TAGS)", units[1].TagsCode)
	}
}

// TestDeliveryRandomOrderNeverEarly stores timers in random order with
// random delivery times and checks each is delivered once, never early,
// in delivery-time order.
func TestDeliveryRandomOrderNeverEarly(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	svc := newService(t, st, dir, nil)
	base := time.Now().Add(200 * time.Millisecond)
	want := map[string]bool{}
	ats := map[string]int64{}
	for i, d := range rand.Perm(60) {
		id := fmt.Sprintf("t%02d", i)
		at := base.Add(time.Duration(d*20) * time.Millisecond)
		sendAt(t, svc, st, "Orders", id, at)
		want[id], ats[id] = true, at.UnixMilli()
	}
	waitFor(t, "all delivered", 10*time.Second, func() bool { return st.MaxOffset("Orders", 0) >= 60 })
	order := checkDelivered(t, st, "Orders", want, false)
	for i := 1; i < len(order); i++ {
		if ats[order[i]] < ats[order[i-1]] {
			t.Errorf("%s (at %d) delivered after %s (at %d)", order[i], ats[order[i]], order[i-1], ats[order[i-1]])
		}
	}
	waitFor(t, "stats", 5*time.Second, func() bool { return svc.Stats().Pending == 0 })
	s := svc.Stats()
	if s.Delivered != 60 || s.Lateness.Count != 60 || s.Skipped != 0 {
		t.Fatalf("stats %+v", s)
	}
	if q := s.Lateness.Quantile(0.99); q > s.Lateness.Max || s.Lateness.Max < s.Lateness.Last {
		t.Fatalf("lateness %+v p99 %v", s.Lateness, q)
	}
}

func TestEqualDeliveryTimesInStoreOrder(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	svc := newService(t, st, dir, nil)
	at := time.Now().Add(300 * time.Millisecond)
	want := map[string]bool{}
	var ids []string
	for i := range 40 {
		id := fmt.Sprintf("e%02d", i)
		sendAt(t, svc, st, "Orders", id, at)
		want[id] = true
		ids = append(ids, id)
	}
	waitFor(t, "all delivered", 10*time.Second, func() bool { return st.MaxOffset("Orders", 0) >= 40 })
	order := checkDelivered(t, st, "Orders", want, false)
	for i := range ids {
		if order[i] != ids[i] {
			t.Fatalf("delivery order %v, want %v", order, ids)
		}
	}
}

func TestPastDeliveryPrompt(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	svc := newService(t, st, dir, nil)
	// Accept delivers a past time directly.
	m := newMsg("Orders", 0, "past", map[string]string{PropDeliverMS: strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)})
	if _, diverted := send(t, svc, st, m); diverted {
		t.Fatal("past delivery time diverted")
	}
	// A timer that became due while nobody ran (stored with a past time).
	late := newMsg("Orders", 0, "late", map[string]string{PropOutMS: strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)})
	divert(late)
	if _, err := st.PutMessage(context.Background(), late); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "late timer", 5*time.Second, func() bool { return st.MaxOffset("Orders", 0) == 2 })
	checkDelivered(t, st, "Orders", map[string]bool{"past": true, "late": true}, false)
	waitFor(t, "stats", 5*time.Second, func() bool { return svc.Stats().Delivered == 1 })
	if l := svc.Stats().Lateness; l.Last < time.Second {
		t.Fatalf("lateness of an overdue timer: %+v", l)
	}
}

func TestRecall(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	svc := newService(t, st, dir, nil)
	ctx := context.Background()
	now := time.Now()
	sendAt(t, svc, st, "Orders", "soon", now.Add(50*time.Millisecond))
	sendAt(t, svc, st, "Orders", "victim", now.Add(400*time.Millisecond))
	sendAt(t, svc, st, "Orders", "victim2", now.Add(450*time.Millisecond))
	sendAt(t, svc, st, "Orders", "sentinel", now.Add(600*time.Millisecond))
	// Markers of another topic leave the Orders timers alone, whichever
	// way they come: TIMER_DEL_UNIQKEY on a message to Other, or Recall
	// naming Other (the handle is known, the topic is not the sender's).
	send(t, svc, st, newMsg("Other", 0, "", map[string]string{PropDelUniqKey: "sentinel"}))
	if err := svc.Recall(ctx, "Other", "sentinel"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Recall(Other, sentinel) = %v, want ErrNotFound", err)
	}
	if err := svc.Recall(ctx, "Orders", "victim"); err != nil {
		t.Fatalf("Recall(victim) = %v", err)
	}
	if err := svc.Recall(ctx, "Orders", "victim"); err != nil {
		t.Fatalf("second Recall(victim) = %v, want nil (already recalled)", err)
	}
	// The message path: a TIMER_DEL_UNIQKEY message.
	send(t, svc, st, newMsg("Orders", 0, "", map[string]string{PropDelUniqKey: "victim2"}))
	if err := svc.Recall(ctx, "Orders", "nobody"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Recall(nobody) = %v, want ErrNotFound", err)
	}
	if err := svc.Recall(ctx, "Orders", ""); !errors.Is(err, ErrBadHandle) {
		t.Fatalf("Recall(\"\") = %v", err)
	}
	// sentinel is due after the victims: once it is delivered they would
	// have been too.
	waitFor(t, "sentinel", 5*time.Second, func() bool { return st.MaxOffset("Orders", 0) >= 2 })
	checkDelivered(t, st, "Orders", map[string]bool{"soon": true, "sentinel": true}, false)
	if err := svc.Recall(ctx, "Orders", "soon"); !errors.Is(err, ErrAlreadyDelivered) {
		t.Fatalf("Recall(soon) after delivery = %v, want ErrAlreadyDelivered", err)
	}
	if err := svc.Recall(ctx, "Other", "soon"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Recall(Other, soon) after delivery = %v, want ErrNotFound (outcomes are per topic)", err)
	}
	if s := svc.Stats(); s.Recalled != 2 || s.Delivered != 2 || s.Pending != 0 {
		t.Fatalf("stats %+v", s)
	}
	if err := svc.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := svc.Recall(ctx, "Orders", "x"); !errors.Is(err, ErrStopped) {
		t.Fatalf("Recall after Stop = %v", err)
	}
}

// TestRecallDuplicateKeys recalls both copies of a timer sent twice with
// the same UNIQ_KEY (a producer retry).
func TestRecallDuplicateKeys(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	svc := newService(t, st, dir, nil)
	at := time.Now().Add(300 * time.Millisecond)
	sendAt(t, svc, st, "Orders", "dup", at)
	sendAt(t, svc, st, "Orders", "dup", at.Add(10*time.Millisecond))
	sendAt(t, svc, st, "Orders", "keep", at.Add(20*time.Millisecond))
	if err := svc.Recall(context.Background(), "Orders", "dup"); err != nil {
		t.Fatal(err)
	}
	if r := svc.Stats().Recalled; r != 2 {
		t.Fatalf("Recalled = %d, want 2", r)
	}
	waitFor(t, "keep", 5*time.Second, func() bool { return st.MaxOffset("Orders", 0) >= 1 })
	checkDelivered(t, st, "Orders", map[string]bool{"keep": true}, false)
}

// TestRestartExact stops the service and the store with timers pending,
// one recalled by a marker the service has not scanned yet, and checks
// that after a restart every other timer is delivered exactly once and
// never early, and the recalled ones never.
func TestRestartExact(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(storeConfig(dir), nil, store.WithTagsCoder(Topic, TagsCode))
	if err != nil {
		t.Fatal(err)
	}
	svc := newService(t, st, dir, nil)
	now := time.Now()
	want := map[string]bool{}
	for i := range 40 {
		id := fmt.Sprintf("r%02d", i)
		d := 30 * time.Millisecond
		if i >= 10 {
			d = 1500*time.Millisecond + time.Duration(i)*10*time.Millisecond
		}
		sendAt(t, svc, st, "Orders", id, now.Add(d))
		want[id] = true
	}
	waitFor(t, "early ones", 5*time.Second, func() bool { return st.MaxOffset("Orders", 0) >= 10 })
	if err := svc.Recall(context.Background(), "Orders", "r20"); err != nil {
		t.Fatal(err)
	}
	delete(want, "r20")
	if err := svc.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A recall marker the stopped service never saw.
	send(t, svc, st, newMsg("Orders", 0, "", map[string]string{PropDelUniqKey: "r30"}))
	delete(want, "r30")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if time.Since(now) > 1400*time.Millisecond {
		t.Skip("machine too slow: the long timers may have become due before the restart")
	}

	st = openStore(t, dir)
	svc = newService(t, st, dir, nil)
	// 29 restored, then the unseen marker recalls r30.
	waitFor(t, "restore and marker", 5*time.Second, func() bool {
		s := svc.Stats()
		return s.ScanOffset == s.MaxOffset && s.Pending == 28 && s.Recalled == 1
	})
	waitFor(t, "all delivered", 10*time.Second, func() bool { return st.MaxOffset("Orders", 0) >= int64(len(want)) })
	sentinelAfter(t, svc, st, "Orders")
	checkDelivered(t, st, "Orders", withSentinel(want), false)
	if err := svc.Recall(context.Background(), "Orders", "r39"); !errors.Is(err, ErrAlreadyDelivered) {
		t.Fatalf("Recall(r39) = %v, want ErrAlreadyDelivered", err)
	}
}

func withSentinel(m map[string]bool) map[string]bool {
	out := map[string]bool{"sentinel": true}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func checkCounts(t *testing.T, st *store.Store, tp string) map[string]int {
	c := map[string]int{}
	for _, m := range readAll(t, st, tp, 0) {
		c[m.Property(protocol.PropUniqKey)]++
	}
	return c
}

// sentinelAfter sends a timer due after every other pending one and waits
// for it: everything that was going to be delivered has been.
func sentinelAfter(t *testing.T, svc *Service, st *store.Store, tp string) {
	t.Helper()
	sendAt(t, svc, st, tp, "sentinel", time.Now().Add(50*time.Millisecond))
	waitFor(t, "sentinel", 5*time.Second, func() bool {
		return checkCounts(t, st, tp)["sentinel"] > 0 && svc.Stats().Pending == 0
	})
}

// TestCrashRedeliversNeverLoses restarts from an old checkpoint, as after
// a crash between deliveries and the next checkpoint: timers delivered
// since are delivered again, none is lost, recalls stay effective.
func TestCrashRedeliversNeverLoses(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(storeConfig(dir), nil, store.WithTagsCoder(Topic, TagsCode))
	if err != nil {
		t.Fatal(err)
	}
	cpPath := filepath.Join(dir, "config", "timerCheckpoint")
	svc := newService(t, st, dir, nil)
	now := time.Now()
	want := map[string]bool{}
	for i := range 30 {
		id := fmt.Sprintf("c%02d", i)
		sendAt(t, svc, st, "Orders", id, now.Add(time.Duration(100+i*40)*time.Millisecond))
		want[id] = true
	}
	waitFor(t, "all scanned and saved", 5*time.Second, func() bool {
		s := svc.Stats()
		b, err := os.ReadFile(cpPath)
		if err != nil || s.ScanOffset < 30 {
			return false
		}
		cp, err := decodeCheckpoint(b)
		return err == nil && cp.scan == 30 && len(cp.pending) > 20
	})
	old, err := os.ReadFile(cpPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Recall(context.Background(), "Orders", "c29"); err != nil {
		t.Fatal(err)
	}
	delete(want, "c29")
	waitFor(t, "some delivered", 5*time.Second, func() bool { return st.MaxOffset("Orders", 0) >= 15 })
	if err := svc.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// "Crash": the checkpoint is the old one.
	os.Remove(cpPath + ".bak")
	if err := os.WriteFile(cpPath, old, 0o644); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, dir)
	svc = newService(t, st, dir, nil)
	waitFor(t, "all delivered", 10*time.Second, func() bool {
		c := checkCounts(t, st, "Orders")
		for id := range want {
			if c[id] == 0 {
				return false
			}
		}
		return true
	})
	sentinelAfter(t, svc, st, "Orders")
	checkDelivered(t, st, "Orders", withSentinel(want), true)
	if c := checkCounts(t, st, "Orders"); c["c29"] != 0 {
		t.Fatal("recalled timer delivered after the crash")
	}
}

func TestCorruptCheckpoint(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	p := filepath.Join(dir, "cp")
	if err := os.WriteFile(p, []byte("garbage garbage garbage garbage garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Store: st, CheckpointPath: p}); !errors.Is(err, ErrBadCheckpoint) {
		t.Fatalf("New = %v, want ErrBadCheckpoint", err)
	}
	good := checkpoint{scan: 9, done: 3, pending: []int64{100, 250}}
	if err := os.WriteFile(p+".bak", good.encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	svc, err := New(Options{Store: st, CheckpointPath: p})
	if err != nil || svc.cp == nil || svc.cp.scan != 9 {
		t.Fatalf("fallback to .bak: %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	if _, err := New(Options{CheckpointPath: "x"}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("no store: %v", err)
	}
	if _, err := New(Options{Store: &store.Store{}}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("no path: %v", err)
	}
}

func TestStopBeforeStart(t *testing.T) {
	svc, err := New(Options{Store: &store.Store{}, CheckpointPath: filepath.Join(t.TempDir(), "cp")})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	svc.Start() // no effect after Stop
	if err := svc.Recall(context.Background(), "Orders", "x"); !errors.Is(err, ErrStopped) {
		t.Fatalf("Recall = %v", err)
	}
}

// BenchmarkStorm stores b.N timers due within the same 10 ms and measures
// the time from storing the first to delivering the last (run with
// -benchtime 100000x); it reports the lateness p99 and max.
func BenchmarkStorm(b *testing.B) {
	dir := b.TempDir()
	c := storeConfig(dir)
	c.MappedFileSizeCommitLog = 64 << 20
	c.MappedFileSizeConsumeQueue = 20 * 300000
	st, err := store.Open(c, nil, store.WithTagsCoder(Topic, TagsCode))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	svc := newService(b, st, dir, func(o *Options) { o.FlushInterval = time.Second })
	at := time.Now().Add(2 * time.Second).UnixMilli()
	b.ResetTimer()
	for i := range b.N {
		m := newMsg("Orders", 0, "s"+strconv.Itoa(i), map[string]string{PropDeliverMS: strconv.FormatInt(at+int64(i%10), 10)})
		send(b, svc, st, m)
	}
	waitFor(b, "storm delivered", 10*time.Minute, func() bool { return st.MaxOffset("Orders", 0) >= int64(b.N) })
	b.StopTimer()
	l := svc.Stats().Lateness
	b.ReportMetric(float64(l.Quantile(0.99).Milliseconds()), "p99-late-ms")
	b.ReportMetric(float64(l.Max.Milliseconds()), "max-late-ms")
	svc.Stop(context.Background())
}

// TestStartReadsRecallsBeforeDelivering: a service started over a timer
// queue it has not scanned (a promoted replica: the checkpoint is not
// replicated) applies a recall marker stored after a timer that is due
// already before it delivers that timer, even when they are batches apart.
func TestStartReadsRecallsBeforeDelivering(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	o := Options{Store: st, CheckpointPath: filepath.Join(dir, "config", "timerCheckpoint"), BatchSize: 1,
		FlushInterval: 20 * time.Millisecond, PollInterval: 20 * time.Millisecond, RetryBackoff: 10 * time.Millisecond}
	svc, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	victimDue := now.Add(30 * time.Millisecond)
	sendAt(t, svc, st, "Orders", "victim", victimDue)
	send(t, svc, st, newMsg("Orders", 0, "", map[string]string{PropDelUniqKey: "victim"}))
	sendAt(t, svc, st, "Orders", "sentinel", now.Add(60*time.Millisecond))
	waitFor(t, "the victim due", 5*time.Second, func() bool { return time.Now().After(victimDue) })
	// The store dispatches to the timer queue after PutMessage returns:
	// the three must be in the queue when the service starts, as on a
	// promoted replica, or the marker can arrive only after the victim
	// was delivered (1 run in 40 under load).
	waitFor(t, "the timer queue holding the three", 5*time.Second, func() bool { return st.MaxOffset(Topic, 0) == 3 })
	st.SetDispatchListener(func(tp string, _ int32, _, _ int64, _ []byte) {
		if tp == Topic {
			svc.Notify()
		}
	})
	svc.Start()
	t.Cleanup(func() { svc.Stop(context.Background()) })
	waitFor(t, "sentinel", 5*time.Second, func() bool { return st.MaxOffset("Orders", 0) >= 1 })
	checkDelivered(t, st, "Orders", map[string]bool{"sentinel": true}, false)
}

// TestCheckpointHoldsUnconfirmedDeliveries: with Options.Replicated, a
// timer whose delivered copy is above the replicated offset stays pending
// in the checkpoint, so a replica promoted with a copy of it (which may
// lack the copy) delivers it; once the copies are replicated the
// checkpoint counts them as delivered. Without the rule the replica
// delivered none of them: a loss.
func TestCheckpointHoldsUnconfirmedDeliveries(t *testing.T) {
	dir, replicaDir := t.TempDir(), t.TempDir()
	st, replica := openStore(t, dir), openStore(t, replicaDir)
	// Both stores get the same timer records (same offsets) before the
	// master's service starts: the replica has them, not the copies the
	// master delivers.
	acceptor, err := New(Options{Store: st, CheckpointPath: filepath.Join(t.TempDir(), "unused")})
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(50 * time.Millisecond)
	want := map[string]bool{}
	for i := range 5 {
		id := fmt.Sprintf("u%d", i)
		want[id] = true
		for _, s := range []*store.Store{st, replica} {
			send(t, acceptor, s, newMsg("Orders", 0, id, map[string]string{PropDeliverMS: strconv.FormatInt(due.UnixMilli(), 10), "user": "u"}))
		}
	}
	var replicated atomic.Int64 // nothing delivered is replicated yet
	svc := newService(t, st, dir, func(o *Options) { o.Replicated = replicated.Load })
	pendingIn := func() (checkpoint, bool) {
		b := svc.Checkpoint()
		if b == nil {
			return checkpoint{}, false
		}
		cp, err := decodeCheckpoint(b)
		if err != nil {
			t.Fatalf("Checkpoint(): %v", err)
		}
		return cp, true
	}
	waitFor(t, "the deliveries and a checkpoint after them", 10*time.Second, func() bool {
		cp, ok := pendingIn()
		return ok && st.MaxOffset("Orders", 0) == 5 && cp.scan == 5 && len(cp.pending) == 5
	})
	cp, _ := pendingIn()
	if cp.done != 0 {
		t.Fatalf("checkpoint done = %d with every delivery unconfirmed, want 0", cp.done)
	}

	// Promote the replica with that checkpoint: it delivers all five.
	replicaCP := filepath.Join(replicaDir, "config", "timerCheckpoint")
	if err := ReplaceCheckpoint(replicaCP, svc.Checkpoint()); err != nil {
		t.Fatal(err)
	}
	promoted := newService(t, replica, replicaDir, nil)
	waitFor(t, "the promoted replica's deliveries", 10*time.Second, func() bool { return replica.MaxOffset("Orders", 0) >= 5 })
	sentinelAfter(t, promoted, replica, "Orders")
	checkDelivered(t, replica, "Orders", withSentinel(want), false)

	// The copies reach the replicated offset: the next checkpoint counts
	// them as delivered.
	replicated.Store(st.MaxPhyOffset())
	waitFor(t, "a checkpoint with the deliveries confirmed", 10*time.Second, func() bool {
		cp, _ := pendingIn()
		return len(cp.pending) == 0 && cp.done == 5
	})
}

func TestReplaceCheckpointRefusesGarbage(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cp")
	if err := ReplaceCheckpoint(p, []byte("not a checkpoint")); !errors.Is(err, ErrBadCheckpoint) {
		t.Fatalf("ReplaceCheckpoint(garbage) = %v, want ErrBadCheckpoint", err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("garbage written: %v", err)
	}
	good := (&checkpoint{scan: 7, done: 3, pending: []int64{100, 250}}).encode()
	if err := ReplaceCheckpoint(p, good); err != nil {
		t.Fatal(err)
	}
	cp, found, err := loadCheckpoint(p)
	if err != nil || !found || cp.scan != 7 || cp.done != 3 || !slices.Equal(cp.pending, []int64{100, 250}) {
		t.Fatalf("loaded %+v found=%v err=%v", cp, found, err)
	}
}
