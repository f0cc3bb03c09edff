package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/examples/internal/testbed"
)

// TestOrdered posts status changes for several orders concurrently (each
// order's changes one after the other, as its owner would) and checks
// that every projection went through the versions in order, once each.
func TestOrdered(t *testing.T) {
	bed := testbed.Start(t)
	topic := bed.Topic(t, "order-status", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := newApp(ctx, config{DSN: bed.DSN, Topic: topic, Group: "order-view", Client: bed.ClientOptions(), Log: testbed.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	srv := httptest.NewServer(a.Routes())
	defer srv.Close()

	flow := []string{"CREATED", "PAID", "SHIPPED", "DELIVERED"}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, st := range flow {
				resp, err := http.Post(fmt.Sprintf("%s/orders/o-%d/status", srv.URL, i), "application/json", bytes.NewBufferString(`{"status":"`+st+`"}`))
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					t.Errorf("o-%d %s: %d", i, st, resp.StatusCode)
				}
			}
		}()
	}
	wg.Wait()
	if resp, _ := http.Post(srv.URL+"/orders/o-1/status", "application/json", bytes.NewBufferString(`{"status":"LOST"}`)); resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an unknown status was not refused: %v", resp)
	}
	want := strings.Join(flow, ">")
	for i := 0; i < 8; i++ {
		var view struct {
			Status, History string
			Version         int64
		}
		testbed.WaitFor(t, 30*time.Second, fmt.Sprintf("o-%d delivered", i), func() bool {
			resp, err := http.Get(fmt.Sprintf("%s/orders/o-%d/view", srv.URL, i))
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&view) == nil && view.Version == int64(len(flow))
		})
		if view.History != want || view.Status != "DELIVERED" {
			t.Errorf("o-%d: history %q status %s, want %q", i, view.History, view.Status, want)
		}
	}
	// the guard counts an outcome after its commit: wait for the last one
	testbed.WaitFor(t, 10*time.Second, "every delivery counted", func() bool { return a.guard.Stats().Applied >= 8*int64(len(flow)) })
	if st := a.guard.Stats(); st.Applied != 8*int64(len(flow)) || st.Gaps != 0 || st.Stale != 0 || st.Conflicts != 0 {
		t.Errorf("guard stats %+v", st)
	}
}
