package reconcile

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Status is a stored discrepancy's lifecycle state.
//
//	            detected
//	   not repairable | repairable (whitelisted class, Action set)
//	        v         v
//	      open      pending --Repair starts--> repairing --ok--> repaired
//	     /    \        ^                         | error (< max attempts)
//	ack /      \       +-------------------------+
//	   v        \                                | error (max attempts)
//	acknowledged -+--> resolved <-- Resolve      v
//	                     ^                      open
//	   not found again   |
//	   by a full run ----+  (open, acknowledged)
//
// A repaired discrepancy found again by the next complete run is reopened
// (open, never repaired twice); found again after a complete run saw it
// consistent, or resolved and found again, it is a new occurrence with a
// new idempotency key.
type Status string

// Statuses.
const (
	StatusOpen         Status = "open"
	StatusAcknowledged Status = "acknowledged"
	StatusPending      Status = "pending"
	StatusRepairing    Status = "repairing"
	StatusRepaired     Status = "repaired"
	StatusResolved     Status = "resolved"
)

// Record is a stored discrepancy.
type Record struct {
	ID             int64
	Job            string
	Key            string
	Class          Class
	Status         Status
	Action         string
	Evidence       json.RawMessage
	Occurrence     int
	IdempotencyKey string
	Attempts       int
	FirstRunID     int64
	LastRunID      int64
	Note           string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Run status values in reconcile_runs.
const (
	runRunning = "running"
	runDone    = "done"
)

type runState struct {
	id      int64
	owner   string
	asOf    time.Time
	cursor  string
	scanned bool
}

// IdempotencyKey is the key Repair receives: stable for one occurrence of
// one discrepancy, whatever the number of attempts or resumes.
func IdempotencyKey(job, key string, occurrence int) string {
	return fmt.Sprintf("reconcile:%s:%s:%d", job, key, occurrence)
}

// openRun takes over the job's interrupted run (setting its owner to our
// lease token, which fences out the previous owner's late writes) or
// creates a new one.
func (r *Runner) openRun(ctx context.Context, job, token string) (*runState, bool, error) {
	run := &runState{owner: token}
	resumed := false
	now := time.Now().UTC()
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var asOf time.Time
		var scanned bool
		row := tx.Raw("SELECT id, as_of, next_cursor, scanned FROM reconcile_runs WHERE job = ? AND status = ? ORDER BY id DESC LIMIT 1 FOR UPDATE",
			job, runRunning).Row()
		switch err := row.Scan(&run.id, &asOf, &run.cursor, &scanned); {
		case err == nil:
			run.asOf, run.scanned, resumed = asOf.UTC(), scanned, true
			if err := tx.Exec("UPDATE reconcile_runs SET owner = ?, resumes = resumes + 1, updated_at = ? WHERE id = ?", token, now, run.id).Error; err != nil {
				return err
			}
			return audit(tx, job, run.id, 0, "run_resumed", "runner", map[string]any{"cursor": run.cursor})
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		run.asOf = now.Truncate(time.Microsecond)
		res := tx.Exec("INSERT INTO reconcile_runs (job, status, owner, as_of, next_cursor, started_at, updated_at) VALUES (?, ?, ?, ?, '', ?, ?)",
			job, runRunning, token, run.asOf, now, now)
		if res.Error != nil {
			return res.Error
		}
		if err := tx.Raw("SELECT LAST_INSERT_ID()").Row().Scan(&run.id); err != nil {
			return err
		}
		return audit(tx, job, run.id, 0, "run_started", "runner", nil)
	})
	if err != nil {
		return nil, false, fmt.Errorf("reconcile: open run of %s: %w", job, err)
	}
	return run, resumed, nil
}

// fence locks the run row and checks that we still own it: a runner whose
// lease expired and whose run was taken over must not write.
func fence(tx *gorm.DB, run *runState) error {
	var owner string
	if err := tx.Raw("SELECT owner FROM reconcile_runs WHERE id = ? FOR UPDATE", run.id).Row().Scan(&owner); err != nil {
		return err
	}
	if owner != run.owner {
		return fmt.Errorf("%w: run %d taken over by another runner", ErrLeaseLost, run.id)
	}
	return nil
}

func audit(tx *gorm.DB, job string, runID, discID int64, event, actor string, detail any) error {
	var d any
	if detail != nil {
		b, err := json.Marshal(detail)
		if err != nil {
			return err
		}
		d = string(b)
	}
	var rid, did any
	if runID != 0 {
		rid = runID
	}
	if discID != 0 {
		did = discID
	}
	return tx.Exec("INSERT INTO reconcile_audit (job, run_id, discrepancy_id, event, actor, detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
		job, rid, did, event, actor, d, time.Now().UTC()).Error
}

// commitPage is the checkpoint: the page's discrepancies and the new
// cursor, atomically.
func (r *Runner) commitPage(ctx context.Context, run *runState, page Page, rep *Report) error {
	job := rep.Job
	var found, inFlight, opened int
	byClass := map[Class]int{}
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		found, inFlight, opened = 0, 0, 0
		clear(byClass)
		if err := fence(tx, run); err != nil {
			return err
		}
		for _, d := range page.Discrepancies {
			if d.Class == InFlight {
				inFlight++
				continue
			}
			found++
			byClass[d.Class]++
			o, err := r.upsert(tx, job, run.id, d)
			if err != nil {
				return err
			}
			if o {
				opened++
			}
		}
		return tx.Exec(`UPDATE reconcile_runs SET next_cursor = ?, scanned = ?, pages = pages + 1, checked = checked + ?,
			found = found + ?, in_flight = in_flight + ?, updated_at = ? WHERE id = ?`,
			page.Next, page.Next == "", page.Checked, found, inFlight, time.Now().UTC(), run.id).Error
	})
	if err != nil {
		if errors.Is(err, ErrLeaseLost) {
			return err
		}
		return fmt.Errorf("reconcile: %s: checkpoint: %w", job, err)
	}
	run.cursor, run.scanned = page.Next, page.Next == ""
	rep.Checked += page.Checked
	rep.InFlight += inFlight
	rep.Opened += opened
	for c, n := range byClass {
		rep.Found[c] += n
		r.m.discrepancies.WithLabelValues(job, string(c)).Add(float64(n))
	}
	if inFlight > 0 {
		r.m.discrepancies.WithLabelValues(job, string(InFlight)).Add(float64(inFlight))
	}
	return nil
}

// upsert stores d; it reports whether d is (again) open for a human.
func (r *Runner) upsert(tx *gorm.DB, job string, runID int64, d Discrepancy) (bool, error) {
	ev, err := json.Marshal(d.Evidence)
	if err != nil {
		return false, fmt.Errorf("%w: evidence of %s: %w", ErrInvalidJob, d.Key, err)
	}
	now := time.Now().UTC()
	initial := StatusOpen
	if r.repairable(d) {
		initial = StatusPending
	}
	var (
		id         int64
		status     Status
		occurrence int
		lastRun    int64
	)
	err = tx.Raw("SELECT id, status, occurrence, last_run_id FROM reconcile_discrepancies WHERE job = ? AND dkey = ? FOR UPDATE", job, d.Key).
		Row().Scan(&id, &status, &occurrence, &lastRun)
	if errors.Is(err, sql.ErrNoRows) {
		res := tx.Exec(`INSERT INTO reconcile_discrepancies (job, dkey, class, status, action, evidence, occurrence, idempotency_key,
			first_run_id, last_run_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)`,
			job, d.Key, d.Class, initial, d.Action, string(ev), IdempotencyKey(job, d.Key, 1), runID, runID, now, now)
		if res.Error != nil {
			return false, res.Error
		}
		if err := tx.Raw("SELECT LAST_INSERT_ID()").Row().Scan(&id); err != nil {
			return false, err
		}
		return initial == StatusOpen, audit(tx, job, runID, id, "detected", "runner",
			map[string]any{"class": d.Class, "action": d.Action, "status": initial})
	}
	if err != nil {
		return false, err
	}
	next, note, event := status, "", ""
	fresh := false // a new occurrence: repaired under a new key, attempts from zero
	switch status {
	case StatusOpen:
		if initial == StatusPending {
			next, event = StatusPending, "repair_scheduled"
		}
	case StatusRepaired:
		held, err := heldSince(tx, job, lastRun, runID)
		if err != nil {
			return false, err
		}
		if held {
			// A finished run found the key consistent after its repair: the
			// repair converged and this is a new breakage of the same key.
			occurrence++
			fresh, next, event = true, initial, "recurred"
			break
		}
		// The repair did not converge: never repair twice, escalate.
		next, note, event = StatusOpen, "still inconsistent after repair", "reopened"
	case StatusResolved:
		occurrence++
		fresh, next, event = true, initial, "reopened"
	}
	res := tx.Exec(`UPDATE reconcile_discrepancies SET attempts = IF(?, 0, attempts), class = ?, action = ?, evidence = ?,
		status = ?, occurrence = ?, idempotency_key = ?, note = IF(? = '', note, ?), last_run_id = ?, updated_at = ? WHERE id = ?`,
		fresh, d.Class, d.Action, string(ev), next, occurrence, IdempotencyKey(job, d.Key, occurrence), note, note, runID, now, id)
	if res.Error != nil {
		return false, res.Error
	}
	if event != "" {
		if err := audit(tx, job, runID, id, event, "runner", map[string]any{"class": d.Class, "from": status, "to": next, "occurrence": occurrence}); err != nil {
			return false, err
		}
	}
	return next == StatusOpen && status != StatusOpen && status != StatusAcknowledged, nil
}

// heldSince reports whether a run of job finished after run lastRun and
// before run runID: that run did not find the key (its last_run_id would
// have moved), so whatever was last done to the key held there. Dry runs
// leave no run row and prove nothing.
func heldSince(tx *gorm.DB, job string, lastRun, runID int64) (bool, error) {
	var n int64
	err := tx.Raw("SELECT COUNT(*) FROM reconcile_runs WHERE job = ? AND status = ? AND id > ? AND id < ?",
		job, runDone, lastRun, runID).Row().Scan(&n)
	return n > 0, err
}

type pendingRepair struct {
	id       int64
	d        Discrepancy
	key      string
	attempts int
}

// repairPending repairs the job's pending discrepancies, oldest first.
// Each repair is recorded as started (status repairing, attempts+1) before
// Repair is called and as done after, each in a fenced transaction; a
// crash in between leaves it repairing, and the next run calls Repair
// again with the same idempotency key.
func (r *Runner) repairPending(ctx context.Context, job Job, run *runState, l *lease, rep *Report) error {
	name := job.Name()
	rows, err := r.db.WithContext(ctx).Raw(`SELECT id, dkey, class, action, evidence, idempotency_key, attempts FROM reconcile_discrepancies
		WHERE job = ? AND status IN (?, ?) ORDER BY id`, name, StatusPending, StatusRepairing).Rows()
	if err != nil {
		return fmt.Errorf("reconcile: %s: pending repairs: %w", name, err)
	}
	var todo []pendingRepair
	for rows.Next() {
		var p pendingRepair
		var ev string
		var class string
		if err := rows.Scan(&p.id, &p.d.Key, &class, &p.d.Action, &ev, &p.key, &p.attempts); err != nil {
			rows.Close()
			return err
		}
		p.d.Class = Class(class)
		if err := json.Unmarshal([]byte(ev), &p.d.Evidence); err != nil {
			p.d.Evidence = map[string]any{"raw": ev}
		}
		todo = append(todo, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, p := range todo {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := l.renew(ctx); err != nil {
			return err
		}
		err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := fence(tx, run); err != nil {
				return err
			}
			if err := tx.Exec("UPDATE reconcile_discrepancies SET status = ?, attempts = attempts + 1, updated_at = ? WHERE id = ?",
				StatusRepairing, time.Now().UTC(), p.id).Error; err != nil {
				return err
			}
			return audit(tx, name, run.id, p.id, "repair_started", "runner",
				map[string]any{"action": p.d.Action, "idempotency_key": p.key, "attempt": p.attempts + 1})
		})
		if err != nil {
			return err
		}
		rerr := job.Repair(ctx, p.d, p.key)
		if rerr != nil && ctx.Err() != nil {
			return rerr // stays repairing; resumed later with the same key
		}
		next, event, result := StatusRepaired, "repaired", "ok"
		var note any
		if rerr != nil {
			next, event, result, note = StatusPending, "repair_error", "error", truncate(rerr.Error(), 4000)
			if p.attempts+1 >= r.s.maxAttempts {
				next, event, result = StatusOpen, "repair_failed", "gave_up"
			}
		}
		err = r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := fence(tx, run); err != nil {
				return err
			}
			if err := tx.Exec("UPDATE reconcile_discrepancies SET status = ?, note = ?, updated_at = ? WHERE id = ?",
				next, note, time.Now().UTC(), p.id).Error; err != nil {
				return err
			}
			if rerr == nil {
				if err := tx.Exec("UPDATE reconcile_runs SET repaired = repaired + 1 WHERE id = ?", run.id).Error; err != nil {
					return err
				}
			}
			return audit(tx, name, run.id, p.id, event, "runner", map[string]any{"idempotency_key": p.key, "error": note})
		})
		if err != nil {
			return err
		}
		r.m.repairs.WithLabelValues(name, result).Inc()
		if rerr == nil {
			rep.Repaired++
		} else {
			rep.Failed++
			r.s.logger.Warn("reconcile: repair failed", "job", name, "key", p.d.Key, "attempt", p.attempts+1, "err", rerr)
			if next == StatusOpen {
				rep.Opened++
			}
		}
	}
	return nil
}

// finish resolves open and acknowledged discrepancies this (complete) run
// did not find again, and marks the run done.
func (r *Runner) finish(ctx context.Context, run *runState, rep *Report) error {
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := fence(tx, run); err != nil {
			return err
		}
		rows, err := tx.Raw("SELECT id FROM reconcile_discrepancies WHERE job = ? AND status IN (?, ?) AND last_run_id < ? FOR UPDATE",
			rep.Job, StatusOpen, StatusAcknowledged, run.id).Rows()
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		note := fmt.Sprintf("consistent in run %d", run.id)
		for _, id := range ids {
			if err := tx.Exec("UPDATE reconcile_discrepancies SET status = ?, note = ?, updated_at = ? WHERE id = ?",
				StatusResolved, note, time.Now().UTC(), id).Error; err != nil {
				return err
			}
			if err := audit(tx, rep.Job, run.id, id, "cleared", "runner", nil); err != nil {
				return err
			}
		}
		rep.Cleared = len(ids)
		now := time.Now().UTC()
		if err := tx.Exec("UPDATE reconcile_runs SET status = ?, last_error = NULL, finished_at = ?, updated_at = ? WHERE id = ?",
			runDone, now, now, run.id).Error; err != nil {
			return err
		}
		return audit(tx, rep.Job, run.id, 0, "run_done", "runner", nil)
	})
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		err = fmt.Errorf("reconcile: %s: finish run: %w", rep.Job, err)
	}
	return err
}

// Acknowledge marks an open discrepancy as seen by a human (it stays
// unresolved). Recorded in the audit log.
func (r *Runner) Acknowledge(ctx context.Context, id int64) error {
	return r.transition(ctx, id, "acknowledged", "", StatusAcknowledged, StatusOpen)
}

// Resolve closes an open, acknowledged or repaired discrepancy with a note
// (the corrective action taken, or why it is accepted). Recorded in the
// audit log. Discrepancies being repaired by the runner cannot be resolved.
func (r *Runner) Resolve(ctx context.Context, id int64, note string) error {
	return r.transition(ctx, id, "resolved", note, StatusResolved, StatusOpen, StatusAcknowledged, StatusRepaired)
}

func (r *Runner) transition(ctx context.Context, id int64, event, note string, to Status, from ...Status) error {
	return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var job string
		var status Status
		err := tx.Raw("SELECT job, status FROM reconcile_discrepancies WHERE id = ? FOR UPDATE", id).Row().Scan(&job, &status)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: discrepancy %d", ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		ok := false
		for _, f := range from {
			ok = ok || status == f
		}
		if !ok {
			return fmt.Errorf("%w: discrepancy %d is %s, cannot become %s", ErrInvalidState, id, status, to)
		}
		var n any
		if note != "" {
			n = note
		}
		if err := tx.Exec("UPDATE reconcile_discrepancies SET status = ?, note = COALESCE(?, note), updated_at = ? WHERE id = ?",
			to, n, time.Now().UTC(), id).Error; err != nil {
			return err
		}
		return audit(tx, job, 0, id, event, "operator", map[string]any{"from": status, "note": note})
	})
}

// Discrepancies lists the job's stored discrepancies with the given
// statuses (all when none), oldest first.
func (r *Runner) Discrepancies(ctx context.Context, job string, statuses ...Status) ([]Record, error) {
	q := `SELECT id, job, dkey, class, status, action, evidence, occurrence, idempotency_key, attempts, first_run_id, last_run_id,
		note, created_at, updated_at FROM reconcile_discrepancies WHERE job = ?`
	args := []any{job}
	if len(statuses) > 0 {
		q += " AND status IN (?" + strings.Repeat(", ?", len(statuses)-1) + ")"
		for _, s := range statuses {
			args = append(args, s)
		}
	}
	return r.records(ctx, q+" ORDER BY id", args...)
}

// Involving returns, for a business key such as an order id, up to limit
// stored discrepancies (newest first) whose key or evidence contains it,
// and the ids of the runs that found them or acted on them (from
// reconcile_audit), newest first. It matches by substring, so keys that
// embed the id ("payment:…", evidence naming the order) are found; give
// an id long enough not to be a substring of unrelated ones (a UUID).
// An empty s matches nothing.
func (r *Runner) Involving(ctx context.Context, s string, limit int) ([]Record, []int64, error) {
	if s == "" || limit <= 0 {
		return []Record{}, []int64{}, nil
	}
	like := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(s) + "%"
	recs, err := r.records(ctx, `SELECT id, job, dkey, class, status, action, evidence, occurrence, idempotency_key, attempts,
		first_run_id, last_run_id, note, created_at, updated_at FROM reconcile_discrepancies
		WHERE dkey = ? OR dkey LIKE ? OR evidence LIKE ? ORDER BY id DESC LIMIT ?`, s, like, like, limit)
	if err != nil {
		return nil, nil, err
	}
	if recs == nil {
		recs = []Record{}
	}
	seen := map[int64]bool{}
	ids := []int64{}
	add := func(id int64) {
		if id > 0 && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	discs := make([]int64, 0, len(recs))
	for _, rec := range recs {
		add(rec.FirstRunID)
		add(rec.LastRunID)
		discs = append(discs, rec.ID)
	}
	if len(discs) > 0 {
		var audited []int64
		if err := r.db.WithContext(ctx).Raw(`SELECT DISTINCT run_id FROM reconcile_audit
			WHERE run_id IS NOT NULL AND discrepancy_id IN ?`, discs).Scan(&audited).Error; err != nil {
			return nil, nil, fmt.Errorf("reconcile: audit of %s: %w", s, err)
		}
		for _, id := range audited {
			add(id)
		}
	}
	slices.SortFunc(ids, func(a, b int64) int { return cmp.Compare(b, a) })
	return recs, ids, nil
}

// records runs a SELECT of reconcile_discrepancies' columns (in Record's
// order) and scans its rows.
func (r *Runner) records(ctx context.Context, q string, args ...any) ([]Record, error) {
	rows, err := r.db.WithContext(ctx).Raw(q, args...).Rows()
	if err != nil {
		return nil, fmt.Errorf("reconcile: list: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var rec Record
		var ev string
		var note sql.NullString
		if err := rows.Scan(&rec.ID, &rec.Job, &rec.Key, &rec.Class, &rec.Status, &rec.Action, &ev, &rec.Occurrence,
			&rec.IdempotencyKey, &rec.Attempts, &rec.FirstRunID, &rec.LastRunID, &note, &rec.CreatedAt, &rec.UpdatedAt); err != nil {
			return nil, err
		}
		rec.Evidence, rec.Note = json.RawMessage(ev), note.String
		out = append(out, rec)
	}
	return out, rows.Err()
}
