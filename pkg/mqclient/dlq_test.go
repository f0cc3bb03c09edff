package mqclient_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/tidetest"
)

func TestPushConsumerDLQAndResend(t *testing.T) {
	e := startEnv(t)
	if !e.probe(t, "sendback") {
		t.Skip("broker does not support CONSUMER_SEND_MSG_BACK yet")
	}
	topic := e.Topic(t, 1)
	p := e.Producer(t)
	var failing atomic.Bool
	failing.Store(true)
	rec := tidetest.NewRecorder()
	h := func(ctx context.Context, m *mqclient.MessageExt) error {
		if failing.Load() {
			return errors.New("poison")
		}
		return rec.Handle(ctx, m)
	}
	const group = "g-dlq"
	e.Consumer(t, group, topic, h, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst), mqclient.WithMaxReconsumeTimes(0))
	res, err := p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: []byte("poison"), Keys: []string{"order-7"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dlq := mqclient.DLQTopicPrefix + group
	var dead []*mqclient.MessageExt
	tidetest.WaitFor(t, 15*time.Second, "message in the DLQ", func() bool {
		dead, err = e.Admin.QueryByUniqID(ctx, dlq, res.MsgID)
		return err == nil && len(dead) > 0
	})
	if string(dead[0].Body) != "poison" {
		t.Fatalf("DLQ message body %q", dead[0].Body)
	}
	failing.Store(false)
	if _, err := e.Admin.Resend(ctx, p, dead[0].OffsetMsgID); err != nil {
		t.Fatal(err)
	}
	tidetest.WaitFor(t, 15*time.Second, "resent message consumed", func() bool { return rec.Distinct() == 1 })
	if m := rec.Messages()[0]; string(m.Body) != "poison" || m.Topic != topic || len(m.Keys) != 1 || m.Keys[0] != "order-7" {
		t.Fatalf("resent message %+v", m.Message)
	}
}
