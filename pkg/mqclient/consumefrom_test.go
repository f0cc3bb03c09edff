package mqclient_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/tidetest"
)

func TestPushConsumerConsumeFromTimestamp(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 1)
	if !probeZeroIfNotFound(t, e, topic) {
		t.Skip("broker answers 0 for a new group on a young queue (RocketMQ 4.x semantics, setZeroIfNotFound=false not honoured): ConsumeFrom does not apply there")
	}
	p := e.Producer(t)
	ctx := context.Background()
	var last time.Time
	for i := 0; i < 5; i++ {
		if _, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("old" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
		last = time.Now()
	}
	// store timestamps have millisecond resolution: let the clock move on
	tidetest.WaitFor(t, time.Second, "clock tick", func() bool { return time.Since(last) > 20*time.Millisecond })
	from := time.Now()
	for i := 0; i < 5; i++ {
		if _, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("new" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	rec := tidetest.NewRecorder()
	e.Consumer(t, "g-from-ts", topic, rec.Handle, mqclient.WithConsumeTimestamp(from))
	tidetest.WaitFor(t, 10*time.Second, "new messages", func() bool {
		n := 0
		for _, m := range rec.Messages() {
			if strings.HasPrefix(string(m.Body), "new") {
				n++
			}
		}
		return n == 5
	})
	old := 0
	for _, m := range rec.Messages() {
		if strings.HasPrefix(string(m.Body), "old") {
			old++
		}
	}
	// RocketMQ's search returns the nearer neighbour when no message has
	// exactly the timestamp, so at most the last old message may show up.
	if old > 1 {
		t.Errorf("%d messages from before the timestamp delivered", old)
	}
}

// probeZeroIfNotFound reports whether the broker answers QUERY_NOT_FOUND for a new group that asks with
// setZeroIfNotFound=false (RocketMQ 5), rather than 0.
func probeZeroIfNotFound(t *testing.T, e *env, topic string) bool {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{Logger: tidetest.Logger()})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: "g-probe-zero", Topic: topic, QueueID: 0}
	ext := h.Encode()
	ext["setZeroIfNotFound"] = "false"
	resp, err := cl.Invoke(ctx, e.Broker.Addr(), protocol.NewRequest(protocol.QueryConsumerOffset, ext, nil))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Code == protocol.QueryNotFound
}
