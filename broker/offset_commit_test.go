package broker_test

import (
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestForwardOnlyCommit: UPDATE_CONSUMER_OFFSET with Tide's
// tideOnlyForward never moves a group's stored offset back (a queue's old
// owner committing after its new owner in a rebalance) and still answers
// SUCCESS; without it the broker takes any offset, as Apache RocketMQ's
// does (resets, the official client).
func TestForwardOnlyCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const group, topic = "fwdcg", "FwdTopic"
	steps := []struct {
		name    string
		offset  int64
		forward bool
		want    int64
	}{
		{"first commit, forward-only", 10, true, 10},
		{"forward-only, higher", 20, true, 20},
		{"forward-only, lower: kept", 15, true, 20},
		{"forward-only, equal", 20, true, 20},
		{"plain, lower: taken", 5, false, 5},
		{"forward-only after the plain move back", 7, true, 7},
	}
	for _, st := range steps {
		h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: 1, CommitOffset: st.offset, OnlyForward: st.forward}
		resp := e.invoke(protocol.NewRequest(protocol.UpdateConsumerOffset, h.Encode(), nil))
		if resp.Code != protocol.Success {
			t.Fatalf("%s: code %d %q", st.name, resp.Code, resp.Remark)
		}
		if got := e.committedOffset(group, topic, 1); got != st.want {
			t.Fatalf("%s: stored offset %d, want %d", st.name, got, st.want)
		}
	}
}
