package txmsg

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/tidetest"
	"gorm.io/gorm"
)

// TestChild is the producer process of the crash tests (see env.child):
// it sends one transactional message and stops at TXMSG_CHILD.
func TestChild(t *testing.T) {
	point := os.Getenv("TXMSG_CHILD")
	if point == "" {
		t.Skip("child process of the crash tests")
	}
	db := openDB(t, os.Getenv("TXMSG_DSN"))
	s, err := New(db, WithGroup(os.Getenv("TXMSG_GROUP")), WithLogger(tidetest.Logger()),
		WithProducerOptions(mqclient.WithNameServers(os.Getenv("TXMSG_NS")), mqclient.WithLogger(tidetest.Logger())))
	if err != nil {
		t.Fatal(err)
	}
	s.hook = func(p string) {
		if p == point {
			fmt.Printf("TXMSG-REACHED %s\n", p)
			select {} // killed here
		}
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	key := os.Getenv("TXMSG_KEY")
	_, err = s.Send(context.Background(), &mqclient.Message{Topic: os.Getenv("TXMSG_TOPIC"), Body: []byte("child " + key)}, key, pay(key, 100))
	t.Fatalf("child was not killed at %s (send returned %v)", point, err)
}

func TestCommitDeliversOnce(t *testing.T) {
	e := startEnv(t)
	reg := prometheus.NewRegistry()
	s := e.sender(t, nil, WithRegisterer(reg))
	res, err := s.Send(context.Background(), e.msg("paid 42"), "pay-42", pay("pay-42", 42))
	if err != nil {
		t.Fatal(err)
	}
	if res.MsgID == "" {
		t.Fatal("no message id")
	}
	if st, err := s.Status(context.Background(), "pay-42"); err != nil || st != StatusCommitted {
		t.Fatalf("status %q %v", st, err)
	}
	e.invariant(t, "pay-42")
	// The same key again: refused, nothing more delivered.
	if _, err := s.Send(context.Background(), e.msg("paid 42 again"), "pay-42", pay("other", 1)); !errors.Is(err, ErrKeyCommitted) {
		t.Fatalf("second send with a committed key: %v", err)
	}
	e.invariant(t, "pay-42", "other")
	if n := testutil.ToFloat64(s.m.sends.WithLabelValues("committed")); n != 1 {
		t.Errorf("committed sends metric %v", n)
	}
}

func TestRollbackDeliversNothing(t *testing.T) {
	e := startEnv(t)
	s := e.sender(t, nil)
	boom := errors.New("insufficient funds")
	_, err := s.Send(context.Background(), e.msg("paid 7"), "pay-7", func(tx *gorm.DB) error {
		if err := pay("pay-7", 7)(tx); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("send: %v", err)
	}
	_, err = s.Send(context.Background(), e.msg("paid 8"), "pay-8", func(tx *gorm.DB) error { panic("bug") })
	if err == nil {
		t.Fatal("panic: no error")
	}
	for _, k := range []string{"pay-7", "pay-8"} {
		if st, err := s.Status(context.Background(), k); err != nil || st == StatusCommitted {
			t.Fatalf("%s: fence %q %v", k, st, err)
		}
	}
	e.invariant(t, "pay-7", "pay-8")
}

// Crash window 1: killed after the half message, before the local
// transaction began. The check-back fences the key and rolls back; a
// retry with the same key commits under the next transaction key
// (pay-1#2). A late COMMIT from the "dead" producer does not resurrect
// the message.
func TestCrashBeforeLocalTx(t *testing.T) {
	e := startEnv(t, func(o *broker.Options) { o.TransactionTimeOut = 2000 }) // time to list the half message
	// Another instance of the service (same group) answers the check-backs.
	s := e.sender(t, nil)
	warm := e.warm(t, s)
	tidetest.WaitFor(t, 10*time.Second, "the warm-up", func() bool { return len(e.pending(t)) == 0 })
	e.child(t, "pay-1", "before-tx")
	h := e.pending(t)
	if len(h) != 1 {
		t.Fatalf("%d half messages pending", len(h))
	}
	tidetest.WaitFor(t, 20*time.Second, "the check-back's rollback", func() bool { return len(e.pending(t)) == 0 })
	if st, _ := s.Status(context.Background(), "pay-1"); st != StatusRolledBack {
		t.Fatalf("fence %q, want rolled_back", st)
	}
	t.Logf("late COMMIT after the check-back rollback: %q", e.endTx(t, h[0], mqclient.TransactionCommit))
	// The business retries under the same key (payment rows are keyed by
	// the transaction key in this test).
	if _, err := s.Send(context.Background(), e.msg("retry"), "pay-1", pay("pay-1#2", 100)); err != nil {
		t.Fatalf("retry with the fenced key: %v", err)
	}
	if st, _ := s.Status(context.Background(), "pay-1"); st != StatusCommitted {
		t.Fatalf("fence %q after the retry, want committed", st)
	}
	e.invariant(t, warm, "pay-1", "pay-1#2")
}

// TestFencedSendRetriesUnderFreshKey: a Send stalls between its half
// message and its transaction until the check-back has fenced its key
// (ErrFenced). Sending again with the same key must commit, under the
// next transaction key, and deliver exactly once; a third Send is then
// ErrKeyCommitted. Keys that only look like generations are refused.
func TestFencedSendRetriesUnderFreshKey(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	var stall atomic.Bool
	var s *Sender
	s = e.sender(t, nil, WithHook(func(point string) {
		if point != "before-tx" || !stall.Load() {
			return
		}
		// the check-back (answered by this very Sender) fences the key
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if st, _ := s.Status(ctx, "order-7"); st == StatusRolledBack {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}))
	warm := e.warm(t, s)
	stall.Store(true)
	if _, err := s.Send(ctx, e.msg("first"), "order-7", pay("order-7", 70)); !errors.Is(err, ErrFenced) {
		t.Fatalf("stalled Send: %v, want ErrFenced", err)
	}
	stall.Store(false)
	if _, err := s.Send(ctx, e.msg("again"), "order-7", pay("order-7#2", 70)); err != nil {
		t.Fatalf("Send again with the fenced key: %v", err)
	}
	if _, err := s.Send(ctx, e.msg("third"), "order-7", pay("order-7#3", 70)); !errors.Is(err, ErrKeyCommitted) {
		t.Fatalf("Send after the commit: %v, want ErrKeyCommitted", err)
	}
	for _, bad := range []string{"order-7#2", "x#0", strings.Repeat("k", MaxKeyLen+1)} {
		if _, err := s.Send(ctx, e.msg("bad"), bad, pay(bad, 1)); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("key %q: %v, want ErrInvalidOption", bad, err)
		}
	}
	// "order-7#x" is another business key, not a generation of order-7
	if _, err := s.Send(ctx, e.msg("other"), "order-7#x", pay("order-7#x", 1)); err != nil {
		t.Fatalf("key order-7#x: %v", err)
	}
	e.invariant(t, warm, "order-7", "order-7#2", "order-7#x")
}

// Crash window 2: killed after the local commit, before END_TRANSACTION.
// The check-back commits; the message is delivered once, and a late
// ROLLBACK or duplicate COMMIT changes nothing.
func TestCrashAfterCommit(t *testing.T) {
	e := startEnv(t, func(o *broker.Options) { o.TransactionTimeOut = 2000 })
	s := e.sender(t, nil)
	warm := e.warm(t, s)
	tidetest.WaitFor(t, 10*time.Second, "the warm-up", func() bool { return len(e.pending(t)) == 0 })
	e.child(t, "pay-2", "after-commit")
	h := e.pending(t)
	if len(h) != 1 {
		t.Fatalf("%d half messages pending", len(h))
	}
	tidetest.WaitFor(t, 20*time.Second, "the check-back's commit", func() bool { return len(e.pending(t)) == 0 })
	if st, _ := s.Status(context.Background(), "pay-2"); st != StatusCommitted {
		t.Fatalf("fence %q, want committed", st)
	}
	t.Logf("late ROLLBACK: %q", e.endTx(t, h[0], mqclient.TransactionRollback))
	t.Logf("duplicate COMMIT: %q", e.endTx(t, h[0], mqclient.TransactionCommit))
	e.invariant(t, warm, "pay-2")
}

// Crash window 3: killed inside the local transaction (its connection
// drops with the process): the database rolls back, the check says
// rollback.
func TestCrashInLocalTx(t *testing.T) {
	e := startEnv(t)
	s := e.sender(t, nil)
	warm := e.warm(t, s)
	e.child(t, "pay-3", "in-tx")
	tidetest.WaitFor(t, 20*time.Second, "the check-back's rollback", func() bool { return len(e.pending(t)) == 0 })
	if st, _ := s.Status(context.Background(), "pay-3"); st != StatusRolledBack {
		t.Fatalf("fence %q, want rolled_back", st)
	}
	e.invariant(t, warm, "pay-3")
}

// Check-backs racing open transactions: the half message is checked
// 300 ms after it is stored, while the business transaction starts late
// and/or stays open for random times. Either the check fences first (the
// send fails with ErrFenced) or it waits/answers UNKNOWN until the commit;
// never "committed but rolled back".
func TestCheckRacesOpenTx(t *testing.T) {
	e := startEnv(t)
	reg := prometheus.NewRegistry()
	s := e.sender(t, nil, WithRegisterer(reg))
	s.hook = func(p string) {
		if p == "before-tx" {
			time.Sleep(time.Duration(rand.IntN(900)) * time.Millisecond) // the scenario: a slow start
		}
	}
	const n = 48 // three waves of 16 concurrent sends
	keys := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		if i%16 == 0 {
			wg.Wait()
		}
		keys[i] = fmt.Sprintf("race-%d", i)
		wg.Go(func() {
			hold := time.Duration(rand.IntN(1800)) * time.Millisecond
			_, errs[i] = s.Send(context.Background(), e.msg(keys[i]), keys[i], func(tx *gorm.DB) error {
				if err := pay(keys[i], i)(tx); err != nil {
					return err
				}
				time.Sleep(hold) // the scenario: a slow transaction holding the fence row
				return nil
			})
		})
	}
	wg.Wait()
	var committed, fenced int
	for i, err := range errs {
		st, _ := s.Status(context.Background(), keys[i])
		switch {
		case err == nil:
			committed++
			if st != StatusCommitted {
				t.Errorf("%s: send ok but fence %q", keys[i], st)
			}
		case errors.Is(err, ErrFenced):
			fenced++
			if st != StatusRolledBack {
				t.Errorf("%s: fenced but fence %q", keys[i], st)
			}
		default:
			t.Errorf("%s: %v", keys[i], err)
		}
	}
	e.invariant(t, keys...)
	t.Logf("committed %d, fenced %d; checks: commit %v rollback %v unknown %v", committed, fenced,
		testutil.ToFloat64(s.m.checks.WithLabelValues("commit")), testutil.ToFloat64(s.m.checks.WithLabelValues("rollback")),
		testutil.ToFloat64(s.m.checks.WithLabelValues("unknown")))
}

// A check that cannot take the fence lock within its timeout (a competing
// transaction holds the key) answers UNKNOWN, then decides once the lock
// is released.
func TestCheckLockWaitIsUnknown(t *testing.T) {
	e := startEnv(t)
	s := e.sender(t, nil)
	ctx := context.Background()
	msg := func(key, attempt string) *mqclient.MessageExt {
		return &mqclient.MessageExt{Message: mqclient.Message{Properties: map[string]string{PropKey: key, PropAttempt: attempt}}}
	}
	for _, end := range []string{"rollback", "commit"} {
		key := "lw-" + end
		tx := e.db.Begin()
		if err := tx.Exec("INSERT INTO "+DefaultTable+" (tx_key, attempt, producer_group, status, created_at) VALUES (?, 'a1', 'g', 'committed', NOW(6))", key).Error; err != nil {
			t.Fatal(err)
		}
		if st := s.Check(ctx, msg(key, "a1")); st != mqclient.TransactionUnknown {
			t.Fatalf("%s: check while the transaction holds the key: %v", key, st)
		}
		want := mqclient.TransactionRollback
		if end == "commit" {
			tx.Commit()
			want = mqclient.TransactionCommit
		} else {
			tx.Rollback()
		}
		if st := s.Check(ctx, msg(key, "a1")); st != want {
			t.Fatalf("%s: check after %s: %v", key, end, st)
		}
		if end == "commit" { // a half message of another attempt of the key
			if st := s.Check(ctx, msg(key, "a2")); st != mqclient.TransactionRollback {
				t.Fatalf("other attempt: %v", st)
			}
		}
	}
	if st := s.Check(ctx, msg("", "")); st != mqclient.TransactionUnknown {
		t.Fatalf("message without key: %v", st)
	}
	for key, want := range map[string]Status{"lw-rollback": StatusRolledBack, "lw-commit": StatusCommitted} {
		if st, err := s.Status(ctx, key); err != nil || st != want {
			t.Errorf("%s: fence %q %v, want %q", key, st, err, want)
		}
	}
}

// The database is unreachable while check-backs arrive for a committed
// transaction whose producer died: every check answers UNKNOWN and nothing
// is delivered; once the database is back the check commits, once.
func TestCheckDatabaseDownIsUnknown(t *testing.T) {
	e := startEnv(t)
	px := newProxy(t, e.my.Addr)
	reg := prometheus.NewRegistry()
	s := e.sender(t, openDB(t, dsnVia(t, e.my.DSN, px.addr)), WithRegisterer(reg))
	warm := e.warm(t, s)
	tidetest.WaitFor(t, 10*time.Second, "the warm-up", func() bool { return len(e.pending(t)) == 0 })
	px.stop()
	e.child(t, "pay-5", "after-commit")
	unknown := s.m.checks.WithLabelValues("unknown")
	tidetest.WaitFor(t, 20*time.Second, "UNKNOWN check-backs", func() bool { return testutil.ToFloat64(unknown) >= 3 })
	if len(e.pending(t)) != 1 || e.rec.distinct("pay-5") != 0 {
		t.Fatal("resolved while the database was down")
	}
	if n := testutil.ToFloat64(s.m.checks.WithLabelValues("commit")) + testutil.ToFloat64(s.m.checks.WithLabelValues("rollback")); n != 0 {
		t.Fatalf("%v decisions while the database was down", n)
	}
	px.start(t)
	e.invariant(t, warm, "pay-5")
	if st, _ := s.Status(context.Background(), "pay-5"); st != StatusCommitted {
		t.Fatalf("fence %q", st)
	}
}

func TestCleanup(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	for i := range 7 {
		if err := e.db.Exec("INSERT INTO "+DefaultTable+" (tx_key, attempt, producer_group, status, created_at) VALUES (?, 'a', 'g', 'committed', NOW(6) - INTERVAL 2 DAY)", fmt.Sprint("old-", i)).Error; err != nil {
			t.Fatal(err)
		}
	}
	e.db.Exec("INSERT INTO " + DefaultTable + " (tx_key, attempt, producer_group, status, created_at) VALUES ('new', 'a', 'g', 'committed', NOW(6))")
	n, err := Cleanup(ctx, e.db, "", 24*time.Hour, 3)
	if err != nil || n != 7 {
		t.Fatalf("cleanup: %d %v", n, err)
	}
	var left int64
	e.db.Raw("SELECT COUNT(*) FROM " + DefaultTable).Scan(&left)
	if left != 1 {
		t.Fatalf("%d rows left", left)
	}
	if _, err := Cleanup(ctx, e.db, "x; DROP", time.Hour, 0); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("bad table: %v", err)
	}
}

func TestOptions(t *testing.T) {
	e := startEnv(t)
	for _, opts := range [][]Option{{WithTable("bad name")}, {WithCheckTimeout(100 * time.Millisecond)}, {WithLogger(nil)}} {
		if _, err := New(e.db, opts...); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%v", err)
		}
	}
	s, err := New(e.db, WithTable("missing_table"), WithProducerOptions(e.Options()...))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil {
		t.Error("started without its table")
		s.Shutdown(context.Background())
	}
	s2 := e.sender(t, nil)
	if _, err := s2.Send(context.Background(), e.msg("x"), "", pay("x", 1)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("empty key: %v", err)
	}
}

// The connection drops before COMMIT reaches the database: Send reports
// mqclient.ErrTransactionUnknown, the check-back (once the database is
// reachable) finds no committed row, fences the key and rolls back.
func TestCommitOutcomeUnknown(t *testing.T) {
	e := startEnv(t)
	px := newProxy(t, e.my.Addr)
	s := e.sender(t, openDB(t, dsnVia(t, e.my.DSN, px.addr)))
	warm := e.warm(t, s)
	s.hook = func(p string) {
		if p == "in-tx" {
			px.stop()
		}
	}
	_, err := s.Send(context.Background(), e.msg("lost commit"), "pay-6", pay("pay-6", 6))
	if !errors.Is(err, mqclient.ErrTransactionUnknown) {
		t.Fatalf("send: %v", err)
	}
	px.start(t)
	e.invariant(t, warm, "pay-6")
	if st, _ := s.Status(context.Background(), "pay-6"); st != StatusRolledBack {
		t.Fatalf("fence %q", st)
	}
}

// TestSendsAreIdempotent: the Sender's producer stamps its messages for
// idempotent sends by default (mqclient's default), so a retried half
// message is stored once by a Tide broker; against a broker without the
// extension it sends plain messages.
func TestSendsAreIdempotent(t *testing.T) {
	e := startEnv(t)
	s := e.sender(t, nil)
	if _, err := s.Send(context.Background(), e.msg("stamped"), "stamp-1", pay("stamp-1", 1)); err != nil {
		t.Fatal(err)
	}
	e.invariant(t, "stamp-1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ms, err := e.Admin.QueryByKey(ctx, e.topic, "stamp-1", 8, time.UnixMilli(0), time.Now().Add(time.Hour))
	if err != nil || len(ms) != 1 {
		t.Fatalf("query: %d messages, %v", len(ms), err)
	}
	_, stamped := ms[0].Properties[protocol.PropProducerStamp]
	if want := brokertest.Extensions(); stamped != want {
		t.Errorf("committed message stamped=%v (%q), want %v (tide extensions on)", stamped, ms[0].Properties[protocol.PropProducerStamp], want)
	}
}
