// Package rechttp is the services' HTTP front end of reconciliation
// (services/kit/reconcile): one contract and one JSON shape for every
// service that runs jobs.
//
//	POST /v1/reconcile/{job}   body {"dry_run":bool} or none
//	  200 RunReport; 404 UNKNOWN_JOB; 409 RUN_IN_PROGRESS (another run
//	  of the job holds the lease); 503 UNAVAILABLE (the cause is logged)
//	GET  /v1/reconcile/runs?job=&order_id=&limit=
//	  200 {"runs":[RunRecord...],"audit":[AuditEntry...]}, newest first;
//	  limit 1-500 (default 50), order_id at most 64 bytes
//	another method on those paths: 405 METHOD_NOT_ALLOWED; other paths 404
//
// Bodies, errors and input limits follow services/kit/api.
package rechttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	nethttp "net/http"
	"sort"
	"strings"
	"time"

	kerrors "github.com/go-kratos/kratos/v2/errors"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/api/apierr"
	"github.com/tidemq/tide/services/kit/reconcile"
)

// RunTimeout bounds one run started through the API.
const RunTimeout = 2 * time.Minute

// ErrUnknownJob: no job of that name.
var ErrUnknownJob = errors.New("rechttp: unknown reconciliation job")

// Finding is one discrepancy of a run report.
type Finding struct {
	Class    string `json:"class"`
	Key      string `json:"key"`
	Evidence any    `json:"evidence"`
	Repair   string `json:"repair"`
	Status   string `json:"status,omitempty"`
}

// RunReport is the answer of POST /v1/reconcile/{job}: the counts of the
// run and, for a dry run, what it found and would repair; for a run that
// wrote, the stored discrepancies it found with their status.
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

// Jobs runs a service's reconciliation jobs on one Runner, on demand.
// Safe for concurrent use.
type Jobs struct {
	runner *reconcile.Runner
	jobs   map[string]reconcile.Job
	log    *slog.Logger
}

// New returns the front end of jobs on runner; l logs every run.
func New(runner *reconcile.Runner, l *slog.Logger, jobs ...reconcile.Job) *Jobs {
	j := &Jobs{runner: runner, jobs: map[string]reconcile.Job{}, log: l}
	for _, job := range jobs {
		j.jobs[job.Name()] = job
	}
	return j
}

// Names lists the jobs, sorted.
func (j *Jobs) Names() []string {
	out := make([]string, 0, len(j.jobs))
	for n := range j.jobs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Job returns the job of that name.
func (j *Jobs) Job(name string) (reconcile.Job, bool) {
	job, ok := j.jobs[name]
	return job, ok
}

// Server schedules every job each `every` on the runner (0: on demand
// only) and returns the Kratos server that runs the schedule: Start
// starts it, Stop stops scheduled runs (an interrupted run resumes next
// time). Call it once.
func (j *Jobs) Server(name string, every time.Duration) (*kratosmq.Task, error) {
	if every > 0 {
		for _, n := range j.Names() {
			if err := j.runner.Schedule(j.jobs[n], every); err != nil {
				return nil, err
			}
		}
	}
	return kratosmq.Runner(name, j.runner.Start, j.runner.Shutdown), nil
}

// Schedule is what a service's configuration says about its
// reconciliation: how often the jobs run (0 or unset: on demand only,
// through the HTTP front end). Each service's generated conf.Reconcile
// satisfies it (a nil one too: its getter answers nil).
type Schedule interface {
	GetInterval() *durationpb.Duration
}

// Reconciler runs a service's reconciliation jobs on their schedule, as
// a Kratos server. One run of a job at a time across instances (the
// runner's Redis lease); every run, discrepancy and repair is in the
// audit tables.
type Reconciler struct{ *kratosmq.Task }

// NewReconciler schedules jobs every c's interval (Jobs.Server, named
// "reconcile"), a wire provider; call it once per Jobs.
func NewReconciler(c Schedule, jobs *Jobs) (*Reconciler, error) {
	t, err := jobs.Server("reconcile", c.GetInterval().AsDuration())
	return &Reconciler{t}, err
}

// Runner returns the runner the jobs run on.
func (j *Jobs) Runner() *reconcile.Runner { return j.runner }

// Run runs job once now (blocking) and reports it. ErrUnknownJob: no
// such job; reconcile.ErrLeaseHeld: another run of it is in progress.
func (j *Jobs) Run(ctx context.Context, name string, dryRun bool) (*RunReport, error) {
	job, ok := j.jobs[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q (jobs: %v)", ErrUnknownJob, name, j.Names())
	}
	rep, err := j.runner.RunOnce(ctx, job, reconcile.RunOptions{DryRun: dryRun})
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
		if d.Class != reconcile.InFlight {
			out.Discrepancies = append(out.Discrepancies, Finding{Class: string(d.Class), Key: d.Key, Evidence: d.Evidence, Repair: d.Action})
		}
	}
	if !dryRun && rep.RunID != 0 {
		recs, err := j.runner.OfRun(ctx, name, rep.RunID)
		if err != nil {
			return nil, fmt.Errorf("rechttp: discrepancies of run %d: %w", rep.RunID, err)
		}
		for _, r := range recs {
			out.Discrepancies = append(out.Discrepancies, Finding{Class: string(r.Class), Key: r.Key,
				Evidence: evidence(r.Evidence), Repair: r.Action, Status: string(r.Status)})
		}
	}
	j.log.InfoContext(ctx, "reconciliation run", "job", name, "run_id", out.RunID, "dry_run", dryRun,
		"found", out.Found, "repaired", out.Repaired)
	return out, nil
}

// evidence returns stored evidence as JSON when it is, else as a string.
func evidence(raw json.RawMessage) any {
	if json.Valid(raw) {
		return raw
	}
	return string(raw)
}

// Handler serves the routes of the package doc; mount it at
// "/v1/reconcile/" (a prefix). Errors take in's shape and are logged by it.
func (j *Jobs) Handler(in *api.Input) nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		name := strings.Trim(strings.TrimPrefix(r.URL.Path, "/v1/reconcile"), "/")
		switch {
		case r.Method == nethttp.MethodGet && name == "runs":
			j.serveRuns(w, r, in)
		case r.Method == nethttp.MethodPost && name != "" && name != "runs" && !strings.Contains(name, "/"):
			j.serveRun(w, r, in, name)
		case name == "runs" || j.jobs[name] != nil:
			in.EncodeError(w, r, kerrors.New(nethttp.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED",
				"use POST /v1/reconcile/{job} or GET /v1/reconcile/runs"))
		default:
			in.EncodeError(w, r, kerrors.NotFound("NOT_FOUND", "POST /v1/reconcile/{job} or GET /v1/reconcile/runs?job=&order_id=&limit="))
		}
	})
}

func (j *Jobs) serveRuns(w nethttp.ResponseWriter, r *nethttp.Request, in *api.Input) {
	limit, err := api.QueryInt(r, "limit", 1, 500, 50)
	if err != nil {
		in.EncodeError(w, r, err)
		return
	}
	key := r.URL.Query().Get("order_id")
	if len(key) > 64 {
		in.EncodeError(w, r, api.Invalid("order_id", "at most 64 bytes"))
		return
	}
	runs, audit, err := j.runner.History(r.Context(), reconcile.HistoryQuery{Job: r.URL.Query().Get("job"), Key: key, Limit: int(limit)})
	if err != nil {
		in.EncodeError(w, r, apierr.Unavailable("the runs could not be read; it was logged").WithCause(err))
		return
	}
	api.WriteJSON(w, nethttp.StatusOK, map[string]any{"runs": runs, "audit": audit})
}

func (j *Jobs) serveRun(w nethttp.ResponseWriter, r *nethttp.Request, in *api.Input, name string) {
	var body struct {
		DryRun bool `json:"dry_run"`
	}
	if err := api.DecodeJSON(r, &body); err != nil {
		in.EncodeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), RunTimeout)
	defer cancel()
	rep, err := j.Run(ctx, name, body.DryRun)
	switch {
	case errors.Is(err, ErrUnknownJob):
		in.EncodeError(w, r, kerrors.NotFound("UNKNOWN_JOB", err.Error()))
	case errors.Is(err, reconcile.ErrLeaseHeld):
		in.EncodeError(w, r, kerrors.Conflict("RUN_IN_PROGRESS", "another run of the job is in progress"))
	case err != nil:
		in.EncodeError(w, r, apierr.Unavailable("reconciliation could not run; it was logged").WithCause(err))
	default:
		api.WriteJSON(w, nethttp.StatusOK, rep)
	}
}
