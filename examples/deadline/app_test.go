package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/examples/internal/testbed"
	"github.com/tidemq/tide/pkg/mqclient/delay"
)

// TestDeadline creates two orders due in 2 s, pays one, and checks that
// the other is cancelled once, after its deadline, while the paid one
// stays paid; paying the cancelled one is refused. With Tide extensions
// the paid order's timer is recalled; without them (a RocketMQ 4.x
// broker) the app falls back to delay levels and the paid order's firing
// is a no-op.
func TestDeadline(t *testing.T) {
	const levels = "1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s"
	bed := testbed.Start(t, func(o *broker.Options) { o.Store.MessageDelayLevel = levels })
	topic := bed.Topic(t, "deadlines", 2)
	var mu sync.Mutex
	fired := map[string][]delay.Fired{}
	ctx, cancelCtx := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancelCtx()
	a, err := newApp(ctx, config{DSN: bed.DSN, Topic: topic, Group: "deadlines", PayWithin: 2 * time.Second, Levels: levels,
		Client: bed.ClientOptions(), Log: testbed.Logger(), OnFire: func(f delay.Fired) {
			mu.Lock()
			fired[f.Key] = append(fired[f.Key], f)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	srv := httptest.NewServer(a.Routes())
	defer srv.Close()
	post := func(path, body string, want int) map[string]any {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode != want {
			t.Fatalf("POST %s %s: %d %v, want %d", path, body, resp.StatusCode, out, want)
		}
		return out
	}
	status := func(id string) string {
		var st string
		a.db.Raw("SELECT status FROM orders WHERE id = ?", id).Scan(&st)
		return st
	}
	created := time.Now()
	post("/orders", `{"id":"o-1"}`, http.StatusCreated)
	post("/orders", `{"id":"o-2"}`, http.StatusCreated)
	post("/orders", `{"id":"o-2"}`, http.StatusConflict)
	post("/orders", `{"id":"bad id"}`, http.StatusBadRequest)
	paid := post("/orders/o-2/pay", ``, http.StatusOK)
	wantRecall := "not-recallable"
	if brokertest.Extensions() {
		wantRecall = "recalled"
	}
	if paid["recall"] != wantRecall {
		t.Errorf("recall %v, want %s", paid["recall"], wantRecall)
	}
	testbed.WaitFor(t, 30*time.Second, "o-1 cancelled", func() bool { return status("o-1") == "CANCELLED" })
	if d := time.Since(created); d < 2*time.Second {
		t.Errorf("o-1 cancelled %v after it was created, before its deadline", d)
	}
	post("/orders/o-1/pay", ``, http.StatusConflict)
	if !brokertest.Extensions() { // the level message of o-2 still fires, and does nothing
		testbed.WaitFor(t, 30*time.Second, "o-2's firing", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(fired["o-2"]) > 0
		})
	}
	bed.WaitCaughtUp(t, "deadlines", topic)
	mu.Lock()
	defer mu.Unlock()
	if st := status("o-2"); st != "PAID" {
		t.Fatalf("o-2 is %s, want PAID", st)
	}
	acted := 0
	for _, f := range fired["o-1"] {
		if f.Acted {
			acted++
		}
	}
	if acted != 1 {
		t.Errorf("o-1 cancelled %d times: %+v", acted, fired["o-1"])
	}
	for _, f := range fired["o-2"] {
		if f.Acted {
			t.Errorf("paid o-2 was acted on: %+v", f)
		}
	}
}
