package broker_test

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// member is a raw consumer connection that counts the
// NOTIFY_CONSUMER_IDS_CHANGED it receives.
type member struct {
	nc       net.Conn
	notified atomic.Int64
	answers  chan *protocol.Command
}

// joinGroup dials addr and registers clientID as a clustering consumer of
// group with one heartbeat; it returns once the broker answered.
func joinGroup(t *testing.T, addr, clientID, group string) *member {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	m := &member{nc: nc, answers: make(chan *protocol.Command, 16)}
	go func() {
		for {
			cmd, err := protocol.ReadCommand(nc, 0)
			if err != nil {
				return
			}
			switch {
			case cmd.IsResponse():
				m.answers <- cmd
			case cmd.Code == protocol.NotifyConsumerIDsChanged:
				m.notified.Add(1)
			}
		}
	}()
	hb := protocol.HeartbeatData{ClientID: clientID, ConsumerDataSet: []protocol.ConsumerData{{GroupName: group,
		ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
		SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "NotifyTopic", SubString: "*", ExpressionType: "TAG"}}}}}
	body, err := json.Marshal(hb)
	if err != nil {
		t.Fatal(err)
	}
	req := protocol.NewRequest(protocol.HeartBeat, nil, body)
	req.Opaque = 1
	frame, err := req.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-m.answers:
		if resp.Code != protocol.Success {
			t.Fatalf("heartbeat of %s: %d %s", clientID, resp.Code, resp.Remark)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("heartbeat of %s not answered", clientID)
	}
	return m
}

// TestNotifyCoalescedInBurst: 40 consumers join one group at once. Every
// member is told (at least once, after the last join), and the
// notifications are bounded per member instead of one per later join
// (40 joins cost 821 notifications before the per-group window).
func TestNotifyCoalescedInBurst(t *testing.T) {
	e := newEnv(t)
	const n = 40
	members := make([]*member, n)
	var wg sync.WaitGroup
	for i := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			members[i] = joinGroup(t, e.addr, uniq("burst"), "burstgroup")
		}()
	}
	wg.Wait()
	eventually(t, 10*time.Second, "every member notified", func() bool {
		for _, m := range members {
			if m.notified.Load() == 0 {
				return false
			}
		}
		return true
	})
	// Late notifications could only add to the count: give them time to
	// arrive before counting (an upper bound cannot be awaited).
	time.Sleep(time.Second)
	var total int64
	for _, m := range members {
		total += m.notified.Load()
	}
	t.Logf("%d notifications for %d members joining at once", total, n)
	if total > 4*n {
		t.Fatalf("%d notifications for %d members joining at once, want at most %d", total, n, 4*n)
	}
}

// TestNotifyNotDelayedByStuckMember: one member of a group stops reading
// (its connection's buffers are full and a write to it is stuck); when
// the group changes, every other member is still told promptly -- long
// before the broker's 30 s write timeout would free a notifier waiting on
// the stuck member. Two changes, so that the stuck member's place in the
// order of members cannot hide a wait on it.
func TestNotifyNotDelayedByStuckMember(t *testing.T) {
	e := newEnv(t)
	const group = "stuckgroup"
	var readers []*member
	for range 10 {
		readers = append(readers, joinGroup(t, e.addr, uniq("reader"), group))
	}
	stuck := joinGroup(t, e.addr, uniq("stuck"), group)
	floodUntilStuck(t, stuck.nc)
	for round := range 2 {
		before := make([]int64, len(readers))
		for i, r := range readers {
			before[i] = r.notified.Load()
		}
		readers = append(readers, joinGroup(t, e.addr, uniq("late"), group))
		before = append(before, 0)
		deadline := time.Now().Add(10 * time.Second)
		for i, r := range readers {
			for r.notified.Load() == before[i] {
				if time.Now().After(deadline) {
					t.Fatalf("round %d: member %d not told of the change within 10 s", round, i)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
}

// floodUntilStuck makes the broker's writes to nc block: it stops the
// member's reader (a read deadline in the past) and sends requests of an
// unknown code, each answered REQUEST_CODE_NOT_SUPPORTED, until the broker
// stops reading them because its answers no longer get through.
func floodUntilStuck(t *testing.T, nc net.Conn) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(-time.Second)) // the member's reader stops
	req := protocol.NewRequest(31999, nil, make([]byte, 64))
	frame, err := req.Encode()
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]byte, 0, len(frame)*1000)
	for range 1000 {
		batch = append(batch, frame...)
	}
	for i := 0; ; i++ {
		_ = nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
		if _, err := nc.Write(batch); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Logf("broker stopped reading after about %d requests", i*1000)
				return
			}
			t.Fatal(err)
		}
		if i > 10000 {
			t.Fatal("the broker never stopped reading")
		}
	}
}
