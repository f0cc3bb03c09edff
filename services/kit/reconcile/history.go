package reconcile

import (
	"context"
	"fmt"
	"time"
)

// RunRecord is one row of reconcile_runs, the record of a run that wrote
// (dry runs are not recorded). ID and RunID are the same number: the
// services' first clients read "id" (inventory) or "run_id" (payment), so
// the one shape carries both.
type RunRecord struct {
	ID         int64      `json:"id"`
	RunID      int64      `json:"run_id"`
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

// HistoryQuery selects runs and audit entries. Empty Job means every job;
// a non-empty Key keeps only the runs and entries of discrepancies that
// involve it (Involving). Limit caps each list.
type HistoryQuery struct {
	Job   string
	Key   string
	Limit int
}

// History returns the latest runs and audit entries that q selects,
// newest first; both lists are empty (never nil) when nothing matches,
// and both are empty for a Key no job ever flagged.
func (r *Runner) History(ctx context.Context, q HistoryQuery) ([]RunRecord, []AuditEntry, error) {
	runs, audit := []RunRecord{}, []AuditEntry{}
	var runIDs, discIDs []int64
	if q.Key != "" {
		recs, ids, err := r.Involving(ctx, q.Key, q.Limit)
		if err != nil {
			return nil, nil, fmt.Errorf("reconcile: runs of %s: %w", q.Key, err)
		}
		if len(ids) == 0 {
			return runs, audit, nil
		}
		runIDs = ids
		for _, rec := range recs {
			discIDs = append(discIDs, rec.ID)
		}
	}
	db := r.db.WithContext(ctx)
	rq := db.Table("reconcile_runs").Select("id, id AS run_id, job, status, checked, found, in_flight, repaired, resumes, last_error, started_at, finished_at").
		Order("id DESC").Limit(q.Limit)
	if q.Job != "" {
		rq = rq.Where("job = ?", q.Job)
	}
	if runIDs != nil {
		rq = rq.Where("id IN ?", runIDs)
	}
	if err := rq.Scan(&runs).Error; err != nil {
		return nil, nil, fmt.Errorf("reconcile: runs: %w", err)
	}
	aq := db.Table("reconcile_audit").Select("id, job, run_id, discrepancy_id, event, actor, detail, created_at").
		Order("id DESC").Limit(q.Limit)
	if q.Job != "" {
		aq = aq.Where("job = ?", q.Job)
	}
	if discIDs != nil {
		aq = aq.Where("discrepancy_id IN ?", discIDs)
	}
	if err := aq.Scan(&audit).Error; err != nil {
		return nil, nil, fmt.Errorf("reconcile: audit: %w", err)
	}
	if runs == nil {
		runs = []RunRecord{}
	}
	if audit == nil {
		audit = []AuditEntry{}
	}
	return runs, audit, nil
}

// OfRun lists the job's stored discrepancies that run runID found last,
// oldest first.
func (r *Runner) OfRun(ctx context.Context, job string, runID int64) ([]Record, error) {
	return r.records(ctx, `SELECT id, job, dkey, class, status, action, evidence, occurrence, idempotency_key, attempts,
		first_run_id, last_run_id, note, created_at, updated_at FROM reconcile_discrepancies
		WHERE job = ? AND last_run_id = ? ORDER BY id`, job, runID)
}
