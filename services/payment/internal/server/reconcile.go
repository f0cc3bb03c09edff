package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/services/kit/reconcile"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/data"
)

// Reconciler hosts the payment service's reconciliation jobs ("payments",
// "broker") on a services/kit/reconcile.Runner: scheduled every
// reconcile.interval (0 = on demand only) and run on demand through HTTP.
// One run of a job at a time across instances (Redis lease); dry runs
// write nothing; every run, discrepancy and repair is in the audit tables.
// It is a Kratos transport.Server (Start/Stop).
type Reconciler struct {
	r     *reconcile.Runner
	d     *data.Data
	jobs  map[string]reconcile.Job
	every time.Duration
	log   *slog.Logger
}

// ErrUnknownJob: no job with that name.
var ErrUnknownJob = errors.New("server: unknown reconciliation job")

// NewReconciler builds the runner and the jobs. With reconcile.repair
// false discrepancies are only reported.
func NewReconciler(c *conf.Reconcile, m *conf.Messaging, d *data.Data, uc *biz.PaymentUsecase, ledger biz.Ledger,
	gw *data.Gateway, orders biz.OrderReader, reg prometheus.Registerer, l *slog.Logger) (*Reconciler, error) {
	var opts []reconcile.Option
	if c.GetRepair() {
		opts = append(opts, reconcile.WithRepair(reconcile.StatusMismatch, reconcile.MissingOurs, reconcile.Duplicate,
			reconcile.AmountMismatch, biz.OrderMissingClass, biz.UserMismatch))
	}
	opts = append(opts, reconcile.WithLogger(l), reconcile.WithRegisterer(reg), reconcile.WithLeasePrefix("payment:reconcile:"))
	r, err := reconcile.New(d.Gorm(), d.Redis(), opts...)
	if err != nil {
		return nil, err
	}
	jobs := map[string]reconcile.Job{
		biz.JobPayments: &biz.PaymentsJob{UC: uc, Ledger: ledger, Statement: gw, Orders: orders, Grace: c.GetGrace().AsDuration()},
		data.JobBroker:  &data.BrokerJob{NameServers: data.SplitAddrs(m.GetNameServers()), ClientOptions: data.CredentialOptions(m), HalfTimeout: c.GetHalfTimeout().AsDuration()},
	}
	rc := &Reconciler{r: r, d: d, jobs: jobs, every: c.GetInterval().AsDuration(), log: l}
	if rc.every > 0 {
		for _, n := range rc.JobNames() {
			if err := r.Schedule(jobs[n], rc.every); err != nil {
				return nil, err
			}
		}
	}
	return rc, nil
}

// JobNames lists the jobs, sorted.
func (rc *Reconciler) JobNames() []string {
	out := make([]string, 0, len(rc.jobs))
	for n := range rc.jobs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Start starts the schedule (if any).
func (rc *Reconciler) Start(ctx context.Context) error {
	if rc.every <= 0 {
		return nil
	}
	return rc.r.Start(context.WithoutCancel(ctx))
}

// Stop stops scheduled runs; an interrupted run resumes next time.
func (rc *Reconciler) Stop(ctx context.Context) error {
	if rc.every <= 0 {
		return nil
	}
	return rc.r.Shutdown(ctx)
}

// Finding is one discrepancy of a run report.
type Finding struct {
	Class    string `json:"class"`
	Key      string `json:"key"`
	Evidence any    `json:"evidence"`
	Repair   string `json:"repair"`
	Status   string `json:"status,omitempty"`
}

// RunReport is the answer of POST /v1/reconcile/{job}.
type RunReport struct {
	RunID         int64          `json:"run_id"`
	Job           string         `json:"job"`
	DryRun        bool           `json:"dry_run"`
	Resumed       bool           `json:"resumed"`
	Checked       int            `json:"checked"`
	InFlight      int            `json:"in_flight"`
	Found         map[string]int `json:"found"`
	Discrepancies []Finding      `json:"discrepancies"`
	Repaired      int            `json:"repaired"`
	WouldRepair   int            `json:"would_repair"`
	Failed        int            `json:"failed"`
	Cleared       int            `json:"cleared"`
}

// Run runs job once now (blocking). reconcile.ErrLeaseHeld: another run
// of the job is in progress.
func (rc *Reconciler) Run(ctx context.Context, job string, dryRun bool) (*RunReport, error) {
	j, ok := rc.jobs[job]
	if !ok {
		return nil, fmt.Errorf("%w: %q (jobs: %v)", ErrUnknownJob, job, rc.JobNames())
	}
	rep, err := rc.r.RunOnce(ctx, j, reconcile.RunOptions{DryRun: dryRun})
	if err != nil {
		return nil, err
	}
	out := &RunReport{RunID: rep.RunID, Job: rep.Job, DryRun: rep.DryRun, Resumed: rep.Resumed, Checked: rep.Checked,
		InFlight: rep.InFlight, Found: map[string]int{}, Discrepancies: []Finding{}, Repaired: rep.Repaired,
		WouldRepair: rep.WouldRepair, Failed: rep.Failed, Cleared: rep.Cleared}
	for c, n := range rep.Found {
		out.Found[string(c)] = n
	}
	for _, d := range rep.Discrepancies {
		if d.Class == reconcile.InFlight {
			continue
		}
		out.Discrepancies = append(out.Discrepancies, Finding{Class: string(d.Class), Key: d.Key, Evidence: d.Evidence, Repair: d.Action})
	}
	if !dryRun && rep.RunID != 0 {
		var rows []struct {
			Dkey, Class, Action, Status, Evidence string
		}
		if err := rc.d.Gorm().WithContext(ctx).Raw("SELECT dkey, class, action, status, evidence FROM reconcile_discrepancies WHERE job = ? AND last_run_id = ? ORDER BY id",
			job, rep.RunID).Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("server: discrepancies of run %d: %w", rep.RunID, err)
		}
		for _, r := range rows {
			out.Discrepancies = append(out.Discrepancies, Finding{Class: r.Class, Key: r.Dkey, Evidence: rawJSON(r.Evidence), Repair: r.Action, Status: r.Status})
		}
	}
	rc.log.InfoContext(ctx, "reconciliation run", "job", job, "run_id", out.RunID, "dry_run", dryRun, "found", out.Found, "repaired", out.Repaired)
	return out, nil
}

// RunRecord is one row of the audit log of runs.
type RunRecord struct {
	ID         int64      `json:"run_id"`
	Job        string     `json:"job"`
	Status     string     `json:"status"`
	Checked    int64      `json:"checked"`
	Found      int64      `json:"found"`
	InFlight   int64      `json:"in_flight"`
	Repaired   int64      `json:"repaired"`
	Resumes    int        `json:"resumes"`
	LastError  *string    `json:"last_error,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// AuditEntry is one row of reconcile_audit.
type AuditEntry struct {
	ID            int64     `json:"id"`
	Job           string    `json:"job"`
	RunID         *int64    `json:"run_id,omitempty"`
	DiscrepancyID *int64    `json:"discrepancy_id,omitempty"`
	Event         string    `json:"event"`
	Actor         string    `json:"actor"`
	Detail        *string   `json:"detail,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
}

// Runs returns the latest runs (of job, or of all jobs when empty), with
// the latest audit entries. With an orderID, only the runs and audit
// entries of discrepancies that involve that order (reconcile.Involving):
// none for an order the jobs never flagged.
func (rc *Reconciler) Runs(ctx context.Context, job, orderID string, limit int) ([]RunRecord, []AuditEntry, error) {
	db := rc.d.Gorm().WithContext(ctx)
	var runIDs, discIDs []int64
	if orderID != "" {
		recs, ids, err := rc.r.Involving(ctx, orderID, limit)
		if err != nil {
			return nil, nil, fmt.Errorf("server: runs of order %s: %w", orderID, err)
		}
		if len(ids) == 0 {
			return []RunRecord{}, []AuditEntry{}, nil
		}
		runIDs = ids
		for _, rec := range recs {
			discIDs = append(discIDs, rec.ID)
		}
	}
	var runs []RunRecord
	q := db.Table("reconcile_runs").Select("id, job, status, checked, found, in_flight, repaired, resumes, last_error, started_at, finished_at").
		Order("id DESC").Limit(limit)
	if job != "" {
		q = q.Where("job = ?", job)
	}
	if runIDs != nil {
		q = q.Where("id IN ?", runIDs)
	}
	if err := q.Scan(&runs).Error; err != nil {
		return nil, nil, fmt.Errorf("server: runs: %w", err)
	}
	var audit []AuditEntry
	q = db.Table("reconcile_audit").Select("id, job, run_id, discrepancy_id, event, actor, detail, created_at").Order("id DESC").Limit(limit)
	if job != "" {
		q = q.Where("job = ?", job)
	}
	if discIDs != nil {
		q = q.Where("discrepancy_id IN ?", discIDs)
	}
	if err := q.Scan(&audit).Error; err != nil {
		return nil, nil, fmt.Errorf("server: audit: %w", err)
	}
	if runs == nil {
		runs = []RunRecord{}
	}
	if audit == nil {
		audit = []AuditEntry{}
	}
	return runs, audit, nil
}
