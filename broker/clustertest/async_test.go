//go:build cluster

package clustertest

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// TestAsyncSlaveRestartCatchUp: an ASYNC_MASTER (deploy/brokers/
// 2m-2s-async) under load; its slave is killed with SIGKILL and restarted
// while the load goes on. The slave catches up to the same commit log end,
// and after a graceful stop of both, the replicated range [0, end) of the
// two commit logs (several 256 KiB segments, fillers included) has the
// same SHA-256. The slave also serves every acknowledged message.
func TestAsyncSlaveRestartCatchUp(t *testing.T) {
	c := newCluster(t, 1)
	m := c.startBroker("2m-2s-async/broker-a.conf", nil)
	s := c.startBroker("2m-2s-async/broker-a-s.conf", nil)
	const topic, queues, total = "AsyncRestart", 4, 800
	c.createTopic(m, topic, queues)
	c.waitSlave(m, s, topic)

	p := newProducer(t, c.nsList(), "pg-async")
	l := newLedger()
	stop := l.load(p, topic, "a", 4, total, 5*time.Millisecond)
	defer stop()
	c.waitAcked(l, 150, 60*time.Second)
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	c.waitAcked(l, 400, 60*time.Second)
	s.start()
	t.Logf("slave restarted after %d acknowledged sends (of %d)", len(l.snapshot()), total)
	c.waitAcked(l, total, 60*time.Second)
	stop()
	if l.errs > 0 {
		t.Fatalf("sends failed: %s", l)
	}
	end := c.waitCaughtUp(m, s, 30*time.Second)
	c.requireAll(s.addr, "restarted slave", topic, queues, l.snapshot(), 10*time.Second)

	if err := s.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	hm, nm := commitLogHash(t, filepath.Join(m.dir, "store", "commitlog"), end)
	hs, ns := commitLogHash(t, filepath.Join(s.dir, "store", "commitlog"), end)
	t.Logf("replicated range [0, %d): master sha256 %s (%d segments), slave %s (%d segments)", end, hm, nm, hs, ns)
	if hm != hs {
		t.Fatalf("commit logs differ in [0, %d): master %s, slave %s", end, hm, hs)
	}
	if nm < 3 {
		t.Errorf("only %d segments: the test should cross segment ends", nm)
	}
}

// commitLogHash returns the SHA-256 of the concatenated commit log
// segments (files named by their 20-digit start offset, starting at 0)
// cut to n bytes, and the number of segments it read.
func commitLogHash(t *testing.T, dir string, n int64) (string, int) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "[0-9]*"))
	if err != nil || len(names) == 0 {
		t.Fatalf("commit log %s: %v (%d files)", dir, err, len(names))
	}
	sort.Strings(names)
	if filepath.Base(names[0]) != "00000000000000000000" {
		t.Fatalf("commit log %s starts at %s", dir, filepath.Base(names[0]))
	}
	h := sha256.New()
	left, used := n, 0
	for _, name := range names {
		if left == 0 {
			break
		}
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		k, err := io.Copy(h, io.LimitReader(f, left))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		left -= k
		used++
	}
	if left != 0 {
		t.Fatalf("commit log %s holds %d bytes less than %d", dir, left, n)
	}
	return hex.EncodeToString(h.Sum(nil)), used
}
