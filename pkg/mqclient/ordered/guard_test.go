package ordered_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/pkg/tidetest"
)

// inflight records per-key overlap: two handlers of one key at once.
type inflight struct {
	mu      sync.Mutex
	running map[string]int
	overlap atomic.Int64
}

func (f *inflight) enter(k string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running == nil {
		f.running = map[string]int{}
	}
	f.running[k]++
	if f.running[k] > 1 {
		f.overlap.Add(1)
	}
}

func (f *inflight) leave(k string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running[k]--
}

func insertApplied(tx *gorm.DB, ev ordered.Event) error {
	return tx.Exec("INSERT INTO applied (biz_key, version) VALUES (?, ?)", ev.Key, ev.Version).Error
}

// redeliveries checks that every delivery the guard did not apply as new
// was a redelivery of a message it had already applied. A queue that moves
// to another member is redelivered from its lowest unfinished offset, so
// finished messages of other keys above it come again (documented at
// least once delivery) and the guard acknowledges them as stale or
// duplicate; a message that arrives for the first time already overtaken
// would be an ordering bug.
type redeliveries struct {
	mu      sync.Mutex
	applied map[string]bool // msg ids
	bad     []string
	again   int
}

func (r *redeliveries) observe(ev ordered.Event, o ordered.Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.applied == nil {
		r.applied = map[string]bool{}
	}
	switch o {
	case ordered.Applied:
		r.applied[ev.Msg.MsgID] = true
	case ordered.Stale, ordered.Duplicate:
		if !r.applied[ev.Msg.MsgID] {
			r.bad = append(r.bad, fmt.Sprintf("%s v%d %s (msg %s never applied)", ev.Key, ev.Version, o, ev.Msg.MsgID))
		}
		r.again++
	}
}

// TestOrderKeptWhileScaling sends 16 keys x 12 versions, paced, while
// consumers of the group go from one to three and back to one. Invariant:
// no key is ever handled by two handlers at once (overlap 0, measured
// across all members), every key's applied versions are 1..12 in order,
// each once, no delivery is a gap or a conflict, and every stale or
// duplicate delivery is a redelivery of an applied message.
func TestOrderKeptWhileScaling(t *testing.T) {
	e := startEnv(t)
	topic := e.topic(t, 4)
	p := e.Producer(t)
	var again redeliveries
	g, err := ordered.New(e.db, "scale", ordered.WithLogger(tidetest.Logger()), ordered.OnOutcome(again.observe))
	if err != nil {
		t.Fatal(err)
	}
	var fl inflight
	h := g.Handler(func(ctx context.Context, tx *gorm.DB, ev ordered.Event) error {
		fl.enter(ev.Key)
		defer fl.leave(ev.Key)
		time.Sleep(3 * time.Millisecond) // work, widening any overlap window
		return insertApplied(tx, ev)
	})
	const keys, versions = 16, 12
	want := map[string]int64{}
	var wg sync.WaitGroup
	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("order-%02d", k)
		want[key] = versions
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := int64(1); v <= versions; v++ {
				send(t, p, topic, key, v, fmt.Sprintf("%s@%d", key, v))
				time.Sleep(150 * time.Millisecond) // pacing: traffic spans the rebalances
			}
		}()
	}
	applied := func() int64 { return count(t, e.db, "SELECT COUNT(*) FROM applied") }
	const group = "g-scale"
	stop1 := e.consumer(t, group, topic, h)
	tidetest.WaitFor(t, 20*time.Second, "first applies", func() bool { return applied() >= 30 })
	stop2 := e.consumer(t, group, topic, h)
	tidetest.WaitFor(t, 20*time.Second, "applies with two members", func() bool { return applied() >= 70 })
	e.consumer(t, group, topic, h)
	tidetest.WaitFor(t, 20*time.Second, "applies with three members", func() bool { return applied() >= 110 })
	stop1()
	tidetest.WaitFor(t, 20*time.Second, "applies after scaling down", func() bool { return applied() >= 140 })
	stop2()
	wg.Wait()
	// The guard counts a delivery after its transaction commits: wait for
	// the counters too, so the checks below see every outcome.
	tidetest.WaitFor(t, 30*time.Second, "all versions applied", func() bool {
		return applied() == keys*versions && g.Stats().Applied == keys*versions
	})

	if n := fl.overlap.Load(); n != 0 {
		t.Errorf("per-key in-flight overlap %d, want 0", n)
	}
	checkApplied(t, e.db, want)
	if n := count(t, e.db, "SELECT COUNT(*) FROM tide_ordered_versions WHERE scope = 'scale' AND last_version = ?", versions); n != keys {
		t.Errorf("%d keys at version %d, want %d", n, versions, keys)
	}
	st := g.Stats()
	if st.Gaps != 0 || st.Conflicts != 0 || st.Failures != 0 {
		t.Errorf("stats %+v: want no gaps, conflicting or failed deliveries", st)
	}
	again.mu.Lock()
	for _, b := range again.bad {
		t.Errorf("first delivery not applied: %s", b)
	}
	t.Logf("stats %+v, %d redeliveries acknowledged by the guard", st, again.again)
	again.mu.Unlock()
}

// TestPoisonKeyDeadLetteredOthersFlow: in a one-queue topic, key P's first
// event always fails. P is retried in place a bounded number of times and
// dead-lettered; its second event then meets a gap and (strict) is refused
// and dead-lettered with a blocked gap record. Other keys of the same
// queue are all applied while P is still being retried. Resolve plus a
// resend from the DLQ then unparks P.
func TestPoisonKeyDeadLetteredOthersFlow(t *testing.T) {
	e := startEnv(t)
	topic := e.topic(t, 1)
	p := e.Producer(t)
	g, err := ordered.New(e.db, "poison", ordered.WithLogger(tidetest.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	var poisonFailures atomic.Int64
	var failuresWhenOthersDone atomic.Int64
	failuresWhenOthersDone.Store(-1)
	var poisoned atomic.Bool
	poisoned.Store(true)
	h := g.Handler(func(ctx context.Context, tx *gorm.DB, ev ordered.Event) error {
		if ev.Key == "P" && ev.Version == 1 && poisoned.Load() {
			poisonFailures.Add(1)
			return errors.New("poison")
		}
		return insertApplied(tx, ev)
	})
	const group = "g-poison"
	const maxAttempts = 4
	e.consumer(t, group, topic, h, mqclient.WithMaxReconsumeTimes(maxAttempts), mqclient.WithRetryBackoff(300*time.Millisecond, time.Second))
	p1 := send(t, p, topic, "P", 1, "P@1")
	p2 := send(t, p, topic, "P", 2, "P@2")
	want := map[string]int64{}
	for k := 0; k < 5; k++ {
		key := fmt.Sprintf("K%d", k)
		want[key] = 5
		for v := int64(1); v <= 5; v++ {
			send(t, p, topic, key, v, fmt.Sprintf("%s@%d", key, v))
		}
	}
	others := func() int64 { return count(t, e.db, "SELECT COUNT(*) FROM applied WHERE biz_key <> 'P'") }
	tidetest.WaitFor(t, 20*time.Second, "other keys applied", func() bool { return others() == 25 })
	failuresWhenOthersDone.Store(poisonFailures.Load())
	if f := failuresWhenOthersDone.Load(); f >= maxAttempts {
		t.Errorf("other keys finished only after the poison key's %d attempts: they were blocked by it", f)
	}

	ctx := context.Background()
	dlq := mqclient.DLQTopicPrefix + group
	var dead1, dead2 []*mqclient.MessageExt
	tidetest.WaitFor(t, 30*time.Second, "P@1 and P@2 in the DLQ", func() bool {
		dead1, _ = e.Admin.QueryByUniqID(ctx, dlq, p1.MsgID)
		dead2, _ = e.Admin.QueryByUniqID(ctx, dlq, p2.MsgID)
		return len(dead1) > 0 && len(dead2) > 0
	})
	if n := poisonFailures.Load(); n != maxAttempts {
		t.Errorf("poison message tried %d times, want %d", n, maxAttempts)
	}
	gaps, err := g.Gaps(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) != 1 || gaps[0].Version != 2 || gaps[0].Expected != 1 || gaps[0].Status != "blocked" || gaps[0].Attempts != maxAttempts {
		t.Fatalf("gap records of P: %+v", gaps)
	}
	if st := g.Stats(); st.Failures != maxAttempts || st.Gaps != maxAttempts || st.BlockedKeys != 1 {
		t.Errorf("stats %+v", st)
	}

	// Operator: P@1 is fixed and replayed, then P@2.
	poisoned.Store(false)
	if _, err := e.Admin.Resend(ctx, p, dead1[0].OffsetMsgID); err != nil {
		t.Fatal(err)
	}
	tidetest.WaitFor(t, 20*time.Second, "P@1 applied", func() bool { v, _ := g.LastVersion(ctx, "P"); return v == 1 })
	if _, err := e.Admin.Resend(ctx, p, dead2[0].OffsetMsgID); err != nil {
		t.Fatal(err)
	}
	// The guard unblocks a key after its transaction commits: wait for
	// that too, not only for the version row.
	tidetest.WaitFor(t, 20*time.Second, "P@2 applied and P unblocked", func() bool {
		v, _ := g.LastVersion(ctx, "P")
		return v == 2 && g.Stats().BlockedKeys == 0
	})
	want["P"] = 2
	checkApplied(t, e.db, want)
}

// TestDuplicatesStaleConflictAndGaps sends, for one key: v1, v2, v2 again
// (same body), v1 again, v2 with another body, v4 (v3 skipped), v5. The
// lenient guard applies 1, 2, 4 (Skipped 1, gap recorded), 5 and classifies
// the rest. A strict guard on a second group refuses v4 and records it.
func TestDuplicatesStaleConflictAndGaps(t *testing.T) {
	e := startEnv(t)
	topic := e.topic(t, 1)
	p := e.Producer(t)
	var mu sync.Mutex
	var outcomes []string
	skipped := map[int64]int64{}
	g, err := ordered.New(e.db, "lenient", ordered.WithPolicy(ordered.Lenient), ordered.WithLogger(tidetest.Logger()),
		ordered.OnOutcome(func(ev ordered.Event, o ordered.Outcome) {
			mu.Lock()
			outcomes = append(outcomes, fmt.Sprintf("v%d:%s", ev.Version, o))
			mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	e.consumer(t, "g-lenient", topic, g.Handler(func(ctx context.Context, tx *gorm.DB, ev ordered.Event) error {
		mu.Lock()
		skipped[ev.Version] = ev.Skipped
		mu.Unlock()
		return insertApplied(tx, ev)
	}))
	strict, err := ordered.New(e.db, "strict", ordered.WithLogger(tidetest.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	var strictApplied atomic.Int64
	e.consumer(t, "g-strict", topic, strict.Handler(func(ctx context.Context, tx *gorm.DB, ev ordered.Event) error {
		strictApplied.Add(1)
		return nil
	}), mqclient.WithMaxReconsumeTimes(2), mqclient.WithRetryBackoff(100*time.Millisecond, 200*time.Millisecond))

	for _, s := range []struct {
		v    int64
		body string
	}{{1, "a"}, {2, "b"}, {2, "b"}, {1, "a"}, {2, "other"}, {4, "d"}, {5, "e"}} {
		send(t, p, topic, "D", s.v, s.body)
	}
	ctx := context.Background()
	// Outcomes are recorded after the guard's transaction commits: wait
	// for all seven, not only for the version row.
	tidetest.WaitFor(t, 20*time.Second, "lenient guard at v5 with 7 outcomes", func() bool {
		mu.Lock()
		n := len(outcomes)
		mu.Unlock()
		v, _ := g.LastVersion(ctx, "D")
		return v == 5 && n >= 7
	})
	mu.Lock()
	got := strings.Join(outcomes, " ")
	mu.Unlock()
	if want := "v1:applied v2:applied v2:duplicate v1:stale v2:conflict v4:gap v5:applied"; got != want {
		t.Errorf("outcomes %q, want %q", got, want)
	}
	if skipped[4] != 1 || skipped[5] != 0 {
		t.Errorf("Skipped %v", skipped)
	}
	var vs []int64
	e.db.Raw("SELECT version FROM applied WHERE biz_key = 'D' ORDER BY id").Scan(&vs)
	if fmt.Sprint(vs) != "[1 2 4 5]" {
		t.Errorf("applied versions %v, want [1 2 4 5]", vs)
	}
	gaps, err := g.Gaps(ctx, "D")
	if err != nil || len(gaps) != 1 || gaps[0].Version != 4 || gaps[0].Expected != 3 || gaps[0].Status != "accepted" {
		t.Errorf("lenient gaps %+v %v", gaps, err)
	}
	st := g.Stats()
	if st.Applied != 3 || st.Duplicates != 1 || st.Stale != 1 || st.Conflicts != 1 || st.Gaps != 1 {
		t.Errorf("lenient stats %+v", st)
	}

	// Strict: v4 and v5 refused (v5 also meets the gap), both recorded.
	tidetest.WaitFor(t, 20*time.Second, "strict gap records", func() bool {
		gs, _ := strict.Gaps(ctx, "D")
		return len(gs) == 2 && gs[0].Attempts == 2 && gs[1].Attempts == 2
	})
	if v, _ := strict.LastVersion(ctx, "D"); v != 2 || strictApplied.Load() != 2 {
		t.Errorf("strict guard at v%d after %d applies, want v2 after 2", v, strictApplied.Load())
	}
}

// TestCrashAfterEffectBeforeAck kills a consumer process (SIGKILL) right
// after the transaction of version 3 committed and before the message was
// acknowledged. The next member gets versions 1..3 again (nothing was
// committed at the broker) and acknowledges them as duplicates: every
// effect exists exactly once and 4, 5 follow in order.
func TestCrashAfterEffectBeforeAck(t *testing.T) {
	e := startEnv(t)
	topic := e.topic(t, 1)
	p := e.Producer(t)
	const group = "g-crash"
	for v := int64(1); v <= 5; v++ {
		send(t, p, topic, "C", v, fmt.Sprintf("C@%d", v))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildOrderedConsumer$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ORDERED_CHILD=1", "ORDERED_DSN="+e.dsn, "ORDERED_NS="+e.NameServer,
		"ORDERED_TOPIC="+topic, "ORDERED_GROUP="+group, "ORDERED_CRASH_AT=3")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	marker := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "EFFECT_COMMITTED") {
				marker <- true
				return
			}
		}
		marker <- false
	}()
	select {
	case ok := <-marker:
		if !ok {
			cmd.Wait()
			t.Fatal("child exited before the crash point")
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("child never reached the crash point")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if n := count(t, e.db, "SELECT COUNT(*) FROM applied"); n != 3 {
		t.Fatalf("%d effects before the restart, want 3", n)
	}

	g, err := ordered.New(e.db, "crash", ordered.WithLogger(tidetest.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	e.consumer(t, group, topic, g.Handler(func(ctx context.Context, tx *gorm.DB, ev ordered.Event) error {
		return insertApplied(tx, ev)
	}))
	// Stats count a delivery after its transaction commits: wait for the
	// second apply to be counted, not only for the version row.
	tidetest.WaitFor(t, 90*time.Second, "versions 4 and 5 after the crash", func() bool {
		v, _ := g.LastVersion(context.Background(), "C")
		return v == 5 && g.Stats().Applied >= 2
	})
	checkApplied(t, e.db, map[string]int64{"C": 5})
	if st := g.Stats(); st.Duplicates < 1 || st.Applied != 2 {
		t.Errorf("stats %+v: want version 3 (at least) seen as a duplicate and 2 applies", st)
	}
}

// TestChildOrderedConsumer is the crashing member of
// TestCrashAfterEffectBeforeAck; it runs only as its child.
func TestChildOrderedConsumer(t *testing.T) {
	if os.Getenv("ORDERED_CHILD") != "1" {
		t.Skip("child process of TestCrashAfterEffectBeforeAck")
	}
	db := openDB(t, os.Getenv("ORDERED_DSN"))
	g, err := ordered.New(db, "crash", ordered.WithLogger(tidetest.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	h := g.Handler(func(ctx context.Context, tx *gorm.DB, ev ordered.Event) error { return insertApplied(tx, ev) })
	crashAt := os.Getenv("ORDERED_CRASH_AT")
	c, err := ordered.NewConsumer(os.Getenv("ORDERED_GROUP"), tidetest.Options(os.Getenv("ORDERED_NS"),
		mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst), mqclient.WithCommitInterval(time.Hour))...)
	if err != nil {
		t.Fatal(err)
	}
	c.Subscribe(os.Getenv("ORDERED_TOPIC"), "*", func(ctx context.Context, m *mqclient.MessageExt) error {
		err := h(ctx, m)
		if _, v, _ := ordered.VersionOf(m); fmt.Sprint(v) == crashAt && err == nil {
			fmt.Println("EFFECT_COMMITTED")
			select {} // killed here: committed, not acknowledged
		}
		return err
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {}
}
