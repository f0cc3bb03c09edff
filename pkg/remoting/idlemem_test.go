package remoting

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"
)

// BenchmarkIdleConnBytes reports what an open, idle connection costs the
// process after one request was answered on it (as a client that sent one
// heartbeat): the live heap ("heap-B/conn") and goroutine stack
// ("stack-B/conn") per connection, measured after a GC over 500 of them.
// The client ends are raw sockets in the same process (a few hundred
// bytes each, included). Not asserted: it is there to show a change of
// per-connection state (read buffer, goroutines, TLS sniffing) in
// numbers; the broker's scale run (docs/benchmarks) measures the RSS.
// On 2026-12-02: heap 34,231 B (32 KiB of it the fixed read buffer,
// whose untouched pages cost no RSS), stack 1,966 B; the build of
// 2026-11-30 evening: 34,140 B and 2,359 B; with the adaptive read
// buffer (readbuf.go, 512 B while quiet) 1,418 B and 2,163 B.
func BenchmarkIdleConnBytes(b *testing.B) {
	const conns = 500
	var heap, stack float64
	for b.Loop() {
		s := NewServer(ServerOptions{Logger: testLogger()})
		s.Handle(testCode, echo)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		go s.Serve(ln)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ncs := make([]net.Conn, 0, conns)
		for i := range conns {
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			ncs = append(ncs, nc)
			writeCmd(b, nc, request(i))
			readCmd(b, nc) // answered: the server holds the connection's state
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / conns
		stack = float64(int64(after.StackInuse)-int64(before.StackInuse)) / conns
		for _, nc := range ncs {
			nc.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.Shutdown(ctx); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
	b.ReportMetric(heap, "heap-B/conn")
	b.ReportMetric(stack, "stack-B/conn")
}
