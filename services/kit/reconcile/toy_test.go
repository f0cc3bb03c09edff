package reconcile_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/services/kit/reconcile"
)

// toySchema: our payments, the provider's statement, and the repair
// bookkeeping of the toy job (repair_keys makes repairs idempotent; ledger
// is an append-only log of effects, so a double repair would show).
const toySchema = `CREATE TABLE payments (ref VARCHAR(32) PRIMARY KEY, amount BIGINT NOT NULL, status VARCHAR(16) NOT NULL, created_at DATETIME(6) NOT NULL);
CREATE TABLE provider_statement (id BIGINT AUTO_INCREMENT PRIMARY KEY, ref VARCHAR(32) NOT NULL, amount BIGINT NOT NULL, status VARCHAR(16) NOT NULL, created_at DATETIME(6) NOT NULL, KEY (ref));
CREATE TABLE repair_keys (idem_key VARCHAR(255) PRIMARY KEY);
CREATE TABLE ledger (id BIGINT AUTO_INCREMENT PRIMARY KEY, ref VARCHAR(32) NOT NULL, action VARCHAR(32) NOT NULL, idem_key VARCHAR(255) NOT NULL)`

// paymentsJob compares payments with provider_statement.
type paymentsJob struct {
	db      *gorm.DB
	grace   time.Duration
	repairs atomic.Int32
	// onCheck runs before a page is read; onRepair after a repair
	// committed (the effect is applied, the runner has not recorded it).
	onCheck  func(cursor string)
	onRepair func(n int32, key string)
}

func (j *paymentsJob) Name() string { return "payments-vs-provider" }

type row struct {
	Ref       string    `json:"ref"`
	Amount    int64     `json:"amount"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
}

func (j *paymentsJob) Check(ctx context.Context, s reconcile.Scan) (reconcile.Page, error) {
	if j.onCheck != nil {
		j.onCheck(s.Cursor)
	}
	db := j.db.WithContext(ctx)
	var refs []string
	if err := db.Raw(`SELECT ref FROM (SELECT ref FROM payments UNION SELECT ref FROM provider_statement) u
		WHERE ref > ? ORDER BY ref LIMIT ?`, s.Cursor, s.Limit).Scan(&refs).Error; err != nil {
		return reconcile.Page{}, err
	}
	page := reconcile.Page{Checked: len(refs)}
	if len(refs) == s.Limit {
		page.Next = refs[len(refs)-1]
	}
	cutoff := s.AsOf.Add(-j.grace)
	for _, ref := range refs {
		var ours []row
		var prov []row
		if err := db.Raw("SELECT ref, amount, status, created_at FROM payments WHERE ref = ?", ref).Scan(&ours).Error; err != nil {
			return page, err
		}
		if err := db.Raw("SELECT ref, amount, status, created_at FROM provider_statement WHERE ref = ? AND status = 'captured' ORDER BY id", ref).Scan(&prov).Error; err != nil {
			return page, err
		}
		d := reconcile.Discrepancy{Key: ref, Evidence: map[string]any{"ours": ours, "provider": prov}}
		switch {
		case len(ours) == 0 && len(prov) == 0:
			continue
		case len(ours) == 0:
			d.Class, d.Action = reconcile.MissingOurs, "insert_payment"
			if prov[0].CreatedAt.After(cutoff) {
				d.Class = reconcile.InFlight
			}
		case len(prov) == 0:
			d.Class = reconcile.MissingProvider
			if ours[0].CreatedAt.After(cutoff) {
				d.Class = reconcile.InFlight
			}
		case len(prov) > 1:
			d.Class, d.Action = reconcile.Duplicate, "refund_duplicate"
		case ours[0].Amount != prov[0].Amount:
			d.Class = reconcile.AmountMismatch
		case ours[0].Status != prov[0].Status:
			d.Class, d.Action = reconcile.StatusMismatch, "mark_captured"
		default:
			continue
		}
		page.Discrepancies = append(page.Discrepancies, d)
	}
	return page, nil
}

// Repair applies the fix and records the key in one transaction: a second
// call with the same key does nothing.
func (j *paymentsJob) Repair(ctx context.Context, d reconcile.Discrepancy, key string) error {
	n := j.repairs.Add(1)
	err := j.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Exec("INSERT IGNORE INTO repair_keys (idem_key) VALUES (?)", key)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error // already applied
		}
		var err error
		switch d.Action {
		case "insert_payment":
			err = tx.Exec(`INSERT INTO payments (ref, amount, status, created_at) SELECT ref, amount, status, created_at
				FROM provider_statement WHERE ref = ? AND status = 'captured' ORDER BY id LIMIT 1`, d.Key).Error
		case "mark_captured":
			err = tx.Exec("UPDATE payments SET status = 'captured' WHERE ref = ?", d.Key).Error
		case "refund_duplicate":
			var first int64
			if err = tx.Raw("SELECT MIN(id) FROM provider_statement WHERE ref = ? AND status = 'captured'", d.Key).Row().Scan(&first); err == nil {
				err = tx.Exec("UPDATE provider_statement SET status = 'refunded' WHERE ref = ? AND status = 'captured' AND id > ?", d.Key, first).Error
			}
		default:
			err = fmt.Errorf("unknown action %q", d.Action)
		}
		if err != nil {
			return err
		}
		return tx.Exec("INSERT INTO ledger (ref, action, idem_key) VALUES (?, ?, ?)", d.Key, d.Action, key).Error
	})
	if err == nil && j.onRepair != nil {
		j.onRepair(n, key)
	}
	return err
}

func openDB(t testing.TB, dsn string) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(mysql.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s, err := db.DB(); err == nil {
			s.Close()
		}
	})
	return db
}

func openRedis(t testing.TB, addr string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// seed creates the schemas and one case of every class. Expected after a
// run with WithRepair(MissingOurs, StatusMismatch, Duplicate): see final.
func seed(t testing.TB, db *gorm.DB) {
	t.Helper()
	ctx := context.Background()
	if err := reconcile.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range strings.Split(toySchema, ";\n") {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	old, recent := time.Now().UTC().Add(-time.Hour), time.Now().UTC()
	pay := func(ref string, amount int64, status string, at time.Time) {
		if err := db.Exec("INSERT INTO payments VALUES (?, ?, ?, ?)", ref, amount, status, at).Error; err != nil {
			t.Fatal(err)
		}
	}
	prov := func(ref string, amount int64, at time.Time) {
		if err := db.Exec("INSERT INTO provider_statement (ref, amount, status, created_at) VALUES (?, ?, 'captured', ?)", ref, amount, at).Error; err != nil {
			t.Fatal(err)
		}
	}
	both := func(ref string) { pay(ref, 1000, "captured", old); prov(ref, 1000, old) }
	both("p01")
	pay("p02", 1000, "captured", old) // missing at the provider
	prov("p03", 1500, old)            // missing on our side
	pay("p04", 1000, "captured", old) // amount mismatch
	prov("p04", 999, old)
	pay("p05", 1000, "pending", old) // status mismatch
	prov("p05", 1000, old)
	both("p06") // duplicate capture
	prov("p06", 1000, old)
	pay("p07", 1000, "captured", recent) // in flight, both ways
	prov("p08", 1000, recent)
	for _, r := range []string{"p09", "p10", "p11", "p12"} {
		both(r)
	}
	prov("p13", 700, old)
	pay("p14", 1000, "pending", old)
	prov("p14", 1000, old)
}

var (
	repairedRefs = []string{"p03", "p05", "p06", "p13", "p14"}
	wantFinal    = map[string]string{ // key -> class/status
		"p02": "missing_provider/open", "p03": "missing_ours/repaired", "p04": "amount_mismatch/open",
		"p05": "status_mismatch/repaired", "p06": "duplicate/repaired", "p13": "missing_ours/repaired",
		"p14": "status_mismatch/repaired",
	}
)

// checkFinal is the invariant after a completed run: every discrepancy
// classified and in its final state, in-flight items not stored, and every
// repair's effect applied exactly once.
func checkFinal(t *testing.T, db *gorm.DB, r *reconcile.Runner) {
	t.Helper()
	recs, err := r.Discrepancies(context.Background(), "payments-vs-provider")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, rec := range recs {
		got[rec.Key] = string(rec.Class) + "/" + string(rec.Status)
		if !strings.Contains(string(rec.Evidence), `"ours"`) || !strings.Contains(string(rec.Evidence), `"provider"`) {
			t.Errorf("%s: evidence %s", rec.Key, rec.Evidence)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(wantFinal) {
		t.Errorf("discrepancies\n got %v\nwant %v", got, wantFinal)
	}
	var ledger []string
	db.Raw("SELECT ref FROM ledger ORDER BY ref").Scan(&ledger)
	if fmt.Sprint(ledger) != fmt.Sprint(repairedRefs) {
		t.Errorf("effects applied %v, want each of %v exactly once", ledger, repairedRefs)
	}
	var bad int64
	db.Raw(`SELECT COUNT(*) FROM payments p JOIN provider_statement s ON s.ref = p.ref AND s.status = 'captured'
		WHERE p.ref IN ('p03','p05','p13','p14') AND (p.status <> 'captured' OR p.amount <> s.amount)`).Scan(&bad)
	var n03, dup int64
	db.Raw("SELECT COUNT(*) FROM payments WHERE ref IN ('p03','p13')").Scan(&n03)
	db.Raw("SELECT COUNT(*) FROM provider_statement WHERE ref = 'p06' AND status = 'captured'").Scan(&dup)
	if bad != 0 || n03 != 2 || dup != 1 {
		t.Errorf("repairs not applied: mismatched %d, inserted %d/2, p06 captures %d/1", bad, n03, dup)
	}
}

// snapshot dumps tables for before/after comparisons.
func snapshot(t *testing.T, db *gorm.DB, tables ...string) string {
	t.Helper()
	var b strings.Builder
	for _, tb := range tables {
		rows, err := db.Raw("SELECT * FROM " + tb).Rows()
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		var lines []string
		for rows.Next() {
			vals := make([]sql.RawBytes, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, v := range vals {
				parts = append(parts, string(v))
			}
			lines = append(lines, strings.Join(parts, "|"))
		}
		rows.Close()
		sort.Strings(lines)
		fmt.Fprintf(&b, "%s:\n%s\n", tb, strings.Join(lines, "\n"))
	}
	return b.String()
}

var businessTables = []string{"payments", "provider_statement", "repair_keys", "ledger"}
var allTables = append(businessTables[:len(businessTables):len(businessTables)], "reconcile_runs", "reconcile_discrepancies", "reconcile_audit")

// runUntilLease calls RunOnce until the lease of a dead runner expired.
func runUntilLease(t *testing.T, r *reconcile.Runner, job reconcile.Job) *reconcile.Report {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		rep, err := r.RunOnce(context.Background(), job, reconcile.RunOptions{})
		if errors.Is(err, reconcile.ErrLeaseHeld) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("RunOnce: %v", err)
		}
		return rep
	}
}
