package mqclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/mqclient"
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
	topic := e.topic(t, 1)
	first, err := mqclient.NewTransactionProducer(func(context.Context, *mqclient.MessageExt) mqclient.TransactionState {
		return mqclient.TransactionUnknown
	}, e.fast(mqclient.WithProducerGroup("restarted-group"), mqclient.WithInstanceName("first"))...)
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

	rec := newRecorder()
	e.consumer(t, "g-restarted", topic, rec.handle, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))
	second, err := mqclient.NewTransactionProducer(func(context.Context, *mqclient.MessageExt) mqclient.TransactionState {
		return mqclient.TransactionCommit
	}, e.fast(mqclient.WithProducerGroup("restarted-group"), mqclient.WithInstanceName("second"), mqclient.WithTopics(topic))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { second.Shutdown(context.Background()) })
	waitFor(t, 30*time.Second, "the pending transaction committed by the new instance", func() bool { return rec.distinct() == 1 })
}
