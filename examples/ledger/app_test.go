package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tidemq/tide/examples/internal/testbed"
	"github.com/tidemq/tide/pkg/mqclient"
)

// TestLedger sends each PaymentSucceeded twice (as a producer retry or a
// redelivery would), once more while Redis is down, and checks one ledger
// line per order; refunds replay their first answer for the same
// Idempotency-Key and refuse the key for another body.
func TestLedger(t *testing.T) {
	bed := testbed.Start(t)
	rs := testbed.Redis(t)
	topic := bed.Topic(t, "payments", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := newApp(ctx, config{DSN: bed.DSN, RedisAddr: rs.Addr(), Topic: topic, Group: "ledger", Client: bed.ClientOptions(), Log: testbed.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	p, err := mqclient.NewProducer(bed.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	send := func(order string) {
		t.Helper()
		m := &mqclient.Message{Topic: topic, Tag: "PaymentSucceeded", Keys: []string{order}, Body: []byte(`{"order_id":"` + order + `","amount":100}`)}
		if _, err := p.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	count := func(order string) (n int64) {
		a.db.Raw("SELECT COUNT(*) FROM ledger WHERE order_id = ? AND kind = 'payment'", order).Scan(&n)
		return n
	}
	send("o-1")
	send("o-1")
	send("o-2")
	testbed.WaitFor(t, 30*time.Second, "o-1 and o-2 booked", func() bool { return count("o-1") == 1 && count("o-2") == 1 })
	rs.Stop() // Redis gone: the dedup record in the database still decides
	send("o-1")
	send("o-3")
	testbed.WaitFor(t, 30*time.Second, "o-3 booked without Redis", func() bool { return count("o-3") == 1 })
	if err := rs.Start(); err != nil {
		t.Fatal(err)
	}
	send("o-2")
	send("o-4")
	testbed.WaitFor(t, 30*time.Second, "o-4 booked", func() bool { return count("o-4") == 1 })
	bed.WaitCaughtUp(t, "ledger", topic) // every duplicate was handled
	for _, o := range []string{"o-1", "o-2", "o-3", "o-4"} {
		if n := count(o); n != 1 {
			t.Errorf("%s booked %d times", o, n)
		}
	}

	srv := httptest.NewServer(a.Routes())
	defer srv.Close()
	for _, s := range []struct {
		key, body, replayed string
		want                int
	}{
		{"r-1", `{"order_id":"o-1","amount":10}`, "", http.StatusOK},
		{"r-1", `{"order_id":"o-1","amount":10}`, "true", http.StatusOK},
		{"r-1", `{"order_id":"o-1","amount":99}`, "", http.StatusUnprocessableEntity},
		{"", `{"order_id":"o-1","amount":10}`, "", http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/refunds", bytes.NewBufferString(s.body))
		if s.key != "" {
			req.Header.Set("Idempotency-Key", s.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != s.want || resp.Header.Get("Idempotent-Replayed") != s.replayed {
			t.Fatalf("refund %q %s: %d replayed=%q, want %d %q", s.key, s.body, resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), s.want, s.replayed)
		}
	}
	var refunds int64
	a.db.Raw("SELECT COUNT(*) FROM ledger WHERE kind = 'refund'").Scan(&refunds)
	if refunds != 1 {
		t.Errorf("%d refunds booked, want 1", refunds)
	}
}
