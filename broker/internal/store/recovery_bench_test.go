package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Recovery after a real SIGKILL with a large commit log (issue 11: 10 GiB
// in under 5 s). Opt-in, it needs the disk space:
//
//	TIDE_BENCH_RECOVERY_GIB=10 go test -run '^$' -bench BenchmarkRecoverKilled -benchtime 1x ./internal/store/
//
// A child process (this test binary) fills a store with default settings
// (1 GiB segments, ASYNC_FLUSH, index on) with 1 KiB messages over 8
// queues, keeps appending, and is killed with SIGKILL mid-append. The
// benchmark then times Open (the recovery: abort marker present) with the
// page cache as the kill left it, and again with the page cache dropped
// (TIDE_BENCH_DROP_CACHES=1, root only: it writes /proc/sys/vm/drop_caches)
// after a simulated crash of the recovered store.
const (
	recoveryEnvGiB   = "TIDE_BENCH_RECOVERY_GIB"
	recoveryEnvChild = "TIDE_BENCH_RECOVERY_CHILD_DIR"
)

func recoveryConfig(dir string) Config {
	c := DefaultConfig()
	c.StorePathRootDir = dir
	c.FlushDiskType = AsyncFlush
	return c
}

// TestStoreRecoveryFillChild is the child side; it does nothing in a
// normal run.
func TestStoreRecoveryFillChild(t *testing.T) {
	dir := os.Getenv(recoveryEnvChild)
	if dir == "" {
		t.Skip("recovery benchmark child only")
	}
	gib, _ := strconv.Atoi(os.Getenv(recoveryEnvGiB))
	s, err := Open(recoveryConfig(dir), nil)
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(2)
	}
	body := make([]byte, 1024-150)
	batch := make([]*protocol.MessageExt, 64)
	target := int64(gib) << 30
	announced := false
	for qid := int32(0); ; qid = (qid + 1) % 8 {
		for k := range batch {
			batch[k] = newMsg("recovery", qid, "", map[string]string{"KEYS": "k" + strconv.Itoa(k)})
			batch[k].Body = body
		}
		if _, err := s.PutMessages(context.Background(), batch); err != nil {
			fmt.Printf("error %v\n", err)
			os.Exit(2)
		}
		if !announced && s.MaxPhyOffset() >= target {
			fmt.Printf("filled %d\n", s.MaxPhyOffset())
			announced = true
		}
	}
}

func BenchmarkRecoverKilled(b *testing.B) {
	gib, _ := strconv.Atoi(os.Getenv(recoveryEnvGiB))
	if gib <= 0 {
		b.Skip("set " + recoveryEnvGiB + "=N to fill N GiB and time recovery after SIGKILL")
	}
	dir := b.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStoreRecoveryFillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), recoveryEnvChild+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	filled := false
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "filled") {
			filled = true
			break
		}
		if strings.HasPrefix(l, "error") {
			b.Fatalf("child: %s", l)
		}
	}
	if !filled {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b.Fatal("child ended before filling the store")
	}
	b.Logf("filled %d GiB in %v", gib, time.Since(t0).Round(time.Second))
	time.Sleep(200 * time.Millisecond) // let it append past the fill point, so the kill lands mid-write
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	open := func(label string) {
		start := time.Now()
		s, err := Open(recoveryConfig(dir), nil)
		if err != nil {
			b.Fatalf("%s: recovery failed: %v", label, err)
		}
		d := time.Since(start)
		b.ReportMetric(d.Seconds()*1000, label+"_ms")
		b.Logf("%s: Open %v, commit log %.2f GiB (min %d max %d), queue 0 max offset %d", label, d.Round(time.Millisecond),
			float64(s.MaxPhyOffset()-s.MinPhyOffset())/(1<<30), s.MinPhyOffset(), s.MaxPhyOffset(), s.MaxOffset("recovery", 0))
		if s.MaxOffset("recovery", 0) == 0 {
			b.Fatalf("%s: data lost", label)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	open("sigkill_warm")
	if os.Getenv("TIDE_BENCH_DROP_CACHES") == "1" {
		c := recoveryConfig(dir)
		if err := os.WriteFile(c.abortPath(), nil, 0o644); err != nil {
			b.Fatal(err)
		}
		syscall.Sync()
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0o644); err != nil {
			b.Logf("cannot drop caches: %v", err)
			return
		}
		open("crash_cold")
	}
}
