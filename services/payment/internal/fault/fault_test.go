package fault

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tidemq/tide/services/kit/api"
)

// New arms what the config enables and ignores the rest; the handler arms
// a switch whose PUT omits "enabled" and answers errors with a reason.
func TestNewAndHandler(t *testing.T) {
	exits := 0
	s := New(map[string]Spec{DeliverTwice: {Enabled: true}, SlowLocalTx: {Enabled: true, Delay: time.Second},
		CrashAfterCommit: {}, "bogus": {Enabled: true}}, func(int) { exits++ }, nil)
	want := map[string]bool{DeliverTwice: true, SlowLocalTx: true}
	list := s.List()
	if len(list) != len(Names) {
		t.Fatalf("%d switches, want %d", len(list), len(Names))
	}
	for i, st := range list {
		if st.Name != Names[i] || st.Enabled != want[st.Name] {
			t.Fatalf("switch %d = %+v", i, st)
		}
	}
	if ok, d := s.Take(SlowLocalTx); !ok || d != time.Second {
		t.Fatalf("slow = %v %v", ok, d)
	}
	h := Handler(s, api.New(api.Options{}, nil).EncodeError)
	for _, tt := range []struct {
		path, body string
		code       int
	}{
		{"/v1/faults/" + CrashAfterCommit, `{"count":1}`, 200},
		{"/v1/faults/nope", `{}`, 404},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("PUT", tt.path, bytes.NewBufferString(tt.body)))
		if rec.Code != tt.code {
			t.Fatalf("PUT %s: %d %s", tt.path, rec.Code, rec.Body)
		}
		if tt.code != 200 {
			var e struct {
				Code            int
				Reason, Message string
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code != tt.code || e.Reason == "" || e.Message == "" {
				t.Fatalf("error body %s", rec.Body)
			}
		}
	}
	s.Crash(CrashAfterCommit)
	s.Crash(CrashAfterCommit)
	if exits != 1 {
		t.Fatalf("exits = %d, want 1", exits)
	}
}
