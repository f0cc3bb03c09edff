package mqclient_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
)

func TestPushConsumerBroadcastingLocalOffsets(t *testing.T) {
	e := startEnv(t)
	topic := e.topic(t, 4)
	p := e.producer(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	opts := func(dir, inst string) []mqclient.Option {
		return []mqclient.Option{mqclient.WithMessageModel(mqclient.Broadcasting), mqclient.WithOffsetDir(dir),
			mqclient.WithInstanceName(inst), mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst)}
	}
	a, b := newRecorder(), newRecorder()
	ca := e.consumer(t, "g-bcast", topic, a.handle, opts(dirA, "a")...)
	e.consumer(t, "g-bcast", topic, b.handle, opts(dirB, "b")...)
	send := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: []byte(strconv.Itoa(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(0, 40)
	waitFor(t, 10*time.Second, "both got everything", func() bool { return a.distinct() == 40 && b.distinct() == 40 })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ca.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	send(40, 60)
	again := newRecorder()
	e.consumer(t, "g-bcast", topic, again.handle, opts(dirA, "a")...)
	waitFor(t, 10*time.Second, "restarted member catches up", func() bool { return again.distinct() == 20 })
	again.mu.Lock()
	defer again.mu.Unlock()
	for _, m := range again.msgs {
		if n, _ := strconv.Atoi(string(m.Body)); n < 40 {
			t.Errorf("message %d redelivered after a clean shutdown", n)
		}
	}
}
