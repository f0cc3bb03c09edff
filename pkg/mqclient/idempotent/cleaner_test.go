package idempotent

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/tidetest"
)

// Old records are removed in batches while the hot path keeps inserting;
// young records (and so dedup) survive.
func TestCleanerWhileHotPath(t *testing.T) {
	f := newFixture(t)
	const old = 20000
	if err := f.db.Exec(fmt.Sprintf("INSERT INTO mq_dedup (consumer_group, handler, biz_key, fingerprint, created_at) "+
		"SELECT 'payments', 'transfer', CONCAT('old-', seq), UNHEX(SHA2('x', 256)), UTC_TIMESTAMP(6) - INTERVAL 40 DAY "+
		"FROM seq_1_to_%d", old)).Error; err != nil {
		t.Fatal(err)
	}
	cl, err := NewCleaner(f.db, CleanerOptions{Retention: 30 * 24 * time.Hour, BatchSize: 500, Pause: time.Millisecond,
		Interval: 20 * time.Millisecond, Logger: tidetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- cl.Run(ctx) }()

	h := f.consumer(t, f.rdb, Options{}).Wrap(transfer)
	var keys []string
	var msgs []*mqclient.MessageExt
	for i := 0; i < 200; i++ {
		m := msg(fmt.Sprintf("new-%d", i), "x")
		keys, msgs = append(keys, m.Key()), append(msgs, m)
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(msgs); i += 4 {
				redeliver(t, h, msgs[i], 10*time.Second)
				redeliver(t, h, msgs[i], 10*time.Second) // duplicate
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for f.count(t, "SELECT COUNT(*) FROM mq_dedup WHERE biz_key LIKE 'old-%'") > 0 {
		if time.Now().After(deadline) {
			t.Fatal("old records not cleaned")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-runDone; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := f.count(t, "SELECT COUNT(*) FROM mq_dedup"); n != 200 {
		t.Errorf("%d records left, want the 200 young ones", n)
	}
	f.rdb.FlushAll(context.Background())
	for _, m := range msgs { // still deduplicated by the database
		redeliver(t, h, m, 10*time.Second)
	}
	f.checkInvariant(t, keys)

	n, err := cl.Clean(context.Background())
	if err != nil || n != 0 {
		t.Errorf("second pass deleted %d (%v), want 0", n, err)
	}
}
