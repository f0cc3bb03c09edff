package reconcile

import (
	"context"
	"time"
)

// Class is the kind of a discrepancy.
type Class string

// Classes. InFlight is not a discrepancy: it marks an item too recent to
// judge (inside the job's grace window); it is counted, never stored and
// never repaired.
const (
	MissingOurs     Class = "missing_ours"     // the provider has it, we do not
	MissingProvider Class = "missing_provider" // we have it, the provider does not
	AmountMismatch  Class = "amount_mismatch"
	StatusMismatch  Class = "status_mismatch"
	Duplicate       Class = "duplicate"
	InFlight        Class = "in_flight"
)

// Discrepancy is one inconsistency a job found.
type Discrepancy struct {
	// Key identifies the compared item within the job (an order or
	// payment reference); at most 191 bytes. It must be the same every
	// time the same item is inconsistent: it is the unique key of the
	// stored discrepancy and the base of the repair's idempotency key.
	Key   string
	Class Class
	// Evidence holds the compared records (both sides, as found), stored
	// as JSON with the discrepancy.
	Evidence map[string]any
	// Action names the idempotent repair the job proposes ("refund",
	// "re-emit-paid"); empty means no automatic repair. The runner calls
	// Job.Repair only if Action is set and Class is whitelisted
	// (WithRepair).
	Action string
}

// Scan is the request for one page.
type Scan struct {
	// Cursor is where the page starts: "" for the first page, then the
	// previous page's Next.
	Cursor string
	// Limit is the page size the runner asks for (WithPageSize).
	Limit int
	// AsOf is the run's reference time, fixed for the whole run, resumes
	// included. Items that changed after AsOf minus the job's grace window
	// are InFlight, not discrepancies.
	AsOf time.Time
}

// Page is the result of checking one page.
type Page struct {
	// Checked is the number of items compared (consistent ones included).
	Checked int
	// Discrepancies found in this page, InFlight items included.
	Discrepancies []Discrepancy
	// Next is the cursor of the following page; "" when this was the last.
	Next string
}

// Job is a user-supplied reconciliation: it pages through the items to
// check, compares independent sources of the same facts and classifies
// what disagrees. Check must only read. Repair must be idempotent: called
// twice with the same idempotencyKey it changes things once (store the key
// in the same database transaction as the effect, or send the compensating
// message with it as the message key and consume it with an idempotent
// consumer). The runner calls Repair again with the same key after a crash
// or a failed attempt, so "at least once" calls become one effect.
type Job interface {
	// Name identifies the job: lease, runs and discrepancies are per
	// name. At most 191 bytes.
	Name() string
	Check(ctx context.Context, s Scan) (Page, error)
	Repair(ctx context.Context, d Discrepancy, idempotencyKey string) error
}
