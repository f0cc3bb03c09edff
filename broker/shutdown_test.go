package broker_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// heartbeatConn dials addr and registers the connection with one heartbeat
// of clientID, as a producer of group (as `mqbench idle` does) or as a
// clustering push consumer of it. It waits for the answer, so the broker is
// known to have registered the client when it returns.
func heartbeatConn(addr, clientID, group string, consumer bool) (net.Conn, error) {
	hb := protocol.HeartbeatData{ClientID: clientID}
	if consumer {
		hb.ConsumerDataSet = []protocol.ConsumerData{{GroupName: group, ConsumeType: "CONSUME_PASSIVELY",
			MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
			SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "ShutdownTopic", SubString: "*", ExpressionType: "TAG"}}}}
	} else {
		hb.ProducerDataSet = []protocol.ProducerData{{GroupName: group}}
	}
	body, err := json.Marshal(hb)
	if err != nil {
		return nil, err
	}
	req := protocol.NewRequest(protocol.HeartBeat, nil, body)
	req.Opaque = 1
	frame, err := req.Encode()
	if err != nil {
		return nil, err
	}
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(frame); err != nil {
		nc.Close()
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	// The broker may send requests of its own (NOTIFY_CONSUMER_IDS_CHANGED)
	// before the answer: skip them.
	for {
		var lenBuf [4]byte
		if _, err := io.ReadFull(nc, lenBuf[:]); err != nil {
			nc.Close()
			return nil, fmt.Errorf("heartbeat answer: %w", err)
		}
		resp, err := protocol.DecodeFrame(mustRead(nc, binary.BigEndian.Uint32(lenBuf[:])))
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("heartbeat answer: %w", err)
		}
		if !resp.IsResponse() {
			continue
		}
		if resp.Code != protocol.Success {
			nc.Close()
			return nil, fmt.Errorf("heartbeat answered %d %s", resp.Code, resp.Remark)
		}
		break
	}
	_ = nc.SetDeadline(time.Time{})
	return nc, nil
}

// mustRead reads n bytes (fewer on error: the decode then fails).
func mustRead(r io.Reader, n uint32) []byte {
	buf := make([]byte, n)
	m, _ := io.ReadFull(r, buf)
	return buf[:m]
}

// fdBudget is how many connections the test may open in this process, at
// most want: each costs two descriptors (the client's and the broker's
// end), and the rest of the test binary needs some too.
func fdBudget(t *testing.T, want int) int {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return want
	}
	if n := int(rl.Cur/2) - 200; n < want {
		t.Logf("RLIMIT_NOFILE %d: %d connections instead of %d", rl.Cur, max(n, 0), want)
		return max(n, 0)
	}
	return want
}

// setNotify creates or updates a subscription group with NOTIFY_CONSUMER_IDS_CHANGED
// on or off.
func (e *env) setNotify(group string, on bool) {
	e.t.Helper()
	cfg := protocol.DefaultSubscriptionGroupConfig(group)
	cfg.NotifyConsumerIDsChangedEnable = on
	body, err := json.Marshal(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp := e.invoke(protocol.NewRequest(protocol.UpdateAndCreateSubscription, nil, body)); resp.Code != protocol.Success {
		e.t.Fatalf("update subscription group %s: %d %s", group, resp.Code, resp.Remark)
	}
}

// TestShutdownManyConnections: with thousands of idle connections, each
// registered by one heartbeat, Shutdown completes within a generous
// deadline, and afterwards the broker counts no open connection and every
// client sees its connection end. Completion is asserted, not a duration
// (the time taken is logged). Shapes:
//   - producers of one group: what `mqbench idle` opens (issue 11);
//   - producers with a group each: RemoveChannel once scanned every group
//     for every connection closed (connections x groups);
//   - consumers of one group: closing each member once told every other
//     member to rebalance (members² writes: 1,500 members took 10 s).
//     The group is registered with notifications off, so that registering
//     costs no members² writes either, and switched on before Shutdown.
//
// Without -short it opens 3,000 connections per shape (300 with -short),
// fewer if RLIMIT_NOFILE is too low.
func TestShutdownManyConnections(t *testing.T) {
	want := 3000
	if testing.Short() {
		want = 300
	}
	n := fdBudget(t, want)
	if n < 100 {
		t.Skip("RLIMIT_NOFILE too low for this test")
	}
	for _, tc := range []struct {
		name     string
		groups   int // groups the clients are spread over
		consumer bool
	}{
		{"producers of one group", 1, false},
		{"producers with a group each", n, false},
		{"consumers of one group", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			prefix := uniq("ShutdownGroup")
			group := func(i int) string { return fmt.Sprintf("%s-%d", prefix, i%tc.groups) }
			if tc.consumer {
				e.setNotify(group(0), false)
			}
			conns := make([]net.Conn, n)
			t.Cleanup(func() {
				for _, c := range conns {
					if c != nil {
						c.Close()
					}
				}
			})
			// Dial from a few goroutines: what is tested is the broker
			// with the connections open, not the dialling.
			const dialers = 8
			var wg sync.WaitGroup
			errs := make(chan error, dialers)
			t0 := time.Now()
			for w := range dialers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < n; i += dialers {
						c, err := heartbeatConn(e.addr, fmt.Sprintf("127.0.0.1@shutdown-%d", i),
							group(i), tc.consumer)
						if err != nil {
							errs <- fmt.Errorf("connection %d: %w", i, err)
							return
						}
						conns[i] = c
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if got := e.b.OpenConnections(); got < n {
				t.Fatalf("broker counts %d open connections, want at least %d", got, n)
			}
			if tc.consumer {
				if ids := e.consumerIDs(group(0)); len(ids) != n {
					t.Fatalf("group has %d members, want %d", len(ids), n)
				}
				e.setNotify(group(0), true)
			}
			t.Logf("%d connections registered in %v", n, time.Since(t0).Round(time.Millisecond))

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			t0 = time.Now()
			if err := e.b.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown with %d connections: %v (after %v)", n, err, time.Since(t0).Round(time.Millisecond))
			}
			t.Logf("Shutdown with %d connections took %v", n, time.Since(t0).Round(time.Millisecond))
			if got := e.b.OpenConnections(); got != 0 {
				t.Errorf("%d connections still open after Shutdown", got)
			}
			// Every client sees its connection end (EOF or a reset, not a
			// read timeout).
			for i, c := range conns {
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, err := io.Copy(io.Discard, c)
				if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
					t.Fatalf("connection %d: still open after Shutdown", i)
				}
			}
		})
	}
}
