package transaction

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type env struct {
	t      *testing.T
	dir    string
	st     *store.Store
	svc    *Service
	clk    *clock
	mu     sync.Mutex
	checks []int64 // half queue offsets checked
	check  func(group string, req *protocol.Command) error
}

var host = netip.MustParseAddrPort("127.0.0.1:10911")

func openEnv(t *testing.T, dir string, clk *clock, opts ...func(*Options)) *env {
	t.Helper()
	e := openEnvUnrecovered(t, dir, clk, opts...)
	// Recover as Start does, on the test's goroutine: the tests drive
	// the check rounds themselves.
	if !e.svc.recoverUntilDone() {
		t.Fatal("recovery stopped")
	}
	return e
}

// openEnvUnrecovered is openEnv without the recovery (Start does it).
func openEnvUnrecovered(t *testing.T, dir string, clk *clock, opts ...func(*Options)) *env {
	t.Helper()
	cfg := store.DefaultConfig()
	cfg.StorePathRootDir = dir
	cfg.MappedFileSizeCommitLog = 1 << 20
	cfg.MaxMessageSize = 64 << 10
	cfg.MappedFileSizeConsumeQueue = 20 * 1000
	st, err := store.Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, st: st, clk: clk}
	o := Options{
		Store: st, StatePath: filepath.Join(dir, "config", "transaction.json"), StoreHost: host,
		Timeout: time.Second, Interval: time.Second, MaxChecks: 3, Now: clk.now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Check: func(ctx context.Context, group string, req *protocol.Command) error {
			off, _ := strconv.ParseInt(req.Ext("tranStateTableOffset"), 10, 64)
			e.mu.Lock()
			f := e.check
			e.mu.Unlock()
			if f != nil {
				if err := f(group, req); err != nil {
					return err
				}
			}
			e.mu.Lock()
			e.checks = append(e.checks, off)
			e.mu.Unlock()
			return nil
		},
	}
	for _, f := range opts {
		f(&o)
	}
	e.svc, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) close() {
	if err := e.svc.Stop(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.Close(); err != nil {
		e.t.Fatal(err)
	}
}

// half stores a prepared message and registers it.
func (e *env) half(key string) *protocol.MessageExt {
	e.t.Helper()
	m := &protocol.MessageExt{BornHost: host, StoreHost: host, BornTimestamp: e.clk.now().UnixMilli(), SysFlag: protocol.SysFlagTxPrepared}
	m.Topic, m.QueueID, m.Body = "orders", 2, []byte(key)
	m.Properties = map[string]string{protocol.PropUniqKey: key, protocol.PropProducerGroup: "pg", protocol.PropTransactionPrepared: "true"}
	Prepare(m)
	if _, err := e.st.PutMessage(context.Background(), m); err != nil {
		e.t.Fatal(err)
	}
	e.svc.Added(m)
	return m
}

func (e *env) visible() int64 {
	e.t.Helper()
	if err := e.st.WaitDispatched(context.Background(), e.st.MaxPhyOffset()); err != nil {
		e.t.Fatal(err)
	}
	return e.st.MaxOffset("orders", 2)
}

func (e *env) end(m *protocol.MessageExt, d Decision) Outcome {
	e.t.Helper()
	out, err := e.svc.End(context.Background(), EndRequest{ProducerGroup: "pg", TranStateTableOffset: m.QueueOffset, CommitLogOffset: m.CommitLogOffset, Decision: d})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func newClock() *clock { return &clock{t: time.Now()} }

func TestServiceFirstDecisionWins(t *testing.T) {
	e := openEnv(t, t.TempDir(), newClock())
	defer e.close()
	a, b := e.half("a"), e.half("b")
	if e.visible() != 0 {
		t.Fatal("half message visible before commit")
	}
	cases := []struct {
		m    *protocol.MessageExt
		d    Decision
		want Outcome
	}{
		{a, Commit, Applied}, {a, Commit, Duplicate}, {a, Rollback, Conflict},
		{b, Rollback, Applied}, {b, Commit, Conflict},
	}
	for i, c := range cases {
		if got := e.end(c.m, c.d); got != c.want {
			t.Fatalf("case %d: outcome %v, want %v", i, got, c.want)
		}
	}
	if n := e.visible(); n != 1 {
		t.Fatalf("visible = %d, want exactly one copy", n)
	}
	units, _ := e.st.ReadQueue("orders", 2, 0, 1)
	msg, err := e.st.LookMessage(units[0].Offset)
	if err != nil {
		t.Fatal(err)
	}
	if msg.PreparedTransactionOffset != a.CommitLogOffset || protocol.TxType(msg.SysFlag) != protocol.SysFlagTxCommit ||
		msg.Property(protocol.PropRealTopic) != "" || msg.Property(protocol.PropTransactionPrepared) != "" || string(msg.Body) != "a" {
		t.Fatalf("committed copy %+v", msg)
	}
	// bad requests
	if _, err := e.svc.End(context.Background(), EndRequest{ProducerGroup: "other", TranStateTableOffset: a.QueueOffset, CommitLogOffset: a.CommitLogOffset, Decision: Commit}); !errors.Is(err, ErrMismatch) {
		t.Fatalf("wrong group: %v", err)
	}
	if _, err := e.svc.End(context.Background(), EndRequest{TranStateTableOffset: a.QueueOffset + 7, CommitLogOffset: a.CommitLogOffset, Decision: Commit}); !errors.Is(err, ErrMismatch) {
		t.Fatalf("wrong queue offset: %v", err)
	}
	if _, err := e.svc.End(context.Background(), EndRequest{CommitLogOffset: 1 << 40, Decision: Commit}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown offset: %v", err)
	}
}

func TestServiceCheckBackAndRestart(t *testing.T) {
	dir, clk := t.TempDir(), newClock()
	e := openEnv(t, dir, clk)
	var halves []*protocol.MessageExt
	for i := 0; i < 200; i++ {
		halves = append(halves, e.half("k"+strconv.Itoa(i)))
	}
	for i := 0; i < 100; i++ { // the first hundred are decided before the restart
		d := Commit
		if i%2 == 1 {
			d = Rollback
		}
		e.end(halves[i], d)
	}
	e.svc.round()
	if len(e.checks) != 0 {
		t.Fatalf("checked before transactionTimeOut: %v", e.checks)
	}
	e.close()

	e = openEnv(t, dir, clk)
	defer e.close()
	if n := len(e.svc.List()); n != 100 {
		t.Fatalf("pending after restart = %d, want 100", n)
	}
	// The checker answers each check by deciding: even offsets commit.
	e.check = func(group string, req *protocol.Command) error {
		off, _ := strconv.ParseInt(req.Ext("tranStateTableOffset"), 10, 64)
		clo, _ := strconv.ParseInt(req.Ext("commitLogOffset"), 10, 64)
		if group != "pg" {
			t.Errorf("check for group %q", group)
		}
		msgs, err := protocol.DecodeMessages(req.Body)
		if err != nil || len(msgs) != 1 || msgs[0].Topic != "orders" || msgs[0].QueueID != 2 {
			t.Errorf("check body: %v %+v", err, msgs)
		}
		d := Rollback
		if off%2 == 0 {
			d = Commit
		}
		go e.svc.End(context.Background(), EndRequest{ProducerGroup: group, TranStateTableOffset: off, CommitLogOffset: clo, Decision: d, FromCheck: true})
		return nil
	}
	clk.advance(2 * time.Second)
	e.svc.round()
	deadline := time.Now().Add(10 * time.Second)
	for len(e.svc.List()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(e.svc.List()); n != 0 {
		t.Fatalf("unresolved after check-back: %d", n)
	}
	for _, off := range e.checks {
		if off < 100 {
			t.Fatalf("decided half %d was checked again", off)
		}
	}
	// 50 commits before the restart, 50 after.
	if n := e.visible(); n != 100 {
		t.Fatalf("visible = %d, want 100", n)
	}
}

func TestServiceReappliesCommitLostInCrash(t *testing.T) {
	for _, tc := range []struct {
		name, commitTopic string
	}{
		{"recorded topic", "orders"},
		{"op record without a topic", ""}, // written before the topic was recorded
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, clk := t.TempDir(), newClock()
			e := openEnv(t, dir, clk)
			m := e.half("lost")
			// the op record is written, then the process dies before the commit
			if err := e.svc.writeOp(context.Background(), m.QueueOffset, Commit, tc.commitTopic); err != nil {
				t.Fatal(err)
			}
			e.close()
			for i := 0; i < 2; i++ { // re-applied once, not again on the next start
				e = openEnv(t, dir, clk)
				if n := e.visible(); n != 1 {
					t.Fatalf("start %d: visible = %d, want 1", i, n)
				}
				if e.svc.Decision(m.QueueOffset) != Commit {
					t.Fatal("decision lost")
				}
				e.close()
			}
		})
	}
}

// TestServiceCommitDivertedOnce: a commit diverted to another topic (a
// timer or a delay level) is recorded with that topic and is not copied
// again by later starts.
func TestServiceCommitDivertedOnce(t *testing.T) {
	dir, clk := t.TempDir(), newClock()
	e := openEnv(t, dir, clk, func(o *Options) {
		o.Divert = func(m *protocol.MessageExt) { m.Topic, m.QueueID = "waiting", 0 }
	})
	m := e.half("diverted")
	if out := e.end(m, Commit); out != Applied {
		t.Fatalf("outcome %v", out)
	}
	e.close()
	for i := 0; i < 3; i++ {
		e = openEnv(t, dir, clk, func(o *Options) {
			o.Divert = func(m *protocol.MessageExt) { m.Topic, m.QueueID = "waiting", 0 }
		})
		if err := e.st.WaitDispatched(context.Background(), e.st.MaxPhyOffset()); err != nil {
			t.Fatal(err)
		}
		if n := e.st.MaxOffset("waiting", 0); n != 1 {
			t.Fatalf("start %d: %d copies in the divert topic, want 1", i, n)
		}
		e.close()
	}
}

func TestServiceNoProducerBacksOff(t *testing.T) {
	clk := newClock()
	e := openEnv(t, t.TempDir(), clk)
	defer e.close()
	e.half("x")
	var attempts int
	e.check = func(string, *protocol.Command) error { attempts++; return ErrNoProducer }
	for i := 0; i < 40; i++ { // 40 check intervals of outage
		clk.advance(time.Second)
		e.svc.round()
	}
	// backoff doubles up to 4 intervals: about 40/4 attempts, never one per round
	if attempts > 14 || attempts < 5 {
		t.Fatalf("attempts during the outage = %d", attempts)
	}
	if st := e.svc.Stats(); st.ChecksSent != 0 || st.Parked != 0 {
		t.Fatalf("stats %+v", st)
	}
	e.check = nil // the producer is back
	clk.advance(5 * time.Second)
	e.svc.round()
	if len(e.checks) != 1 {
		t.Fatalf("checks after the producer returned = %d", len(e.checks))
	}
}

func TestServiceParkResumeForce(t *testing.T) {
	clk := newClock()
	e := openEnv(t, t.TempDir(), clk)
	defer e.close()
	m := e.half("stuck")
	for i := 0; i < 10; i++ {
		clk.advance(1500 * time.Millisecond)
		e.svc.round()
	}
	if len(e.checks) != 3 {
		t.Fatalf("checks = %d, want transactionCheckMax = 3", len(e.checks))
	}
	list := e.svc.List()
	if len(list) != 1 || !list[0].Parked || list[0].Topic != "orders" {
		t.Fatalf("list %+v", list)
	}
	if err := e.st.WaitDispatched(context.Background(), e.st.MaxPhyOffset()); err != nil {
		t.Fatal(err)
	}
	if e.st.MaxOffset(CheckMaxTopic, 0) != 1 {
		t.Fatal("parked message not visible in TRANS_CHECK_MAX_TIME_TOPIC")
	}
	if err := e.svc.Resume(context.Background(), m.QueueOffset, "test"); err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Second)
	e.svc.round()
	if len(e.checks) != 4 {
		t.Fatalf("resume did not restart checks: %d", len(e.checks))
	}
	if out, err := e.svc.Force(context.Background(), m.QueueOffset, Commit, "ops"); err != nil || out != Applied {
		t.Fatalf("force: %v %v", out, err)
	}
	if e.visible() != 1 || len(e.svc.List()) != 0 {
		t.Fatal("force commit not applied")
	}
	if _, err := e.svc.Force(context.Background(), m.QueueOffset, Rollback, "ops"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("force on a decided message: %v", err)
	}
}

func TestServiceRateLimit(t *testing.T) {
	clk := newClock()
	e := openEnv(t, t.TempDir(), clk)
	defer e.close()
	e.svc.o.MaxChecksPerSecond = 5
	for i := 0; i < 50; i++ {
		e.half("r" + strconv.Itoa(i))
	}
	clk.advance(2 * time.Second)
	e.svc.round()
	if len(e.checks) != 5 {
		t.Fatalf("checks in one round = %d, want the rate limit 5", len(e.checks))
	}
}

// TestRateLimitClockStepBack: the check-back rate limiter reads the
// wall clock; a step back (the chaos campaign's clock-jump fault found
// it) must not leave the bucket owing tokens for the step.
func TestRateLimitClockStepBack(t *testing.T) {
	clk := newClock()
	e := openEnv(t, t.TempDir(), clk)
	defer e.close()
	e.svc.o.MaxChecksPerSecond = 5
	t0 := clk.now()
	for i := range 5 {
		if !e.svc.take("g", t0) {
			t.Fatalf("take %d of a full bucket refused", i+1)
		}
	}
	if e.svc.take("g", t0) {
		t.Fatal("a sixth take in the same instant allowed")
	}
	back := t0.Add(-time.Minute)
	if e.svc.take("g", back) {
		t.Fatal("a step back of the clock refilled the bucket")
	}
	if !e.svc.take("g", back.Add(time.Second)) {
		t.Fatal("a second after a clock step back the bucket is still empty: the step was charged")
	}
}

// TestServiceDecisionsWaitForRecovery: recovery runs in the background
// after Start, while half messages keep arriving; a decision waits for it,
// so a transaction committed before the restart is not committed again.
func TestServiceDecisionsWaitForRecovery(t *testing.T) {
	dir, clk := t.TempDir(), newClock()
	e := openEnv(t, dir, clk)
	a, b := e.half("a"), e.half("b")
	e.end(a, Commit)
	e.close()

	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e = openEnvUnrecovered(t, dir, clk, func(o *Options) {
		o.BeforeRecover = func() {
			once.Do(func() { close(reached) })
			<-release
		}
	})
	defer e.close()
	e.svc.Start()
	<-reached
	c := e.half("c") // stored and announced while recovery is stalled
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.svc.End(cancelled, EndRequest{ProducerGroup: "pg", TranStateTableOffset: a.QueueOffset, CommitLogOffset: a.CommitLogOffset, Decision: Commit}); !errors.Is(err, ErrNotReady) {
		t.Fatalf("End before recovery: %v, want ErrNotReady", err)
	}
	if e.svc.Recovered() {
		t.Fatal("Recovered while recovery is stalled")
	}
	type result struct {
		out Outcome
		err error
	}
	res := make(chan result, 1)
	go func() {
		out, err := e.svc.End(context.Background(), EndRequest{ProducerGroup: "pg", TranStateTableOffset: a.QueueOffset, CommitLogOffset: a.CommitLogOffset, Decision: Commit})
		res <- result{out, err}
	}()
	close(release)
	if r := <-res; r.err != nil || r.out != Duplicate {
		t.Fatalf("commit of a transaction committed before the restart: outcome %v (%v), want Duplicate", r.out, r.err)
	}
	if n := e.visible(); n != 1 {
		t.Fatalf("visible = %d, want exactly one copy of a", n)
	}
	var pending []int64
	for _, h := range e.svc.List() {
		pending = append(pending, h.QueueOffset)
	}
	if want := []int64{b.QueueOffset, c.QueueOffset}; !slices.Equal(pending, want) {
		t.Fatalf("pending after recovery = %v, want %v", pending, want)
	}
}

// failingCopies is a store whose puts into topic "orders" (the committed
// copies) fail while fail is set, as on a full disk.
type failingCopies struct {
	*store.Store
	fail atomic.Bool
}

func (f *failingCopies) PutMessage(ctx context.Context, m *protocol.MessageExt) (store.PutResult, error) {
	if f.fail.Load() && m.Topic == "orders" {
		return store.PutResult{}, store.ErrDiskFull
	}
	return f.Store.PutMessage(ctx, m)
}

// TestServiceRetriesCommitNotStored: a COMMIT whose op record was written
// but whose committed copy could not be stored (the disk filled between
// the two) is stored by a later round once the store takes writes again,
// not only by the next recovery (chaos finding 9: x-13801 stayed invisible
// until the drain's deadline).
func TestServiceRetriesCommitNotStored(t *testing.T) {
	dir, clk := t.TempDir(), newClock()
	var fc *failingCopies
	e := openEnv(t, dir, clk, func(o *Options) {
		fc = &failingCopies{Store: o.Store.(*store.Store)}
		o.Store = fc
	})
	defer e.close()
	m := e.half("full-disk")
	fc.fail.Store(true)
	if _, err := e.svc.End(context.Background(), EndRequest{ProducerGroup: "pg", TranStateTableOffset: m.QueueOffset,
		CommitLogOffset: m.CommitLogOffset, Decision: Commit}); err == nil {
		t.Fatal("End stored the committed copy on a full disk")
	}
	e.svc.round()
	if n := e.visible(); n != 0 {
		t.Fatalf("visible = %d while the disk is full", n)
	}
	fc.fail.Store(false)
	e.svc.round()
	if n := e.visible(); n != 1 {
		t.Fatalf("visible = %d after the disk has room again, want 1", n)
	}
	e.svc.round() // stored once, not again
	if n := e.visible(); n != 1 {
		t.Fatalf("visible = %d after another round, want 1", n)
	}
}

// TestListWhileChecking: List reads what the check rounds update (the
// check count and the next check time) under the service's lock; under
// -race an operator's listing during a round was a data race.
func TestListWhileChecking(t *testing.T) {
	clk := newClock()
	e := openEnv(t, t.TempDir(), clk)
	defer e.close()
	for i := 0; i < 20; i++ {
		e.half("k" + strconv.Itoa(i))
	}
	done := make(chan struct{})
	listed := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-done:
				listed <- n
				return
			default:
				n += len(e.svc.List())
			}
		}
	}()
	for round := 1; round <= 2; round++ {
		clk.advance(2 * time.Second)
		e.svc.round()
	}
	close(done)
	if n := <-listed; n == 0 {
		t.Log("no listing overlapped the rounds")
	}
	list := e.svc.List()
	if len(list) != 20 {
		t.Fatalf("%d half messages listed, want 20", len(list))
	}
	for _, h := range list {
		if h.Checks != 2 || h.Parked {
			t.Fatalf("half %d: %d checks (parked %v), want 2 after two rounds", h.QueueOffset, h.Checks, h.Parked)
		}
	}
}
