// Package reconcile runs reconciliation jobs: scheduled or on-demand
// comparisons of independent records of the same facts (orders vs the
// payment ledger vs the provider's statement), with every discrepancy
// classified, stored with its evidence and either repaired through an
// idempotent action or left open for a human.
//
// # Guarantees
//
//   - One run of a job at a time across all instances: a Redis lease per
//     job (SET NX PX with a random token, renewed every TTL/3 and at every
//     checkpoint with a compare-and-PEXPIRE script, released with a
//     compare-and-delete script). A second runner gets ErrLeaseHeld.
//   - Checkpointed and resumable: each page is one database transaction
//     that stores the page's discrepancies and advances the run's cursor.
//     A run that crashed, lost its lease or failed stays "running" in
//     reconcile_runs; the next RunOnce of the job resumes it from the
//     cursor with the same AsOf, so pages already checked are not checked
//     again and the run's grace decisions do not shift.
//   - Fenced: every checkpoint transaction locks the run row and checks
//     that its owner is still our lease token, so a runner that lost its
//     lease (paused process, Redis outage) cannot write after another
//     runner took the run over. A lost lease stops the run at the next
//     checkpoint with ErrLeaseLost; nothing half-written remains.
//   - Repairs happen only for whitelisted classes (WithRepair) whose
//     discrepancy names an Action, only through Job.Repair, and each gets
//     an idempotency key that is stable per discrepancy occurrence
//     (IdempotencyKey). A repair is recorded as started before the call
//     and as repaired after it, in the audit log too. A crash between the
//     two makes the next run call Repair again with the same key: the
//     runner calls Repair at least once, the job's idempotency turns that
//     into exactly one effect. A repaired discrepancy found again by the
//     next complete run is never repaired again (the repair did not
//     converge): it is reopened for a human. Found again only after a
//     complete run saw the key consistent, it is a new occurrence of the
//     same key (the repair held; the key broke again) and is repaired
//     under a new idempotency key.
//   - A second run after a successful one takes no new actions: repaired
//     items are consistent, open ones stay open (not re-repaired).
//   - Discrepancies that are not repaired stay open with their evidence
//     until a human acknowledges (Acknowledge) and resolves (Resolve) them,
//     or a later complete run finds them consistent (status resolved,
//     "cleared" in the audit log).
//   - Dry runs write nothing at all (no run record, discrepancy, audit
//     entry or repair); their Report lists what was found and how many
//     repairs a real run would make.
//
// # What the job must do
//
// Check pages through the items from a cursor, must only read, and must
// return InFlight (not a discrepancy) for items changed after Scan.AsOf
// minus its grace window: live traffic is not a discrepancy. Keys must be
// stable. Repair must be idempotent per key (store the key with the
// effect in one transaction, or send the compensating message with the
// key and consume it with an idempotent consumer). Jobs should compare
// sources that are independent; comparing a table with itself proves
// nothing.
//
// # Limits
//
// The lease is advisory between Redis and the database: a runner paused
// longer than the lease TTL may still be inside a Repair call when another
// runner takes over and calls Repair with the same key; idempotent repairs
// make that harmless, the fence keeps the bookkeeping consistent. Resumes
// continue with the job's cursor, so a job whose order changes between
// runs may miss or recheck items; ordering by an immutable key avoids it.
// Evidence is stored as JSON in a LONGTEXT column.
//
// # Metrics
//
// With WithRegisterer: mqclient_reconcile_runs_total{job,result},
// mqclient_reconcile_discrepancies_total{job,class},
// mqclient_reconcile_repairs_total{job,result} and
// mqclient_reconcile_run_seconds{job}.
package reconcile
