package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/internal/transaction"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// BenchmarkRestart measures how long a broker with a realistic store takes
// from New to accepting writes and being registered (issue 18: broker-a
// took 68 s at load 50), and how long the services that need not block
// that (timer restore, transaction recovery) take to finish:
//
//	TIDE_BENCH_RESTART_MSGS=200000 go test -run '^$' -bench BenchmarkRestart -benchtime 3x ./broker/
//
// The store holds TIDE_BENCH_RESTART_MSGS messages (default 200000): 70 %
// plain ones with keys over 8 queues, 10 % delay-level ones, 10 % timers an
// hour ahead (a tenth of them recalled), 10 % transactional (half
// committed, a quarter rolled back, the rest pending). Modes: clean (after
// Shutdown), crash (abort marker left: CRC-checked recovery from the
// checkpoint), crash-no-checkpoint (whole commit log re-validated and
// re-dispatched). Metrics: new-ms (store and metadata recovery), writable-ms
// (Start returned: registered and serving; a send is then answered
// SUCCESS), restored-ms (timers and transactions fully recovered).
func BenchmarkRestart(b *testing.B) {
	n := 200000
	if v, err := strconv.Atoi(os.Getenv("TIDE_BENCH_RESTART_MSGS")); err == nil && v > 0 {
		n = v
	}
	ns := nameservertest.Start(b)
	o := startupOptions(ns, b.TempDir())
	br := startBroker(b, o)
	want := fillRealistic(b, br, n)
	stopBroker(b, br)
	for _, mode := range []string{"clean", "crash", "crash-no-checkpoint"} {
		b.Run(mode, func(b *testing.B) {
			var newD, writable, restored time.Duration
			for i := 0; i < b.N; i++ {
				switch mode {
				case "crash":
					os.WriteFile(o.Store.StorePathRootDir+"/abort", nil, 0o644)
				case "crash-no-checkpoint":
					os.WriteFile(o.Store.StorePathRootDir+"/abort", nil, 0o644)
					os.Remove(o.Store.StorePathRootDir + "/checkpoint")
				}
				t0 := time.Now()
				br, err := New(o, benchLogger())
				if err != nil {
					b.Fatal(err)
				}
				newD += time.Since(t0)
				if err := br.Start(context.Background()); err != nil {
					b.Fatal(err)
				}
				if code := sendPlain(b, br); code != protocol.Success {
					b.Fatalf("send after start: code %d", code)
				}
				writable += time.Since(t0)
				for !br.restoredAll(want) {
					time.Sleep(5 * time.Millisecond)
				}
				restored += time.Since(t0)
				stopBroker(b, br)
			}
			b.ReportMetric(float64(newD.Milliseconds())/float64(b.N), "new-ms")
			b.ReportMetric(float64(writable.Milliseconds())/float64(b.N), "writable-ms")
			b.ReportMetric(float64(restored.Milliseconds())/float64(b.N), "restored-ms")
		})
	}
}

// restoredCounts are what a restarted broker must have recovered.
type restoredCounts struct{ timers, halves int64 }

func (b *Broker) restoredAll(want restoredCounts) bool {
	tx := b.tx()
	if tx == nil || !tx.Recovered() {
		return false
	}
	st := b.timers().Stats()
	return st.Pending >= want.timers && st.ScanOffset >= st.MaxOffset && int64(tx.Stats().Pending) >= want.halves
}

func startupOptions(ns, dir string) Options {
	o := DefaultOptions()
	o.BrokerName = "broker-bench"
	o.ListenAddr, o.BrokerIP1 = "127.0.0.1", "127.0.0.1"
	o.ListenPort, o.HAListenPort = 0, 0
	o.NamesrvAddr = ns
	o.Store.StorePathRootDir = dir
	o.Store.MappedFileSizeCommitLog = 64 << 20
	o.TideExtensions = true
	return o
}

func benchLogger() *slog.Logger {
	var w io.Writer = io.Discard
	if os.Getenv("TIDE_TEST_LOG") != "" {
		w = os.Stderr
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

func startBroker(tb testing.TB, o Options) *Broker {
	tb.Helper()
	br, err := New(o, benchLogger())
	if err != nil {
		tb.Fatal(err)
	}
	if err := br.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return br
}

func stopBroker(tb testing.TB, br *Broker) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := br.Shutdown(ctx); err != nil {
		tb.Fatal(err)
	}
}

// sendPlain sends one message over the client port and returns the
// response code.
func sendPlain(tb testing.TB, br *Broker) int16 {
	tb.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	h := protocol.SendMessageRequestHeader{ProducerGroup: "bench-pg", Topic: "bench", DefaultTopic: "TBW102", DefaultTopicQueueNums: 8,
		QueueID: 0, BornTimestamp: time.Now().UnixMilli()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, br.Addr(), protocol.NewRequest(protocol.SendMessageV2, h.V2().Encode(), []byte("after restart")))
	if err != nil {
		tb.Fatal(err)
	}
	return resp.Code
}

// fillRealistic stores n messages the way the send path stores them (see
// BenchmarkRestart) and returns the timers and halves left pending.
func fillRealistic(tb testing.TB, br *Broker, n int) restoredCounts {
	tb.Helper()
	ctx := context.Background()
	if _, _, err := br.topics.CreateSystem("bench", 8, protocol.PermRead|protocol.PermWrite); err != nil {
		tb.Fatal(err)
	}
	body := make([]byte, 512)
	msg := func(i int, props map[string]string) *protocol.MessageExt {
		m := &protocol.MessageExt{QueueID: int32(i % 8), BornTimestamp: time.Now().UnixMilli(), BornHost: br.storeHost, StoreHost: br.storeHost}
		m.Topic, m.Body = "bench", body
		m.Properties = map[string]string{protocol.PropUniqKey: fmt.Sprintf("bench-%d", i), protocol.PropKeys: "k" + strconv.Itoa(i)}
		for k, v := range props {
			m.Properties[k] = v
		}
		br.stampProperties(m)
		return m
	}
	var want restoredCounts
	var batch []*protocol.MessageExt
	batches := 0
	put := func(m *protocol.MessageExt) protocol.MessageExt {
		if _, err := br.store.PutMessage(ctx, m); err != nil {
			tb.Fatal(err)
		}
		return *m
	}
	for i := 0; i < n; i++ {
		switch i % 10 {
		case 1:
			m := msg(i, map[string]string{protocol.PropDelayLevel: strconv.Itoa(3 + i%16)})
			if err := br.divertDelayed(m); err != nil {
				tb.Fatal(err)
			}
			put(m)
		case 2:
			m := msg(i, map[string]string{protocol.PropTimerDelaySec: "3600"})
			if err := br.divertDelayed(m); err != nil {
				tb.Fatal(err)
			}
			put(m)
			if i%100 == 2 {
				r := msg(-i, map[string]string{"TIMER_DEL_UNIQKEY": m.Property(protocol.PropUniqKey)})
				if err := br.divertDelayed(r); err != nil {
					tb.Fatal(err)
				}
				put(r)
			} else {
				want.timers++
			}
		case 3:
			m := msg(i, map[string]string{protocol.PropProducerGroup: "bench-pg"})
			transaction.Prepare(m)
			half := put(m)
			br.tx().Added(&half)
			var d transaction.Decision
			switch i % 40 {
			case 3, 13:
				d = transaction.Commit
			case 23:
				d = transaction.Rollback
			default:
				want.halves++
				continue
			}
			if _, err := br.tx().End(ctx, transaction.EndRequest{ProducerGroup: "bench-pg", TranStateTableOffset: half.QueueOffset,
				CommitLogOffset: half.CommitLogOffset, Decision: d}); err != nil {
				tb.Fatal(err)
			}
		default:
			m := msg(i, nil)
			m.QueueID = int32(batches % 8)
			batch = append(batch, m)
			if len(batch) == 32 {
				batches++
				if _, err := br.store.PutMessages(ctx, batch); err != nil {
					tb.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	return want
}
