package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/examples/internal/testbed"
	"github.com/tidemq/tide/pkg/mqclient"
)

// TestOutbox runs the service against a real broker and MariaDB: a paid
// order publishes exactly one PaymentSucceeded; a second POST for it is
// answered "already paid" without a second debit or event; a payment the
// balance cannot cover and a malformed request publish nothing.
func TestOutbox(t *testing.T) {
	bed := testbed.Start(t)
	topic := bed.Topic(t, "payments", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := newApp(ctx, config{DSN: bed.DSN, Topic: topic, Group: "payment-service", Client: bed.ClientOptions(), Log: testbed.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	if err := a.db.Exec("INSERT INTO accounts (id, balance) VALUES ('alice', 150)").Error; err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Routes())
	defer srv.Close()

	var mu sync.Mutex
	events := map[string]int{} // order id -> deliveries
	c, err := mqclient.NewPushConsumer("ledger", append(bed.ClientOptions(), mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))...)
	if err != nil {
		t.Fatal(err)
	}
	c.Subscribe(topic, "PaymentSucceeded", func(_ context.Context, m *mqclient.MessageExt) error {
		mu.Lock()
		events[m.Key()]++
		mu.Unlock()
		return nil
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown(context.Background())

	for _, s := range []struct {
		body string
		want int
	}{
		{`{"order_id":"o-1","account":"alice","amount":100}`, http.StatusCreated},
		{`{"order_id":"o-1","account":"alice","amount":100}`, http.StatusOK}, // replayed: already paid
		{`{"order_id":"o-2","account":"alice","amount":100}`, http.StatusConflict},
		{`{"order_id":"o 3","account":"alice","amount":1}`, http.StatusBadRequest},
		{`{"order_id":"o-4","account":"alice","amount":1,"extra":1}`, http.StatusBadRequest},
		{`{"order_id":"o-5","account":"alice","amount":50}`, http.StatusCreated},
	} {
		resp, err := http.Post(srv.URL+"/payments", "application/json", bytes.NewBufferString(s.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != s.want {
			t.Fatalf("POST %s: %d, want %d", s.body, resp.StatusCode, s.want)
		}
	}
	testbed.WaitFor(t, 30*time.Second, "PaymentSucceeded of o-1 and o-5", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return events["o-1"] > 0 && events["o-5"] > 0
	})
	var balance int64
	a.db.Raw("SELECT balance FROM accounts WHERE id = 'alice'").Scan(&balance)
	if balance != 0 {
		t.Errorf("balance %d, want 0 (two payments of 100 and 50)", balance)
	}
	// A sentinel sent after everything: once it is consumed, no event of
	// the refused payments can still be on its way.
	p, err := mqclient.NewProducer(bed.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	for q := 0; q < 2; q++ {
		if _, err := p.Send(ctx, &mqclient.Message{Topic: topic, Tag: "PaymentSucceeded", Keys: []string{"sentinel"}, Body: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	testbed.WaitFor(t, 30*time.Second, "the sentinels", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return events["sentinel"] == 2
	})
	mu.Lock()
	defer mu.Unlock()
	if events["o-1"] != 1 || events["o-5"] != 1 || len(events) != 3 {
		t.Fatalf("deliveries %v, want o-1 and o-5 once each (and the sentinels)", events)
	}
}
