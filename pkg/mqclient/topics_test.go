package mqclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/tidetest"
)

// TestTransactionProducerWithTopicsGetsChecksBeforeSending: a restarted
// instance of a producer group that declares its topics answers the
// check-backs of the previous instance's half messages without sending
// anything itself.
func TestTransactionProducerWithTopicsGetsChecksBeforeSending(t *testing.T) {
	e := startEnv(t, func(o *broker.Options) {
		o.TransactionCheckInterval = 300
		o.TransactionTimeOut = 300
	})
	topic := e.Topic(t, 1)
	first, err := mqclient.NewTransactionProducer(func(context.Context, *mqclient.MessageExt) mqclient.TransactionState {
		return mqclient.TransactionUnknown
	}, e.Options(mqclient.WithProducerGroup("restarted-group"), mqclient.WithInstanceName("first"))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := first.SendInTransaction(context.Background(), &mqclient.Message{Topic: topic, Body: []byte("pending")},
		func(context.Context) error { return mqclient.ErrTransactionUnknown }); err == nil {
		t.Fatal("want the unknown state reported")
	}
	first.Shutdown(context.Background()) // the old instance is gone

	rec := tidetest.NewRecorder()
	e.Consumer(t, "g-restarted", topic, rec.Handle, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))
	second, err := mqclient.NewTransactionProducer(func(context.Context, *mqclient.MessageExt) mqclient.TransactionState {
		return mqclient.TransactionCommit
	}, e.Options(mqclient.WithProducerGroup("restarted-group"), mqclient.WithInstanceName("second"), mqclient.WithTopics(topic))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { second.Shutdown(context.Background()) })
	tidetest.WaitFor(t, 30*time.Second, "the pending transaction committed by the new instance", func() bool { return rec.Distinct() == 1 })
}
