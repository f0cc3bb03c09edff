package mqclient_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/tidetest"
)

func TestTransactionProducer(t *testing.T) {
	e := startEnv(t, func(o *broker.Options) {
		o.TransactionCheckInterval = 500
		o.TransactionTimeOut = 500
	})
	if !e.probe(t, "transaction") {
		t.Skip("broker does not support END_TRANSACTION yet")
	}
	topic := e.Topic(t, 1)
	var checks atomic.Int32
	checker := func(ctx context.Context, m *mqclient.MessageExt) mqclient.TransactionState {
		checks.Add(1)
		if string(m.Body) == "unknown-then-commit" {
			return mqclient.TransactionCommit
		}
		return mqclient.TransactionRollback
	}
	p, err := mqclient.NewTransactionProducer(checker, e.Options(mqclient.WithProducerGroup("tx-group"))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	rec := tidetest.NewRecorder()
	e.Consumer(t, "g-tx", topic, rec.Handle, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))
	ctx := context.Background()

	_, st, err := p.SendInTransaction(ctx, &mqclient.Message{Topic: topic, Body: []byte("rolled-back")}, func(context.Context) error {
		return errors.New("insufficient funds")
	})
	if st != mqclient.TransactionRollback || err == nil {
		t.Fatalf("rollback: state %v err %v", st, err)
	}
	_, st, err = p.SendInTransaction(ctx, &mqclient.Message{Topic: topic, Body: []byte("committed")}, func(context.Context) error { return nil })
	if st != mqclient.TransactionCommit || err != nil {
		t.Fatalf("commit: state %v err %v", st, err)
	}
	_, st, err = p.SendInTransaction(ctx, &mqclient.Message{Topic: topic, Body: []byte("unknown-then-commit")}, func(context.Context) error {
		return mqclient.ErrTransactionUnknown
	})
	if st != mqclient.TransactionUnknown || !errors.Is(err, mqclient.ErrTransactionUnknown) {
		t.Fatalf("unknown: state %v err %v", st, err)
	}
	tidetest.WaitFor(t, 30*time.Second, "committed and checked-back messages", func() bool { return rec.Distinct() == 2 })
	if checks.Load() == 0 {
		t.Error("no check-back arrived")
	}
	for _, m := range rec.Messages() {
		if string(m.Body) == "rolled-back" {
			t.Error("rolled back message delivered")
		}
	}
	if _, _, err := e.Producer(t).SendInTransaction(ctx, &mqclient.Message{Topic: topic, Body: []byte("x")}, func(context.Context) error { return nil }); !errors.Is(err, mqclient.ErrInvalidOption) {
		t.Errorf("plain producer SendInTransaction: %v", err)
	}
}
