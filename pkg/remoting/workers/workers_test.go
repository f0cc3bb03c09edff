package workers

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPoolRunsEveryFunctionOnce(t *testing.T) {
	p := New(time.Second)
	const n = 10000
	var ran atomic.Int64
	var wg sync.WaitGroup
	wg.Add(n)
	for range n {
		p.Go(func() { ran.Add(1); wg.Done() })
	}
	wg.Wait()
	if ran.Load() != n {
		t.Fatalf("ran %d of %d", ran.Load(), n)
	}
}

// Go never waits for a busy worker: blocked functions do not hold up
// others (the transport's handlers may block, e.g. on a SYNC_FLUSH).
func TestPoolNeverQueuesBehindBlockedWork(t *testing.T) {
	p := New(time.Second)
	release := make(chan struct{})
	const blocked = 100
	var started sync.WaitGroup
	started.Add(blocked)
	for range blocked {
		p.Go(func() { started.Done(); <-release })
	}
	started.Wait() // all 100 run at once
	done := make(chan struct{})
	p.Go(func() { close(done) })
	<-done
	close(release)
}

// A worker reuses its goroutine for the next function, and idle workers
// exit after the idle time.
func TestPoolReusesAndRetiresWorkers(t *testing.T) {
	p := New(50 * time.Millisecond)
	before := runtime.NumGoroutine()
	for range 1000 {
		done := make(chan struct{})
		p.Go(func() { close(done) })
		<-done
	}
	// Serial work needs one worker, or a few while a finishing one has
	// not reached its receive yet, never one per function.
	if extra := runtime.NumGoroutine() - before; extra > 10 {
		t.Fatalf("%d extra goroutines after 1000 serial functions", extra)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("idle workers did not exit: %d goroutines, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestShared(t *testing.T) {
	if Shared() != Shared() || Shared() == nil {
		t.Fatal("Shared is not one pool")
	}
}

func BenchmarkPoolGo(b *testing.B) {
	p := New(time.Second)
	var wg sync.WaitGroup
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(1)
		p.Go(wg.Done)
		wg.Wait()
	}
}

func BenchmarkGoStatement(b *testing.B) {
	var wg sync.WaitGroup
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(1)
		go wg.Done()
		wg.Wait()
	}
}
