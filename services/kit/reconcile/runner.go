package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
)

// Errors.
var (
	// ErrLeaseHeld: another runner (in this or another process) is running
	// the job; nothing was done.
	ErrLeaseHeld = errors.New("reconcile: lease held by another runner")
	// ErrLeaseLost: the lease could not be renewed (Redis unreachable,
	// key expired or taken). The run stopped at a checkpoint and stays
	// resumable; the next RunOnce continues it.
	ErrLeaseLost = errors.New("reconcile: lease lost")
	// ErrNotFound: no discrepancy with that id.
	ErrNotFound = errors.New("reconcile: not found")
	// ErrInvalidState: the lifecycle transition is not allowed from the
	// discrepancy's current status.
	ErrInvalidState = errors.New("reconcile: invalid state transition")
	// ErrInvalidJob: the job's name, keys, classes or cursors are unusable.
	ErrInvalidJob = errors.New("reconcile: invalid job")
	// ErrInvalidOption: an option is out of range.
	ErrInvalidOption = errors.New("reconcile: invalid option")
	// ErrStarted: Schedule after Start, or Start twice.
	ErrStarted = errors.New("reconcile: runner already started")
)

// RunOptions modify one run.
type RunOptions struct {
	// DryRun checks every page and reports what it found and would repair,
	// but writes nothing: no run record, no discrepancy, no audit entry,
	// no Repair call. It ignores (and does not disturb) an interrupted run
	// of the job. It still takes the lease, so it never overlaps a run.
	DryRun bool
}

// Report summarizes one RunOnce call.
type Report struct {
	Job     string
	RunID   int64 // 0 for dry runs
	DryRun  bool
	Resumed bool // continued an interrupted run from its checkpoint
	// Counts for this call (a resumed run counts only what it did now).
	Checked  int
	InFlight int
	Found    map[Class]int // InFlight excluded
	Opened   int           // new or reopened discrepancies needing a human
	Repaired int
	Failed   int // Repair calls that returned an error
	Cleared  int // open discrepancies found consistent, resolved
	// WouldRepair and Discrepancies are filled by dry runs only.
	WouldRepair   int
	Discrepancies []Discrepancy
}

// Runner runs reconciliation jobs: scheduled (Schedule + Start) or on
// demand (RunOnce). Safe for concurrent use; runs of one job never overlap
// across processes sharing the Redis (lease), and their state lives in the
// database (see Schema).
type Runner struct {
	db  *gorm.DB
	rdb redis.UniversalClient
	s   settings
	m   *metrics

	mu      sync.Mutex
	sched   []scheduled
	started bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

type scheduled struct {
	job   Job
	every time.Duration
}

// New returns a runner storing its state through db (tables from Schema)
// and taking leases in rdb. It does not touch either until a run.
func New(db *gorm.DB, rdb redis.UniversalClient, opts ...Option) (*Runner, error) {
	s := defaultSettings()
	for _, o := range opts {
		o(&s)
	}
	if db == nil || rdb == nil {
		return nil, fmt.Errorf("%w: nil database or Redis client", ErrInvalidOption)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(s.registerer)
	if err != nil {
		return nil, fmt.Errorf("reconcile: metrics: %w", err)
	}
	return &Runner{db: db, rdb: rdb, s: s, m: m}, nil
}

// Schedule runs job every interval once Start is called. Call it before
// Start.
func (r *Runner) Schedule(job Job, every time.Duration) error {
	if job == nil || every <= 0 {
		return fmt.Errorf("%w: schedule needs a job and a positive interval", ErrInvalidOption)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return ErrStarted
	}
	r.sched = append(r.sched, scheduled{job: job, every: every})
	return nil
}

// Start launches one loop per scheduled job; each calls RunOnce every
// interval (the first after one interval). A run that finds the lease held
// is skipped; errors are logged and the next tick resumes the run. Start
// does not block. ctx's values are kept; its cancellation is ignored (use
// Shutdown).
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return ErrStarted
	}
	r.started = true
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	for _, sc := range r.sched {
		r.wg.Add(1)
		go r.loop(lctx, sc)
	}
	return nil
}

func (r *Runner) loop(ctx context.Context, sc scheduled) {
	defer r.wg.Done()
	t := time.NewTicker(sc.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rep, err := r.RunOnce(ctx, sc.job, RunOptions{})
		switch {
		case errors.Is(err, ErrLeaseHeld):
			r.s.logger.Debug("reconcile: skipped, lease held", "job", sc.job.Name())
		case err != nil && ctx.Err() == nil:
			r.s.logger.Error("reconcile: run failed", "job", sc.job.Name(), "err", err)
		case err == nil:
			r.s.logger.Info("reconcile: run done", "job", rep.Job, "run", rep.RunID, "checked", rep.Checked,
				"found", rep.Found, "repaired", rep.Repaired, "opened", rep.Opened, "cleared", rep.Cleared)
		}
	}
}

// Shutdown stops the scheduled loops: a run in progress sees its context
// cancelled, stops at its next step and stays resumable. It waits for the
// loops until ctx is done. Safe to call more than once.
func (r *Runner) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	cancel := r.cancel
	r.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("reconcile: shutdown: %w", ctx.Err())
	}
}

// RunOnce runs job now: it takes the job's lease (ErrLeaseHeld if another
// runner has it), resumes the job's interrupted run or starts a new one,
// first finishes repairs an interrupted run left pending, then checks page
// after page. Each page is a checkpoint: the lease is renewed (ErrLeaseLost
// stops the run, which stays resumable) and, in one database transaction
// fenced by the run's owner token, the page's discrepancies are upserted
// and the cursor advanced; then the page's whitelisted discrepancies are
// repaired one by one, each recorded before and after its Repair call.
// When the last page is done, stored discrepancies that were open or
// acknowledged but not found again are resolved ("cleared") and the run is
// marked done. RunOnce blocks until then or until ctx is done.
func (r *Runner) RunOnce(ctx context.Context, job Job, ro RunOptions) (*Report, error) {
	if job == nil {
		return nil, fmt.Errorf("%w: nil job", ErrInvalidJob)
	}
	name := job.Name()
	if name == "" || len(name) > 191 {
		return nil, fmt.Errorf("%w: name %q", ErrInvalidJob, name)
	}
	l, err := acquire(ctx, r.rdb, r.s.leasePrefix+name, r.s.leaseTTL)
	if err != nil {
		result := "error"
		if errors.Is(err, ErrLeaseHeld) {
			result = "lease_held"
		}
		r.m.runs.WithLabelValues(name, result).Inc()
		return nil, err
	}
	defer l.release()
	begin := time.Now()
	rep := &Report{Job: name, DryRun: ro.DryRun, Found: map[Class]int{}}
	if ro.DryRun {
		err = r.dryRun(ctx, job, l, rep)
	} else {
		err = r.run(ctx, job, l, rep)
	}
	r.m.duration.WithLabelValues(name).Observe(time.Since(begin).Seconds())
	result := "done"
	switch {
	case errors.Is(err, ErrLeaseLost):
		result = "lease_lost"
	case err != nil:
		result = "error"
	case ro.DryRun:
		result = "dry_run"
	}
	r.m.runs.WithLabelValues(name, result).Inc()
	if err != nil {
		return rep, err
	}
	return rep, nil
}

func (r *Runner) dryRun(ctx context.Context, job Job, l *lease, rep *Report) error {
	asOf := time.Now().UTC()
	cursor := ""
	for {
		page, err := r.check(ctx, job, cursor, asOf)
		if err != nil {
			return err
		}
		if err := l.renew(ctx); err != nil {
			return err
		}
		rep.Checked += page.Checked
		for _, d := range page.Discrepancies {
			r.m.discrepancies.WithLabelValues(rep.Job, string(d.Class)).Inc()
			if d.Class == InFlight {
				rep.InFlight++
				continue
			}
			rep.Found[d.Class]++
			rep.Discrepancies = append(rep.Discrepancies, d)
			if r.repairable(d) {
				rep.WouldRepair++
			}
		}
		if page.Next == "" {
			return nil
		}
		cursor = page.Next
	}
}

// check calls the job and validates its page.
func (r *Runner) check(ctx context.Context, job Job, cursor string, asOf time.Time) (Page, error) {
	page, err := job.Check(ctx, Scan{Cursor: cursor, Limit: r.s.pageSize, AsOf: asOf})
	if err != nil {
		return page, fmt.Errorf("reconcile: %s: check at cursor %q: %w", job.Name(), cursor, err)
	}
	if page.Next != "" && page.Next == cursor {
		return page, fmt.Errorf("%w: %s: cursor %q did not advance", ErrInvalidJob, job.Name(), cursor)
	}
	for _, d := range page.Discrepancies {
		if d.Key == "" || len(d.Key) > 191 || d.Class == "" || len(d.Class) > 32 || len(d.Action) > 64 {
			return page, fmt.Errorf("%w: %s: discrepancy key %q class %q action %q", ErrInvalidJob, job.Name(), d.Key, d.Class, d.Action)
		}
	}
	return page, nil
}

func (r *Runner) repairable(d Discrepancy) bool {
	return d.Action != "" && d.Class != InFlight && r.s.repairable[d.Class]
}

func (r *Runner) run(ctx context.Context, job Job, l *lease, rep *Report) error {
	name := job.Name()
	run, resumed, err := r.openRun(ctx, name, l.token)
	if err != nil {
		return err
	}
	rep.RunID, rep.Resumed = run.id, resumed
	if resumed {
		r.s.logger.Info("reconcile: resuming run", "job", name, "run", run.id, "cursor", run.cursor)
	}
	// Repairs an interrupted run recorded but did not finish come first.
	if err := r.repairPending(ctx, job, run, l, rep); err != nil {
		return r.interrupted(run, err)
	}
	for !run.scanned {
		page, err := r.check(ctx, job, run.cursor, run.asOf)
		if err != nil {
			return r.interrupted(run, err)
		}
		if err := l.renew(ctx); err != nil {
			return err
		}
		if err := r.commitPage(ctx, run, page, rep); err != nil {
			return r.interrupted(run, err)
		}
		if err := r.repairPending(ctx, job, run, l, rep); err != nil {
			return r.interrupted(run, err)
		}
	}
	if err := l.renew(ctx); err != nil {
		return err
	}
	return r.finish(ctx, run, rep)
}

// interrupted records err on the run (best effort, fenced) and returns it.
// The run stays resumable.
func (r *Runner) interrupted(run *runState, err error) error {
	if errors.Is(err, ErrLeaseLost) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.db.WithContext(ctx).Exec("UPDATE reconcile_runs SET last_error = ?, updated_at = ? WHERE id = ? AND owner = ?",
		truncate(err.Error(), 4000), time.Now().UTC(), run.id, run.owner)
	return err
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
