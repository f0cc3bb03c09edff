package idempotent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/tidetest"
)

// modes run a test with Redis as fast path and with the database alone.
func modes(f *fixture) []struct {
	name string
	rdb  redis.UniversalClient
} {
	return []struct {
		name string
		rdb  redis.UniversalClient
	}{{"redis", f.rdb}, {"db-only", nil}}
}

func TestDuplicateDelivery(t *testing.T) {
	f := newFixture(t)
	for _, mode := range modes(f) {
		t.Run(mode.name, func(t *testing.T) {
			h := f.consumer(t, mode.rdb, Options{Handler: "transfer-" + mode.name}).Wrap(transfer)
			key := "order-" + mode.name
			m := msg(key, `{"amount":10}`)
			for i := 0; i < 3; i++ { // the same message (same msg id) three times
				if err := h(context.Background(), m); err != nil {
					t.Fatalf("delivery %d: %v", i, err)
				}
			}
			// A producer retry: same business event, new message id.
			if err := h(context.Background(), msg(key, `{"amount":10}`)); err != nil {
				t.Fatal(err)
			}
			source := "db"
			if mode.rdb != nil {
				source = "redis"
			}
			if got := f.metric("dedup_hits_total", "handler", "transfer-"+mode.name, "source", source); got != 3 {
				t.Errorf("%s dedup hits = %v, want 3", source, got)
			}
		})
	}
	f.checkInvariant(t, []string{"order-redis", "order-db-only"})
}

func TestConcurrentDeliveries(t *testing.T) {
	f := newFixture(t)
	var keys []string
	for _, mode := range modes(f) {
		t.Run(mode.name, func(t *testing.T) {
			h := f.consumer(t, mode.rdb, Options{Handler: "transfer-" + mode.name}).Wrap(transfer)
			const nKeys, parallel = 15, 6
			for i := 0; i < nKeys; i++ {
				key := fmt.Sprintf("%s-%d", mode.name, i)
				keys = append(keys, key)
				m := msg(key, "body-"+key)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for g := 0; g < parallel; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						mm := *m // each consumer has its own copy, as after a rebalance
						<-start
						redeliver(t, h, &mm, 20*time.Second)
					}()
				}
				close(start)
				wg.Wait()
			}
		})
	}
	f.checkInvariant(t, keys)
	t.Logf("claims lost (busy): %v, db hits: %v, transient: %v", f.metric("claims_lost_total"),
		f.metric("dedup_hits_total", "source", "db"), f.metric("transient_errors_total"))
}

func TestPayloadMismatch(t *testing.T) {
	f := newFixture(t)
	for _, mode := range modes(f) {
		t.Run(mode.name, func(t *testing.T) {
			c := f.consumer(t, mode.rdb, Options{Handler: "transfer-" + mode.name})
			h := c.Wrap(transfer)
			key := "order-" + mode.name
			if err := h(context.Background(), msg(key, `{"amount":10}`)); err != nil {
				t.Fatal(err)
			}
			err := h(context.Background(), msg(key, `{"amount":99}`))
			if !errors.Is(err, ErrPayloadMismatch) {
				t.Fatalf("different payload: got %v, want ErrPayloadMismatch", err)
			}
			// The same payload is still a plain duplicate.
			if err := h(context.Background(), msg(key, `{"amount":10}`)); err != nil {
				t.Fatal(err)
			}
			// AckMismatch acknowledges (and still counts) it.
			ack := f.consumer(t, mode.rdb, Options{Handler: "transfer-" + mode.name, AckMismatch: true}).Wrap(transfer)
			if err := ack(context.Background(), msg(key, `{"amount":99}`)); err != nil {
				t.Fatalf("AckMismatch: %v", err)
			}
			if got := f.metric("payload_mismatches_total", "handler", "transfer-"+mode.name); got != 2 {
				t.Errorf("mismatches = %v, want 2", got)
			}
		})
	}
	f.checkInvariant(t, []string{"order-redis", "order-db-only"})
}

func TestCustomKeyAndPayload(t *testing.T) {
	f := newFixture(t)
	h := f.consumer(t, f.rdb, Options{
		Key: func(m *mqclient.MessageExt) (string, error) {
			if m.Properties["paymentId"] == "" {
				return "", errors.New("no paymentId")
			}
			return m.Properties["paymentId"], nil
		},
		// Canonical payload: the resend carries another "sentAt", which
		// must not count as a different payload.
		Payload: func(m *mqclient.MessageExt) ([]byte, error) { return []byte(m.Properties["amount"]), nil },
	}).Wrap(func(ctx context.Context, tx *gorm.DB, m *mqclient.MessageExt) error {
		return transfer(ctx, tx, &mqclient.MessageExt{Message: mqclient.Message{Keys: []string{m.Properties["paymentId"]}}})
	})
	mk := func(sentAt string) *mqclient.MessageExt {
		m := msg("ignored", "sentAt="+sentAt)
		m.Properties = map[string]string{"paymentId": "p-1", "amount": "10"}
		return m
	}
	for _, s := range []string{"1", "2"} {
		if err := h(context.Background(), mk(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := h(context.Background(), msg("x", "no property")); !errors.Is(err, ErrBadKey) {
		t.Errorf("missing key: got %v, want ErrBadKey", err)
	}
	long := make([]byte, MaxKeyLen+1)
	for i := range long {
		long[i] = 'k'
	}
	h2 := f.consumer(t, f.rdb, Options{Handler: "other"}).Wrap(transfer)
	if err := h2(context.Background(), msg(string(long), "x")); !errors.Is(err, ErrBadKey) {
		t.Errorf("long key: got %v, want ErrBadKey", err)
	}
	f.checkInvariant(t, []string{"p-1"})
}

func TestEffectFailureIsRetried(t *testing.T) {
	f := newFixture(t)
	fail := true
	h := f.consumer(t, f.rdb, Options{}).Wrap(func(ctx context.Context, tx *gorm.DB, m *mqclient.MessageExt) error {
		if err := transfer(ctx, tx, m); err != nil {
			return err
		}
		if fail {
			return errors.New("downstream refused")
		}
		return nil
	})
	m := msg("order-1", "x")
	if err := h(context.Background(), m); err == nil {
		t.Fatal("want the effect's error")
	}
	// Nothing was marked done and the claim was released: the
	// redelivery runs at once (no ErrInProgress, no duplicate ack).
	fail = false
	if err := h(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	f.checkInvariant(t, []string{"order-1"})
}

func TestRedisOutage(t *testing.T) {
	for _, policy := range []Policy{FailClosedDB, FailClosedRetry, FailOpen} {
		t.Run(policy.String(), func(t *testing.T) {
			f := newFixture(t)
			h := f.consumer(t, f.rdb, Options{RedisPolicy: policy}).Wrap(transfer)
			done := []*mqclient.MessageExt{msg("a", "1"), msg("b", "2")}
			for _, m := range done {
				if err := h(context.Background(), m); err != nil {
					t.Fatal(err)
				}
			}
			f.redis.Stop()
			fresh := []*mqclient.MessageExt{msg("c", "3"), msg("d", "4")}
			for _, m := range append(done, fresh...) {
				err := h(context.Background(), m)
				switch policy {
				case FailClosedRetry:
					if !errors.Is(err, ErrRedisUnavailable) {
						t.Errorf("%s: got %v, want ErrRedisUnavailable", m.Key(), err)
					}
				default:
					if err != nil {
						t.Errorf("%s: %v", m.Key(), err)
					}
				}
			}
			if policy == FailClosedRetry {
				if n := f.count(t, "SELECT COUNT(*) FROM effects"); n != 2 {
					t.Fatalf("%d effects while Redis was down under FailClosedRetry, want 2", n)
				}
			}
			if got := f.metric("redis_fallbacks_total", "policy", policy.String()); got != 4 {
				t.Errorf("fallbacks = %v, want 4", got)
			}
			if err := f.redis.Start(); err != nil {
				t.Fatal(err)
			}
			for _, m := range append(done, fresh...) {
				redeliver(t, h, m, 10*time.Second)
			}
			f.checkInvariant(t, []string{"a", "b", "c", "d"})
		})
	}
}

func TestRedisOnlyFailOpen(t *testing.T) {
	f := newFixture(t)
	if _, err := New(nil, f.rdb, Options{Group: "g", Handler: "h"}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Redis-only with FailClosedDB: got %v", err)
	}
	var mu sync.Mutex
	sent := map[string]int{}
	c, err := New(nil, f.rdb, Options{Group: "g", Handler: "notify", RedisPolicy: FailOpen,
		RedisTimeout: testRedisTimeout, Logger: tidetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Wrap(func(_ context.Context, tx *gorm.DB, m *mqclient.MessageExt) error {
		if tx != nil {
			t.Error("Redis-only effect got a transaction")
		}
		mu.Lock()
		sent[m.Key()]++
		mu.Unlock()
		return nil
	})
	m := msg("user-1", "hello")
	for i := 0; i < 2; i++ {
		if err := h(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	if err := h(context.Background(), msg("user-1", "other")); !errors.Is(err, ErrPayloadMismatch) {
		t.Errorf("got %v, want ErrPayloadMismatch", err)
	}
	f.redis.Stop()
	// Fail open: the notification goes out again (the documented cost).
	if err := h(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if sent["user-1"] != 2 {
		t.Errorf("sent %d, want 2 (once, then once more failing open)", sent["user-1"])
	}
}

func TestRedisLostKeys(t *testing.T) {
	f := newFixture(t)
	h := f.consumer(t, f.rdb, Options{}).Wrap(transfer)
	var keys []string
	var msgs []*mqclient.MessageExt
	for i := 0; i < 10; i++ {
		m := msg(fmt.Sprintf("k%d", i), "x")
		keys, msgs = append(keys, m.Key()), append(msgs, m)
		if err := h(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	f.redis.Stop() // no persistence: every done marker is lost
	if err := f.redis.Start(); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		redeliver(t, h, m, 10*time.Second)
	}
	if got := f.metric("dedup_hits_total", "source", "db"); got != 10 {
		t.Errorf("db hits = %v, want 10", got)
	}
	// The DB hit restored the markers: the next duplicates stop at Redis.
	for _, m := range msgs {
		if err := h(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.metric("dedup_hits_total", "source", "redis"); got != 10 {
		t.Errorf("redis hits = %v, want 10", got)
	}
	// Evicted or expired claim/done keys mid-flight: same thing.
	f.rdb.FlushAll(context.Background())
	for _, m := range msgs {
		redeliver(t, h, m, 10*time.Second)
	}
	f.checkInvariant(t, keys)
}

func TestClaimExpiresMidEffect(t *testing.T) {
	f := newFixture(t)
	c := f.consumer(t, f.rdb, Options{ClaimTTL: 50 * time.Millisecond})
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	entered := make(chan struct{}, 1)
	slow := c.Wrap(func(ctx context.Context, tx *gorm.DB, m *mqclient.MessageExt) error {
		entered <- struct{}{}
		<-release
		return transfer(ctx, tx, m)
	})
	m := msg("slow", "x")
	errc := make(chan error, 1)
	go func() { errc <- slow(context.Background(), m) }()
	<-entered
	// The holder renews its claim while the effect runs, so it would not
	// expire; Redis loses it instead (eviction, a failover). Deliver
	// again: the second delivery gets the claim but blocks on the
	// database row lock.
	k := keysFor(c.opts.KeyPrefix, c.opts.Group, c.opts.Handler, "slow")
	if err := f.rdb.Del(context.Background(), k.claim).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now()
	// The second delivery runs on a member with the default ClaimTTL: its
	// own claim must outlive its wait for the row lock however slow the
	// machine is, so only the first claim expires.
	fast := f.consumer(t, f.rdb, Options{}).Wrap(transfer)
	err2 := make(chan error, 1)
	go func() { err2 <- fast(context.Background(), m) }()
	deadline = time.Now().Add(10 * time.Second)
	for f.blockedInserts(t) < 1 {
		select {
		case err := <-err2:
			t.Fatalf("second delivery returned before the first committed: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("second delivery never waited for the row lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	unblock()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := <-err2; err != nil {
		t.Fatal(err)
	}
	if got := f.metric("claims_lost_total", "reason", "expired"); got != 1 {
		t.Errorf("expired claims = %v, want 1", got)
	}
	f.checkInvariant(t, []string{"slow"})
}

// blockedInserts counts dedup inserts of this test's database that are
// executing right now (so, in these tests, waiting for a row lock).
func (f *fixture) blockedInserts(t testing.TB) int64 {
	return f.count(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO LIKE 'INSERT INTO `mq_dedup`%'")
}

// waitBlockedInserts waits until n dedup inserts wait for a row lock.
func waitBlockedInserts(t *testing.T, f *fixture, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.blockedInserts(t) < n {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d dedup inserts waiting for a lock", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestValidate(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"no group", Options{Handler: "h"}},
		{"no handler", Options{Group: "g"}},
		{"bad policy", Options{Group: "g", Handler: "h", RedisPolicy: 7}},
		{"bad table", Options{Group: "g", Handler: "h", Table: "x; DROP TABLE y"}},
		{"negative ttl", Options{Group: "g", Handler: "h", ClaimTTL: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(f.db, nil, tc.o); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("got %v, want ErrInvalidOptions", err)
			}
		})
	}
	if _, err := New(nil, nil, Options{Group: "g", Handler: "h"}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("no stores: got %v", err)
	}
}

// A hung Redis (SIGSTOP: the port stays open, nothing answers) must cost
// a delivery about RedisTimeout, not the client's read timeout and
// retries, whatever the caller's go-redis options: the client here is
// built as in the package example, without ContextTimeoutEnabled, so
// go-redis itself ignores the context's deadline (issue #24: 5 s per
// delivery before the fix).
func TestHungRedisBoundedByRedisTimeout(t *testing.T) {
	f := newFixture(t)
	rdb := redis.NewClient(&redis.Options{Addr: f.redis.Addr()})
	t.Cleanup(func() { rdb.Close() })
	h := f.consumer(t, rdb, Options{RedisPolicy: FailClosedRetry, RedisTimeout: Options{}.withDefaults().RedisTimeout}).Wrap(transfer)
	// Set-up: the first call dials Redis and loads the scripts, which can
	// take longer than RedisTimeout on a loaded machine: retried until done.
	redeliver(t, h, msg("a", "1"), 20*time.Second)
	if err := f.redis.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.redis.Resume() })
	for _, m := range []*mqclient.MessageExt{msg("a", "1"), msg("b", "2")} {
		start := time.Now()
		err := h(context.Background(), m)
		took := time.Since(start)
		if !errors.Is(err, ErrRedisUnavailable) {
			t.Errorf("%s: got %v, want ErrRedisUnavailable", m.Key(), err)
		}
		// RedisTimeout is 200 ms; 2 s leaves room for a loaded machine
		// and is still well under the 3 s read timeout that bounded it
		// before.
		if took > 2*time.Second {
			t.Errorf("%s: delivery took %v with Redis hung, want about RedisTimeout (200ms)", m.Key(), took)
		}
		t.Logf("%s: %v with Redis hung", m.Key(), took)
	}
}
