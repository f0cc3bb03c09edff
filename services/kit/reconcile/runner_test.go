package reconcile_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/services/kit/reconcile"
	"gorm.io/gorm"
)

const jobName = "payments-vs-provider"

type fixture struct {
	db    *gorm.DB
	dsn   string
	redis *testenv.RedisServer
	job   *paymentsJob
}

func setup(t *testing.T) *fixture {
	t.Helper()
	m := testenv.MariaDB(t)
	f := &fixture{db: openDB(t, m.DSN), dsn: m.DSN, redis: testenv.Redis(t)}
	seed(t, f.db)
	f.job = &paymentsJob{db: f.db, grace: time.Minute}
	return f
}

func (f *fixture) runner(t testing.TB, opts ...reconcile.Option) *reconcile.Runner {
	t.Helper()
	base := []reconcile.Option{
		reconcile.WithRepair(reconcile.MissingOurs, reconcile.StatusMismatch, reconcile.Duplicate),
		reconcile.WithPageSize(3), reconcile.WithLeaseTTL(time.Second),
		reconcile.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	}
	r, err := reconcile.New(f.db, openRedis(t, f.redis.Addr()), append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func countAudit(t *testing.T, db *gorm.DB, event string) int64 {
	var n int64
	if err := db.Raw("SELECT COUNT(*) FROM reconcile_audit WHERE event = ?", event).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDetectClassifyRepairRunTwice(t *testing.T) {
	f := setup(t)
	reg := prometheus.NewRegistry()
	r := f.runner(t, reconcile.WithRegisterer(reg))
	ctx := context.Background()

	rep, err := r.RunOnce(ctx, f.job, reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[reconcile.Class]int{reconcile.MissingOurs: 2, reconcile.MissingProvider: 1, reconcile.AmountMismatch: 1,
		reconcile.StatusMismatch: 2, reconcile.Duplicate: 1}
	if rep.Checked != 14 || rep.InFlight != 2 || rep.Repaired != 5 || rep.Opened != 2 || rep.Resumed || len(rep.Found) != len(want) {
		t.Fatalf("report %+v", rep)
	}
	for c, n := range want {
		if rep.Found[c] != n {
			t.Errorf("class %s: %d, want %d", c, rep.Found[c], n)
		}
	}
	checkFinal(t, f.db, r)
	if n := f.job.repairs.Load(); n != 5 {
		t.Fatalf("Repair called %d times, want 5", n)
	}
	if n := countAudit(t, f.db, "repaired"); n != 5 {
		t.Fatalf("audit has %d repairs, want 5", n)
	}
	if v := testutil.ToFloat64(mustVec(t, reg, "mqclient_reconcile_repairs_total", jobName, "ok")); v != 5 {
		t.Fatalf("repairs metric %v", v)
	}
	if v := testutil.ToFloat64(mustVec(t, reg, "mqclient_reconcile_discrepancies_total", "in_flight", jobName)); v != 2 {
		t.Fatalf("in-flight metric %v", v)
	}

	// Second run: repaired items are consistent, nothing new is done.
	before := snapshot(t, f.db, businessTables...)
	rep, err = r.RunOnce(ctx, f.job, reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Repaired != 0 || rep.Opened != 0 || rep.Failed != 0 || rep.Cleared != 0 {
		t.Fatalf("second run acted: %+v", rep)
	}
	if after := snapshot(t, f.db, businessTables...); after != before {
		t.Fatalf("second run changed data\nbefore %s\nafter %s", before, after)
	}
	if n := f.job.repairs.Load(); n != 5 || countAudit(t, f.db, "repair_started") != 5 {
		t.Fatalf("second run repaired again (%d calls)", n)
	}
	checkFinal(t, f.db, r)

	// Lifecycle: acknowledge the missing-at-provider one, resolve the
	// amount mismatch with a note; repaired ones cannot be acknowledged.
	recs, _ := r.Discrepancies(ctx, jobName, reconcile.StatusOpen)
	ids := map[string]int64{}
	for _, rec := range recs {
		ids[rec.Key] = rec.ID
	}
	if err := r.Acknowledge(ctx, ids["p02"]); err != nil {
		t.Fatal(err)
	}
	if err := r.Resolve(ctx, ids["p04"], "fee netting, accepted by finance"); err != nil {
		t.Fatal(err)
	}
	rep05, _ := r.Discrepancies(ctx, jobName, reconcile.StatusRepaired)
	if err := r.Acknowledge(ctx, rep05[0].ID); !errors.Is(err, reconcile.ErrInvalidState) {
		t.Fatalf("acknowledge repaired: %v", err)
	}
	if err := r.Acknowledge(ctx, 1<<40); !errors.Is(err, reconcile.ErrNotFound) {
		t.Fatalf("acknowledge missing: %v", err)
	}
	if countAudit(t, f.db, "acknowledged") != 1 || countAudit(t, f.db, "resolved") != 1 {
		t.Fatal("lifecycle not audited")
	}
	// The provider's late file brings p02: the next run clears it.
	f.db.Exec("INSERT INTO provider_statement (ref, amount, status, created_at) VALUES ('p02', 1000, 'captured', ?)", time.Now().UTC().Add(-time.Hour))
	rep, err = r.RunOnce(ctx, f.job, reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cleared != 1 || rep.Repaired != 0 {
		t.Fatalf("third run %+v", rep)
	}
	got, _ := r.Discrepancies(ctx, jobName, reconcile.StatusAcknowledged, reconcile.StatusOpen)
	for _, rec := range got {
		if rec.Key == "p02" {
			t.Fatalf("p02 still %s", rec.Status)
		}
	}
}

// mustVec finds a counter by its label values in label-name order.
func mustVec(t *testing.T, reg *prometheus.Registry, name string, labels ...string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			ok := true
			for i, lp := range m.GetLabel() {
				ok = ok && i < len(labels) && lp.GetValue() == labels[i]
			}
			if ok {
				c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
				c.Add(m.GetCounter().GetValue())
				return c
			}
		}
	}
	t.Fatalf("metric %s%v not found", name, labels)
	return nil
}

func TestDryRunChangesNothing(t *testing.T) {
	f := setup(t)
	r := f.runner(t)
	before := snapshot(t, f.db, allTables...)
	rep, err := r.RunOnce(context.Background(), f.job, reconcile.RunOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, f.db, allTables...); after != before {
		t.Fatalf("dry run changed tables\nbefore %s\nafter %s", before, after)
	}
	if rep.RunID != 0 || rep.WouldRepair != 5 || len(rep.Discrepancies) != 7 || rep.InFlight != 2 || f.job.repairs.Load() != 0 {
		t.Fatalf("dry run report %+v, repairs %d", rep, f.job.repairs.Load())
	}
	// A real run afterwards still does everything.
	if _, err := r.RunOnce(context.Background(), f.job, reconcile.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	checkFinal(t, f.db, r)
}

func TestLeaseOneRunnerAtATime(t *testing.T) {
	f := setup(t)
	a, b := f.runner(t), f.runner(t)
	entered, release := make(chan struct{}), make(chan struct{})
	f.job.onCheck = func(cursor string) {
		if cursor == "" {
			close(entered)
			<-release
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.RunOnce(context.Background(), f.job, reconcile.RunOptions{})
		done <- err
	}()
	<-entered
	other := &paymentsJob{db: f.db, grace: time.Minute}
	if _, err := b.RunOnce(context.Background(), other, reconcile.RunOptions{}); !errors.Is(err, reconcile.ErrLeaseHeld) {
		t.Fatalf("second runner: %v, want ErrLeaseHeld", err)
	}
	if _, err := b.RunOnce(context.Background(), other, reconcile.RunOptions{DryRun: true}); !errors.Is(err, reconcile.ErrLeaseHeld) {
		t.Fatalf("second runner dry run: %v, want ErrLeaseHeld", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.job.onCheck = nil
	if other.repairs.Load() != 0 {
		t.Fatal("the refused runner repaired")
	}
	// The lease was released: the other runner runs now, and does nothing.
	rep, err := b.RunOnce(context.Background(), other, reconcile.RunOptions{})
	if err != nil || rep.Repaired != 0 {
		t.Fatalf("after release: %+v %v", rep, err)
	}
	checkFinal(t, f.db, a)
}

func TestRedisStoppedMidRun(t *testing.T) {
	f := setup(t)
	r := f.runner(t)
	f.job.onCheck = func(cursor string) {
		if cursor == "p03" { // second page: Redis goes away
			f.redis.Stop()
		}
	}
	_, err := r.RunOnce(context.Background(), f.job, reconcile.RunOptions{})
	if !errors.Is(err, reconcile.ErrLeaseLost) {
		t.Fatalf("RunOnce: %v, want ErrLeaseLost", err)
	}
	// Stopped at the checkpoint: page 1 stored and repaired, page 2 not.
	var status, cursor string
	f.db.Raw("SELECT status, next_cursor FROM reconcile_runs").Row().Scan(&status, &cursor)
	recs, _ := r.Discrepancies(context.Background(), jobName)
	if status != "running" || cursor != "p03" || len(recs) != 2 || f.job.repairs.Load() != 1 {
		t.Fatalf("after outage: run %s at %q, %d discrepancies, %d repairs", status, cursor, len(recs), f.job.repairs.Load())
	}
	f.job.onCheck = nil
	if err := f.redis.Start(); err != nil {
		t.Fatal(err)
	}
	rep := runUntilLease(t, r, f.job)
	if !rep.Resumed || rep.Repaired != 4 {
		t.Fatalf("resumed run %+v", rep)
	}
	checkFinal(t, f.db, r)
}

// TestKilledMidRunResumes kills a child runner (SIGKILL) after a repair's
// effect committed but before the runner recorded it, then resumes.
func TestKilledMidRunResumes(t *testing.T) {
	f := setup(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildRunner$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RECONCILE_CHILD_DSN="+f.dsn, "RECONCILE_CHILD_REDIS="+f.redis.Addr())
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	marker := make(chan struct{})
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "MARKER repaired-2") {
				close(marker)
			}
		}
	}()
	select {
	case <-marker:
	case <-time.After(30 * time.Second):
		t.Fatal("child never reached the marker")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	var repairing int64
	f.db.Raw("SELECT COUNT(*) FROM reconcile_discrepancies WHERE status = 'repairing'").Scan(&repairing)
	if repairing != 1 {
		t.Fatalf("%d discrepancies repairing after the kill, want 1", repairing)
	}
	r := f.runner(t)
	rep := runUntilLease(t, r, f.job)
	if !rep.Resumed {
		t.Fatalf("not resumed: %+v", rep)
	}
	checkFinal(t, f.db, r) // each effect exactly once despite two calls
	if n := countAudit(t, f.db, "repaired"); n != 5 {
		t.Fatalf("%d repaired audit entries, want 5", n)
	}
	before := snapshot(t, f.db, businessTables...)
	rep, err := r.RunOnce(context.Background(), f.job, reconcile.RunOptions{})
	if err != nil || rep.Repaired != 0 || rep.Resumed {
		t.Fatalf("run after resume: %+v %v", rep, err)
	}
	if snapshot(t, f.db, businessTables...) != before {
		t.Fatal("run after resume changed data")
	}
}

// TestChildRunner is the child of TestKilledMidRunResumes.
func TestChildRunner(t *testing.T) {
	dsn := os.Getenv("RECONCILE_CHILD_DSN")
	if dsn == "" {
		t.Skip("child process only")
	}
	f := &fixture{db: openDB(t, dsn)}
	job := &paymentsJob{db: f.db, grace: time.Minute}
	job.onRepair = func(n int32, key string) {
		if n == 2 {
			os.Stdout.WriteString("MARKER repaired-2 " + key + "\n")
			select {} // killed here
		}
	}
	r, err := reconcile.New(f.db, openRedis(t, os.Getenv("RECONCILE_CHILD_REDIS")),
		reconcile.WithRepair(reconcile.MissingOurs, reconcile.StatusMismatch, reconcile.Duplicate),
		reconcile.WithPageSize(3), reconcile.WithLeaseTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r.RunOnce(context.Background(), job, reconcile.RunOptions{})
	t.Fatal("child was not killed")
}

func TestScheduledStartShutdown(t *testing.T) {
	f := setup(t)
	r := f.runner(t)
	if err := r.Schedule(f.job, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var done int64
		f.db.Raw("SELECT COUNT(*) FROM reconcile_runs WHERE status = 'done'").Scan(&done)
		if done >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("scheduled runs did not complete")
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	checkFinal(t, f.db, r)
	if n := f.job.repairs.Load(); n != 5 {
		t.Fatalf("scheduled runs called Repair %d times, want 5", n)
	}
}

// TestInvolving finds the discrepancies of one key and the runs that dealt
// with them, and nothing for an unknown key or a LIKE wildcard.
func TestInvolving(t *testing.T) {
	f := setup(t)
	r := f.runner(t)
	ctx := context.Background()
	first, err := r.RunOnce(ctx, f.job, reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.RunOnce(ctx, f.job, reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recs, runs, err := r.Involving(ctx, "p02", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Key != "p02" {
		t.Fatalf("records %+v, want p02's", recs)
	}
	// p02 (open, not repairable) was found by the first run and seen again
	// by the second.
	if len(runs) != 2 || runs[0] != second.RunID || runs[1] != first.RunID {
		t.Fatalf("runs %v, want [%d %d]", runs, second.RunID, first.RunID)
	}
	for _, s := range []string{"nope", "p_2", "p%2", ""} { // wildcards match only themselves
		recs, runs, err := r.Involving(ctx, s, 10)
		if err != nil || len(recs) != 0 || len(runs) != 0 {
			t.Errorf("Involving(%q) = %d records, runs %v, %v; want none", s, len(recs), runs, err)
		}
	}
}

// A key whose repair held (a complete run found it consistent) and that
// breaks again later is a new occurrence: repaired once more under a new
// idempotency key. One found again by the run right after its repair did
// not converge and is escalated, not repaired twice.
func TestRepairedKeyBreaksAgain(t *testing.T) {
	f := setup(t)
	r := f.runner(t)
	ctx := context.Background()
	run := func() *reconcile.Report {
		t.Helper()
		rep, err := r.RunOnce(ctx, f.job, reconcile.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	status := func(key string) (string, int) {
		t.Helper()
		var st string
		var occ int
		if err := f.db.Raw("SELECT status, occurrence FROM reconcile_discrepancies WHERE dkey = ?", key).Row().Scan(&st, &occ); err != nil {
			t.Fatal(err)
		}
		return st, occ
	}
	if rep := run(); rep.Repaired != 5 {
		t.Fatalf("first run %+v", rep)
	}
	if rep := run(); rep.Repaired != 0 { // p05 consistent here: the repair held
		t.Fatalf("second run %+v", rep)
	}
	// p05 breaks again: a new occurrence, repaired under a new key.
	f.db.Exec("UPDATE payments SET status = 'pending' WHERE ref = 'p05'")
	if rep := run(); rep.Repaired != 1 || rep.Opened != 0 {
		t.Fatalf("run after p05 broke again: %+v", rep)
	}
	if st, occ := status("p05"); st != string(reconcile.StatusRepaired) || occ != 2 {
		t.Fatalf("p05 %s occurrence %d, want repaired 2", st, occ)
	}
	var keys int64
	f.db.Raw("SELECT COUNT(*) FROM ledger WHERE ref = 'p05'").Scan(&keys)
	if keys != 2 || countAudit(t, f.db, "recurred") != 1 {
		t.Fatalf("p05 effects %d, recurred audits %d; want 2 and 1", keys, countAudit(t, f.db, "recurred"))
	}
	// p05 breaks again before any complete run saw its second repair hold:
	// that repair did not converge, so the next run escalates instead of
	// repairing twice.
	f.db.Exec("UPDATE payments SET status = 'pending' WHERE ref = 'p05'")
	if rep := run(); rep.Repaired != 0 || rep.Opened != 1 {
		t.Fatalf("non-converging repair: %+v", rep)
	}
	if st, _ := status("p05"); st != string(reconcile.StatusOpen) {
		t.Fatalf("p05 %s, want open (escalated)", st)
	}
}
