package idempotent

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashClaimTTL is the dead child's claim TTL: long enough to outlive any
// scheduling delay of a loaded machine between the crash and the checks
// below; the test then ends the claim itself (as its TTL would).
const crashClaimTTL = time.Minute

// TestCrashChild is the consumer process killed by TestCrash: it delivers
// one message and stops at IDEM_CRASH_POINT (inside the transaction after
// the effect, or after the commit before the ack), printing a marker line.
func TestCrashChild(t *testing.T) {
	point := os.Getenv("IDEM_CRASH_POINT")
	if point == "" {
		t.Skip("child process of TestCrash")
	}
	db := openDB(t, os.Getenv("IDEM_CRASH_DSN"))
	rdb := newRedis(os.Getenv("IDEM_CRASH_REDIS"))
	c, err := New(db, rdb, Options{Group: "payments", Handler: "transfer", ClaimTTL: crashClaimTTL,
		RedisTimeout: testRedisTimeout})
	if err != nil {
		t.Fatal(err)
	}
	stop := func(string) {
		fmt.Println("CRASH-POINT", point)
		select {} // wait for SIGKILL
	}
	if point == "before-commit" {
		c.beforeCommit = stop
	} else {
		c.afterCommit = stop
	}
	err = c.Wrap(transfer)(context.Background(), msg(os.Getenv("IDEM_CRASH_KEY"), "x"))
	t.Fatalf("child returned (%v) instead of stopping", err)
}

func TestCrash(t *testing.T) {
	for _, tc := range []struct {
		point string
		// the redelivery applies the effect (the child's rolled back) or
		// finds it done in the database.
		wantDBHits float64
	}{
		{"before-commit", 0}, // crash after the Redis claim, before the commit
		{"after-commit", 1},  // crash after the commit, before the ack
	} {
		t.Run(tc.point, func(t *testing.T) {
			f := newFixture(t)
			key := "order-" + tc.point
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "IDEM_CRASH_POINT="+tc.point, "IDEM_CRASH_DSN="+f.dsn,
				"IDEM_CRASH_REDIS="+f.redis.Addr(), "IDEM_CRASH_KEY="+key)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			reached := make(chan bool, 1)
			go func() {
				s := bufio.NewScanner(out)
				for s.Scan() {
					if strings.HasPrefix(s.Text(), "CRASH-POINT") {
						reached <- true
						break
					}
				}
				for s.Scan() {
				}
				reached <- false
			}()
			select {
			case ok := <-reached:
				if !ok {
					cmd.Wait()
					t.Fatal("child exited before the crash point")
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatal("child never reached the crash point")
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()

			// The dead consumer's claim is still there.
			c := f.consumer(t, f.rdb, Options{ClaimTTL: crashClaimTTL})
			h := c.Wrap(transfer)
			m := msg(key, "x")
			k := keysFor(c.opts.KeyPrefix, c.opts.Group, c.opts.Handler, key)
			if f.rdb.Exists(context.Background(), k.claim).Val() != 1 {
				t.Fatal("the child's claim is missing")
			}
			if f.rdb.Exists(context.Background(), k.done).Val() != 0 {
				t.Fatal("marked done before the ack")
			}
			// A redelivery waits for the dead child's claim (it is not
			// acked as a duplicate, and does not fail and use up an
			// attempt) ...
			errc := make(chan error, 1)
			go func() { errc <- h(context.Background(), m) }()
			deadline := time.Now().Add(20 * time.Second)
			for f.metric("claims_lost_total", "reason", "busy") < 1 {
				select {
				case err := <-errc:
					t.Fatalf("redelivery returned while the dead child's claim lives: %v", err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatal("the redelivery never found the claim")
				}
				time.Sleep(10 * time.Millisecond)
			}
			select {
			case err := <-errc:
				t.Fatalf("redelivery returned while the dead child's claim lives: %v", err)
			default:
			}
			// ... and goes on when the claim's TTL runs out: the effect is
			// applied (or found done) within that delivery.
			if err := f.rdb.PExpire(context.Background(), k.claim, time.Millisecond).Err(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-errc:
				if err != nil {
					t.Fatalf("redelivery after the claim expired: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("redelivery still waiting 20 s after the claim expired")
			}
			if got := f.metric("dedup_hits_total", "source", "db"); got != tc.wantDBHits {
				t.Errorf("db hits = %v, want %v", got, tc.wantDBHits)
			}
			if got := f.metric("effects_applied_total"); got != 1-tc.wantDBHits {
				t.Errorf("effects applied by the redelivery = %v, want %v", got, 1-tc.wantDBHits)
			}
			f.checkInvariant(t, []string{key})
		})
	}
}
