package idempotent

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"
)

// blocker holds the dedup row of key in an open transaction on its own
// connection, as a slow concurrent delivery would.
func (f *fixture) blocker(t *testing.T, key string) (rollback func()) {
	t.Helper()
	db, err := sql.Open("mysql", f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	fp := sha256.Sum256([]byte("x"))
	if _, err := tx.Exec("INSERT INTO mq_dedup (consumer_group, handler, biz_key, fingerprint, created_at) VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6))",
		"payments", "transfer", key, fp[:]); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	rb := func() { once.Do(func() { tx.Rollback(); db.Close() }) }
	t.Cleanup(rb)
	return rb
}

// A lock wait timeout on the dedup insert is transient: the delivery is
// retried, nothing is applied or marked done, and the claim is released.
func TestLockWaitTimeoutIsTransient(t *testing.T) {
	f := newFixture(t)
	f.dsn = withLockWait(t, f.dsn, "1")
	f.db = openDB(t, f.dsn)
	c := f.consumer(t, f.rdb, Options{})
	h := c.Wrap(transfer)
	rollback := f.blocker(t, "order-1")
	m := msg("order-1", "x")
	err := h(context.Background(), m)
	if !errors.Is(err, ErrTransient) || !IsTransient(err) {
		t.Fatalf("got %v, want ErrTransient", err)
	}
	k := keysFor(c.opts.KeyPrefix, c.opts.Group, c.opts.Handler, "order-1")
	if n := f.rdb.Exists(context.Background(), k.claim, k.done).Val(); n != 0 {
		t.Errorf("%d redis keys left after a transient failure (claim not released or marked done)", n)
	}
	if f.metric("transient_errors_total") != 1 {
		t.Errorf("transient errors = %v, want 1", f.metric("transient_errors_total"))
	}
	rollback()
	redeliver(t, h, m, 10*time.Second)
	f.checkInvariant(t, []string{"order-1"})
}

// Two deliveries wait on a key held by a transaction that then rolls
// back: InnoDB lets both take shared locks and one of them deadlocks
// (MySQL manual, "Locks Set by Different SQL Statements"). The deadlock is
// transient, never "done"; after retries the effect is applied once.
func TestDeadlockOnDedupInsert(t *testing.T) {
	f := newFixture(t)
	h := f.consumer(t, nil, Options{}).Wrap(transfer) // DB only: both reach the insert
	var transient int
	for round := 0; round < 3; round++ {
		key := "order-" + string(rune('a'+round))
		rollback := f.blocker(t, key)
		m := msg(key, "x")
		errs := make(chan error, 3)
		for i := 0; i < 3; i++ {
			go func() { errs <- h(context.Background(), m) }()
		}
		waitBlockedInserts(t, f, 3)
		rollback()
		for i := 0; i < 3; i++ {
			err := <-errs
			switch {
			case err == nil:
			case errors.Is(err, ErrTransient):
				transient++
			default:
				t.Errorf("got %v, want nil or ErrTransient", err)
			}
		}
		redeliver(t, h, m, 10*time.Second)
	}
	if transient == 0 {
		t.Error("no deadlock observed: the transient path was not exercised")
	}
	if mysqlDeadlocks := f.metric("transient_errors_total"); mysqlDeadlocks != float64(transient) {
		t.Errorf("metric %v != %d", mysqlDeadlocks, transient)
	}
	f.checkInvariant(t, []string{"order-a", "order-b", "order-c"})
}
