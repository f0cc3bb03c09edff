//go:build cluster

package failovertest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/tidemq/tide/broker/clustertest"
	"github.com/tidemq/tide/pkg/mqclient"
)

const topic, queues = "Failover", 4

// TestFailoverSIGKILL: three controllers, a NameServer and a broker group
// of two in controller mode (SYNC_MASTER, allAckInSyncStateSet). While the
// official client v2.1.2 and pkg/mqclient send, the master is killed with
// SIGKILL, kills times (2; 20 with -tags 'cluster long', or
// FAILOVER_KILLS). Each time: the controller elects the in-sync slave,
// which switches to master while running; the test measures the time from
// the kill to the first SEND_OK of a raw send to the new master, and to
// the first SEND_OK of each client after that; the killed broker is
// restarted, rejoins as slave (truncating what it wrote past the new
// epoch's start) and catches up until it is back in the SyncStateSet. At
// the end every message either client had acknowledged SEND_OK is read
// from the final master and from its slave, and no message of pkg/mqclient
// (idempotent sends: its retries across the failover carry the same
// stamp, which the promoted slave recognises) is stored twice; the
// official client's duplicates are counted and logged.
func TestFailoverSIGKILL(t *testing.T) {
	n := killCount(kills)
	g := newGroup(t, 3)
	g.startInSyncPair()

	l := newLedger()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	official := officialProducer(t, g.ns)
	mq := mqProducer(t, g.ns)
	wg.Add(2)
	go func() {
		defer wg.Done()
		sendLoop(stop, l, "official", func(ctx context.Context, body string) bool {
			res, err := official.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
			return err == nil && res.Status == primitive.SendOK
		})
	}()
	go func() {
		defer wg.Done()
		sendLoop(stop, l, "mqclient", mqSend(mq))
	}()
	defer func() {
		close(stop)
		wg.Wait()
	}()

	var writable, mqResume, officialResume []time.Duration
	for k := range n {
		old := g.master()
		before := time.Now()
		g.eventually(60*time.Second, "both clients sending before the kill", func() bool {
			return l.okSince("official", before) && l.okSince("mqclient", before)
		})
		killed := time.Now()
		if err := old.Kill(); err != nil {
			t.Fatal(err)
		}
		newMaster := g.newWritableMaster(old)
		ready := time.Now()
		writable = append(writable, ready.Sub(killed))
		g.eventually(60*time.Second, "pkg/mqclient sending again", func() bool { return l.okSince("mqclient", ready) })
		mqResume = append(mqResume, time.Since(killed))
		g.eventually(90*time.Second, "the official client sending again (its route refresh is every 30 s)", func() bool {
			return l.okSince("official", ready)
		})
		officialResume = append(officialResume, time.Since(killed))
		t.Logf("kill %d: new master %s writable after %v; pkg/mqclient after %v, official v2.1.2 after %v", k+1, newMaster,
			writable[k].Round(time.Millisecond), mqResume[k].Round(time.Millisecond), officialResume[k].Round(time.Millisecond))

		g.rejoin(old)
	}
	close(stop)
	wg.Wait()
	stop = make(chan struct{}) // for the deferred close

	m, _, err := g.replicaInfo()
	if err != nil {
		t.Fatal(err)
	}
	var slave *brokerProc
	for _, b := range g.all {
		if b.addr != m.MasterAddress {
			slave = b
		}
	}
	g.eventually(60*time.Second, "the slave caught up", func() bool {
		a, err1 := g.maxPhyOffset(m.MasterAddress)
		b, err2 := g.maxPhyOffset(slave.addr)
		return err1 == nil && err2 == nil && a == b
	})
	acked := l.snapshot()
	for _, addr := range []string{m.MasterAddress, slave.addr} {
		msgs, err := clustertest.PullAll(g.rc, addr, "check", topic, queues)
		if err != nil {
			t.Fatalf("read %s: %v", addr, err)
		}
		have := map[string]bool{}
		copies := map[string]int{}
		for _, msg := range msgs {
			have[string(msg.Body)] = true
			copies[string(msg.Body)]++
		}
		dups := map[string]int{}
		for body, n := range copies {
			if n > 1 {
				client, _, _ := strings.Cut(body, "-")
				dups[client] += n - 1
			}
		}
		t.Logf("%s: %d messages stored twice or more by pkg/mqclient (idempotent), %d by the official client", addr, dups["mqclient"], dups["official"])
		if dups["mqclient"] > 0 {
			t.Errorf("%s holds %d duplicates of pkg/mqclient's messages", addr, dups["mqclient"])
		}
		var lost []string
		for body := range acked {
			if !have[body] {
				lost = append(lost, body)
			}
		}
		if len(lost) > 0 {
			slices.Sort(lost)
			t.Errorf("%s lacks %d of %d acknowledged messages: %v", addr, len(lost), len(acked), lost[:min(len(lost), 20)])
		}
	}
	l.mu.Lock()
	t.Logf("%d messages acknowledged SEND_OK, %d official and %d pkg/mqclient sends not acknowledged", len(acked),
		l.errs["official"], l.errs["mqclient"])
	l.mu.Unlock()
	t.Logf("time from SIGKILL to a writable new master over %d kills: %s", n, distribution(writable))
	t.Logf("pkg/mqclient resumed: %s", distribution(mqResume))
	t.Logf("official v2.1.2 resumed: %s", distribution(officialResume))
}

// killCount is FAILOVER_KILLS when set, else def.
func killCount(def int) int {
	if v, err := strconv.Atoi(os.Getenv("FAILOVER_KILLS")); err == nil && v > 0 {
		return v
	}
	return def
}

// distribution formats min, median, p90 and max.
func distribution(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration {
		return s[min(len(s)-1, int(q*float64(len(s))))].Round(10 * time.Millisecond)
	}
	return fmt.Sprintf("min %v, median %v, p90 %v, max %v (n=%d)", s[0].Round(10*time.Millisecond), at(0.5), at(0.9),
		s[len(s)-1].Round(10*time.Millisecond), len(s))
}

// sendLoop sends bodies client-0, client-1, ... until stop.
func sendLoop(stop <-chan struct{}, l *ledger, client string, send func(context.Context, string) bool) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		body := fmt.Sprintf("%s-%d", client, i)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if send(ctx, body) {
			l.ok(client, body)
		} else {
			l.failed(client)
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
		time.Sleep(5 * time.Millisecond)
	}
}

// officialProducer starts an official v2.1.2 producer of group
// pg-official; opts are applied after the defaults (credentials).
func officialProducer(t *testing.T, ns string, opts ...producer.Option) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(append([]producer.Option{producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("pg-official"), producer.WithInstanceName(fmt.Sprintf("official-%d", time.Now().UnixNano())),
		producer.WithRetry(2), producer.WithSendMsgTimeout(3 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown() })
	return p
}

// mqSend is sendLoop's send for a pkg/mqclient producer.
func mqSend(p *mqclient.Producer) func(context.Context, string) bool {
	return func(ctx context.Context, body string) bool {
		res, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte(body)})
		return err == nil && res.Status == mqclient.SendOK
	}
}

// mqProducer starts a pkg/mqclient producer of group pg-mqclient; opts
// are applied after the defaults (another group, credentials).
func mqProducer(t *testing.T, ns string, opts ...mqclient.Option) *mqclient.Producer {
	t.Helper()
	// retries pinned to the killed master's queue wait 100 ms doubling to
	// 1 s: 16 of them span the election, so a send in flight at the kill
	// is retried on the new master (bounded by sendLoop's 10 s)
	p, err := mqclient.NewProducer(append([]mqclient.Option{mqclient.WithNameServers(ns), mqclient.WithProducerGroup("pg-mqclient"),
		mqclient.WithSendTimeout(3 * time.Second), mqclient.WithRetries(16)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	return p
}
