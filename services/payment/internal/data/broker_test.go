package data

import (
	"context"
	"errors"
	"github.com/tidemq/tide/services/kit/topics"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/kit/reconcile"
)

// The broker job reports a half message nobody decides (its producer
// answers UNKNOWN) once it is older than the timeout, and the messages of
// a dead-letter topic, with evidence.
func TestBrokerJob(t *testing.T) {
	ctx := context.Background()
	ns := nameservertest.Start(t)
	brokertest.Start(t, ns)
	const topic, dlq = "stuck-events", "%DLQ%some-group"
	if err := topics.Ensure(ctx, []mqclient.Option{mqclient.WithNameServers(ns)}, topic, dlq); err != nil {
		t.Fatal(err)
	}
	p, err := mqclient.NewTransactionProducer(func(context.Context, *mqclient.MessageExt) mqclient.TransactionState {
		return mqclient.TransactionUnknown
	}, mqclient.WithNameServers(ns), mqclient.WithProducerGroup("stuck-producer"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	if _, _, err := p.SendInTransaction(ctx, &mqclient.Message{Topic: topic, Body: []byte("x"), Keys: []string{"o-stuck"}},
		func(context.Context) error { return mqclient.ErrTransactionUnknown }); !errors.Is(err, mqclient.ErrTransactionUnknown) {
		t.Fatalf("half message: %v", err)
	}
	dead, err := p.Send(ctx, &mqclient.Message{Topic: dlq, Body: []byte("poison"), Keys: []string{"o-dead"}, Tag: "OrderCreated"})
	if err != nil {
		t.Fatal(err)
	}
	job := &BrokerJob{NameServers: []string{ns}, HalfTimeout: time.Millisecond}
	tests := []struct {
		name string
		asOf time.Time
		want map[reconcile.Class]int
	}{
		{"young half message", time.Now().Add(-time.Hour), map[reconcile.Class]int{ClassDeadLetter: 1}},
		{"stuck half message", time.Now().Add(time.Second), map[reconcile.Class]int{ClassDeadLetter: 1, ClassStuckHalf: 1}},
	}
	for _, tt := range tests {
		var page reconcile.Page
		deadline := time.Now().Add(20 * time.Second)
		for {
			page, err = job.Check(ctx, reconcile.Scan{AsOf: tt.asOf, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Discrepancies) >= len(tt.want) || time.Now().After(deadline) {
				break // the DLQ message may take a moment to be indexed
			}
			time.Sleep(50 * time.Millisecond)
		}
		got := map[reconcile.Class]int{}
		for _, d := range page.Discrepancies {
			got[d.Class]++
			if d.Class == ClassDeadLetter && (d.Key != "dlq:some-group:"+dead.MsgID || d.Evidence["group"] != "some-group") {
				t.Fatalf("%s: dead letter %+v", tt.name, d)
			}
		}
		if len(got) != len(tt.want) || got[ClassDeadLetter] != tt.want[ClassDeadLetter] || got[ClassStuckHalf] != tt.want[ClassStuckHalf] {
			t.Fatalf("%s: found %v, want %v (%+v)", tt.name, got, tt.want, page.Discrepancies)
		}
	}
}
