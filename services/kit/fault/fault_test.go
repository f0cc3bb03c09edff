package fault

import (
	"bytes"
	"encoding/json"
	"errors"
	nethttp "net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

func TestShots(t *testing.T) {
	s := New(true, nil, "a", "b")
	if s.Fire("a") {
		t.Fatal("off switch fired")
	}
	if err := s.Arm("a", 2, 0); err != nil {
		t.Fatal(err)
	}
	if !s.Fire("a") || !s.Fire("a") || s.Fire("a") {
		t.Fatal("want exactly two shots")
	}
	if err := s.Arm("b", 0, 0); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if !s.Fire("b") {
			t.Fatal("count 0 must fire every time")
		}
	}
	s.Reset()
	if s.Fire("b") {
		t.Fatal("reset switch fired")
	}
	if err := s.Arm("nope", 0, 0); !errors.Is(err, ErrUnknown) {
		t.Fatalf("unknown switch: %v", err)
	}
	if err := s.Arm("a", -1, 0); err == nil || errors.Is(err, ErrUnknown) {
		t.Fatalf("negative count: %v", err)
	}
	var nilSet *Set
	if nilSet.Fire("a") {
		t.Fatal("nil set fired")
	}
	if ok, _ := nilSet.Take("a"); ok {
		t.Fatal("nil set took")
	}
}

func TestTakeDelay(t *testing.T) {
	s := New(false, nil, "slow")
	if err := s.Arm("slow", 1, time.Second); err != nil {
		t.Fatal(err)
	}
	if ok, d := s.Take("slow"); !ok || d != time.Second {
		t.Fatalf("take = %v %v", ok, d)
	}
	if ok, _ := s.Take("slow"); ok {
		t.Fatal("one shot fired twice")
	}
}

func TestListOrder(t *testing.T) {
	s := New(false, nil, "z", "a", "m", "a")
	_ = s.Arm("m", 0, 2*time.Second)
	var names []string
	for _, st := range s.List() {
		names = append(names, st.Name)
	}
	if !slices.Equal(names, []string{"z", "a", "m"}) {
		t.Fatalf("order %v, want New's order without duplicates", names)
	}
	if got := s.List()[2]; got != (Status{Name: "m", Enabled: true, Delay: "2s"}) {
		t.Fatalf("m = %+v", got)
	}
	if got := s.List()[0]; got != (Status{Name: "z", Delay: "0s"}) {
		t.Fatalf("z = %+v", got)
	}
}

func TestCrashExits(t *testing.T) {
	s := New(false, nil, "crash")
	code := -1
	s.SetExit(func(c int) { code = c })
	s.Crash("crash")
	if code != -1 {
		t.Fatal("disarmed crash exited")
	}
	_ = s.Arm("crash", 1, 0)
	s.Crash("crash")
	if code != ExitCode {
		t.Fatalf("exit code %d, want %d", code, ExitCode)
	}
}

func TestHTTP(t *testing.T) {
	reasonBody := ErrorBody(func(reason string, err error) any {
		return map[string]string{"reason": reason, "message": err.Error()}
	})
	tests := []struct {
		name        string
		admin       bool
		opts        []HandlerOption
		method      string
		path        string
		body        string
		code        int
		wantEnabled bool   // after a 200
		wantKey     string // key of an error body
	}{
		{"list", true, nil, "GET", "/v1/faults", "", 200, false, ""},
		{"arm", true, nil, "PUT", "/v1/faults/deliver_twice", `{"enabled":true,"count":1}`, 200, true, ""},
		{"omitted disarms", true, nil, "PUT", "/v1/faults/deliver_twice", `{"count":1}`, 200, false, ""},
		{"omitted arms", true, []HandlerOption{ArmWhenEnabledOmitted()}, "PUT", "/v1/faults/deliver_twice", `{"count":1}`, 200, true, ""},
		{"explicit off", true, []HandlerOption{ArmWhenEnabledOmitted()}, "PUT", "/v1/faults/deliver_twice", `{"enabled":false}`, 200, false, ""},
		{"unknown", true, nil, "PUT", "/v1/faults/nope", `{"enabled":true}`, 404, false, "error"},
		{"unknown reason", true, []HandlerOption{reasonBody}, "PUT", "/v1/faults/nope", `{"enabled":true}`, 404, false, "reason"},
		{"bad body", true, nil, "PUT", "/v1/faults/deliver_twice", `{`, 400, false, "error"},
		{"bad delay", true, []HandlerOption{reasonBody}, "PUT", "/v1/faults/deliver_twice", `{"enabled":true,"delay":"x"}`, 400, false, "reason"},
		{"negative count", true, nil, "PUT", "/v1/faults/deliver_twice", `{"enabled":true,"count":-1}`, 400, false, "error"},
		{"reset", true, nil, "DELETE", "/v1/faults", "", 200, false, ""},
		{"method", true, nil, "POST", "/v1/faults", "", 405, false, "error"},
		{"admin off", false, nil, "GET", "/v1/faults", "", 403, false, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.admin, nil, "deliver_twice")
			rec := httptest.NewRecorder()
			s.Handler(tt.opts...).ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, bytes.NewBufferString(tt.body)))
			if rec.Code != tt.code {
				t.Fatalf("%s %s: %d %s, want %d", tt.method, tt.path, rec.Code, rec.Body, tt.code)
			}
			if tt.code != nethttp.StatusOK {
				var out map[string]string
				if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out[tt.wantKey] == "" {
					t.Fatalf("error body %s: %v, want key %q", rec.Body, err, tt.wantKey)
				}
				return
			}
			var out struct{ Faults []Status }
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Faults) != 1 {
				t.Fatalf("body %s: %v", rec.Body, err)
			}
			if out.Faults[0].Enabled != tt.wantEnabled {
				t.Fatalf("enabled = %v, want %v", out.Faults[0].Enabled, tt.wantEnabled)
			}
		})
	}
}
