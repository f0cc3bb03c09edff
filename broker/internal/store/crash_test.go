package store

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Crash tests re-execute the test binary as a child that appends under
// load and is killed with SIGKILL at a random point; the parent then
// recovers the store and checks every acknowledged message. The default
// run is short; raise -crash.iterations (or build with -tags stress) for
// more.
var crashIterations = flag.Int("crash.iterations", defaultCrashIterations, "SIGKILL iterations per flush mode")

const (
	crashEnvDir   = "TIDE_STORE_CRASH_DIR"
	crashEnvFlush = "TIDE_STORE_CRASH_FLUSH"
	crashTopic    = "crash"
)

func crashConfig(dir, flush string) Config {
	c := DefaultConfig()
	c.StorePathRootDir = dir
	c.MappedFileSizeCommitLog = 1 << 20
	c.MappedFileSizeConsumeQueue = 20 * 1000
	c.MaxMessageSize = 64 << 10
	c.MaxHashSlotNum = 1024
	c.MaxIndexNum = 4096
	c.FlushDiskType = flush
	c.FlushIntervalCommitLog = 50
	c.FlushIntervalConsumeQueue = 100
	return c
}

// TestStoreCrashChild is the child side; it does nothing in a normal run.
func TestStoreCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnvDir)
	if dir == "" {
		t.Skip("crash child only")
	}
	s, err := Open(crashConfig(dir, os.Getenv(crashEnvFlush)), nil)
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(2)
	}
	var out sync.Mutex
	fmt.Println("ready")
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			for i := 0; time.Now().Before(deadline); i++ {
				body := make([]byte, 10+rng.IntN(3000))
				for k := range body {
					body[k] = byte(rng.Uint32())
				}
				m := newMsg(crashTopic, int32(w%4), "", map[string]string{"KEYS": fmt.Sprintf("w%d-%d", w, i)})
				m.Body = body
				var r PutResult
				var err error
				if i%5 == 0 {
					m2 := newMsg(crashTopic, int32(w%4), "second", nil)
					r, err = s.PutMessages(context.Background(), []*protocol.MessageExt{m, m2})
					if err == nil && r.Status == PutOK {
						out.Lock()
						fmt.Printf("ack %d %d %d %x\n", m2.CommitLogOffset, m2.QueueID, m2.QueueOffset, recordHash(encoded(t, m2)))
						out.Unlock()
					}
				} else {
					r, err = s.PutMessage(context.Background(), m)
				}
				if err != nil || r.Status != PutOK {
					continue
				}
				out.Lock()
				fmt.Printf("ack %d %d %d %x\n", m.CommitLogOffset, m.QueueID, m.QueueOffset, recordHash(encoded(t, m)))
				out.Unlock()
			}
		}()
	}
	wg.Wait()
	os.Exit(0)
}

func recordHash(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

type ack struct {
	phy  int64
	qid  int32
	qoff int64
	hash uint64
}

// runCrashChild starts a child appending into dir, kills it with SIGKILL
// after a random delay and returns the messages it acknowledged.
func runCrashChild(t *testing.T, dir, flush string, rng *rand.Rand) []ack {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStoreCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnvDir+"="+dir, crashEnvFlush+"="+flush)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var acks []ack
	parse := func(l string) {
		var a ack
		if _, err := fmt.Sscanf(l, "ack %d %d %d %x", &a.phy, &a.qid, &a.qoff, &a.hash); err == nil {
			acks = append(acks, a)
		} else if strings.HasPrefix(l, "error") {
			t.Errorf("child: %s", l)
		}
	}
	ready := time.After(20 * time.Second)
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				break wait
			}
			if l == "ready" {
				break wait
			}
			parse(l)
		case <-ready:
			cmd.Process.Kill()
			t.Fatal("child did not become ready")
		}
	}
	kill := time.After(time.Duration(50+rng.IntN(400)) * time.Millisecond)
loop:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				break loop
			}
			parse(l)
		case <-kill:
			cmd.Process.Signal(syscall.SIGKILL)
			kill = nil
		}
	}
	cmd.Wait()
	return acks
}

func TestStoreCrashRecoverySyncFlush(t *testing.T) {
	testCrashRecovery(t, SyncFlush)
}

func TestStoreCrashRecoveryAsyncFlush(t *testing.T) {
	testCrashRecovery(t, AsyncFlush)
}

func testCrashRecovery(t *testing.T, flush string) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	iterations := *crashIterations
	if flush == AsyncFlush {
		iterations = max(1, iterations/3)
	}
	var all []ack
	for it := 0; it < iterations; it++ {
		acks := runCrashChild(t, dir, flush, rng)
		all = append(all, acks...)
		s, err := Open(crashConfig(dir, flush), nil)
		if err != nil {
			t.Fatalf("iteration %d: recovery failed: %v", it, err)
		}
		lost := verifyAcks(t, s, all, flush == SyncFlush)
		verifyQueues(t, s)
		t.Logf("iteration %d: %d acknowledged this run, %d in total, %d lost (async only), log end %d", it, len(acks), len(all), lost, s.MaxPhyOffset())
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			return
		}
	}
}

// verifyAcks checks every acknowledged message is at its offsets, byte
// for byte. With strict (SYNC_FLUSH) none may be lost; otherwise losses
// must be a tail: nothing may survive after a lost message.
func verifyAcks(t *testing.T, s *Store, acks []ack, strict bool) int {
	t.Helper()
	lost := 0
	firstLost := int64(-1)
	for _, a := range acks {
		rec, err := s.ReadRecord(a.phy)
		if err != nil || recordHash(rec) != a.hash {
			if strict {
				t.Errorf("acknowledged message at %d lost or changed: %v", a.phy, err)
				continue
			}
			lost++
			if firstLost < 0 || a.phy < firstLost {
				firstLost = a.phy
			}
			continue
		}
		r := s.GetMessage(crashTopic, a.qid, a.qoff, 1, 0, nil)
		if r.Status != Found || r.Records[0].CommitLogOffset != a.phy || recordHash(r.Data) != a.hash {
			t.Errorf("queue %d offset %d: %v, not the acknowledged record at %d", a.qid, a.qoff, r.Status, a.phy)
		}
	}
	if firstLost >= 0 {
		for _, a := range acks {
			if a.phy > firstLost {
				if rec, err := s.ReadRecord(a.phy); err == nil && recordHash(rec) == a.hash {
					t.Errorf("message at %d survived but an earlier one at %d was lost: not a tail loss", a.phy, firstLost)
					break
				}
			}
		}
	}
	return lost
}

// verifyQueues reads every queue end to end: nothing corrupt may be served.
func verifyQueues(t *testing.T, s *Store) {
	t.Helper()
	waitDispatched(t, s)
	before := s.Stats().CorruptRecords
	for topic, ids := range s.Topics() {
		for _, id := range ids {
			for off := s.MinOffset(topic, id); off < s.MaxOffset(topic, id); {
				r := s.GetMessage(topic, id, off, 32, 0, nil)
				if r.Status != Found {
					t.Errorf("%s/%d@%d: %v", topic, id, off, r.Status)
					break
				}
				if _, err := protocol.DecodeMessages(r.Data); err != nil {
					t.Errorf("%s/%d@%d: served undecodable data: %v", topic, id, off, err)
				}
				off = r.NextBeginOffset
			}
		}
	}
	if n := s.Stats().CorruptRecords - before; n > 0 {
		t.Errorf("%d corrupt records met after recovery", n)
	}
}
