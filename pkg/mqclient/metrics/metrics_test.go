package metrics

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tidemq/tide/pkg/mqclient"
)

func TestMiddlewareAndInterceptor(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := m.Middleware("g")(func(ctx context.Context, msg *mqclient.MessageExt) error {
		if string(msg.Body) == "bad" {
			return errors.New("x")
		}
		return nil
	})
	h(context.Background(), &mqclient.MessageExt{Message: mqclient.Message{Topic: "t", Body: []byte("ok")}})
	h(context.Background(), &mqclient.MessageExt{Message: mqclient.Message{Topic: "t", Body: []byte("bad")}, ReconsumeTimes: 2})
	if v := testutil.ToFloat64(m.handled.WithLabelValues("t", "g", "ok")); v != 1 {
		t.Errorf("ok count %v", v)
	}
	if v := testutil.ToFloat64(m.handled.WithLabelValues("t", "g", "error")); v != 1 {
		t.Errorf("error count %v", v)
	}
	if v := testutil.ToFloat64(m.reconsumed.WithLabelValues("t", "g")); v != 1 {
		t.Errorf("redelivered count %v", v)
	}
	in := m.SendInterceptor()
	msg := &mqclient.Message{Topic: "t"}
	in.BeforeSend(context.Background(), msg)
	in.AfterSend(context.Background(), msg, nil, nil)
	if v := testutil.ToFloat64(m.sent.WithLabelValues("t", "ok")); v != 1 {
		t.Errorf("sent count %v", v)
	}
	if len(m.start) != 0 {
		t.Error("start times leak")
	}
	if _, err := New(reg); err == nil {
		t.Error("registering twice must fail")
	}
}
