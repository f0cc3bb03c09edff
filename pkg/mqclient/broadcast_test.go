package mqclient_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/tidetest"
)

func TestPushConsumerBroadcastingLocalOffsets(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 4)
	p := e.Producer(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	opts := func(dir, inst string) []mqclient.Option {
		return []mqclient.Option{mqclient.WithMessageModel(mqclient.Broadcasting), mqclient.WithOffsetDir(dir),
			mqclient.WithInstanceName(inst), mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst)}
	}
	a, b := tidetest.NewRecorder(), tidetest.NewRecorder()
	ca := e.Consumer(t, "g-bcast", topic, a.Handle, opts(dirA, "a")...)
	e.Consumer(t, "g-bcast", topic, b.Handle, opts(dirB, "b")...)
	send := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: []byte(strconv.Itoa(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(0, 40)
	tidetest.WaitFor(t, 10*time.Second, "both got everything", func() bool { return a.Distinct() == 40 && b.Distinct() == 40 })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ca.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	send(40, 60)
	again := tidetest.NewRecorder()
	e.Consumer(t, "g-bcast", topic, again.Handle, opts(dirA, "a")...)
	tidetest.WaitFor(t, 10*time.Second, "restarted member catches up", func() bool { return again.Distinct() == 20 })
	for _, m := range again.Messages() {
		if n, _ := strconv.Atoi(string(m.Body)); n < 40 {
			t.Errorf("message %d redelivered after a clean shutdown", n)
		}
	}
}
