package fault

import (
	"bytes"
	"encoding/json"
	nethttp "net/http"
	"net/http/httptest"
	"testing"
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
	if err := s.Arm("nope", 0, 0); err == nil {
		t.Fatal("unknown switch armed")
	}
	var nilSet *Set
	if nilSet.Fire("a") {
		t.Fatal("nil set fired")
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
	s.Arm("crash", 1, 0)
	s.Crash("crash")
	if code != ExitCode {
		t.Fatalf("exit code %d, want %d", code, ExitCode)
	}
}

func TestHTTP(t *testing.T) {
	tests := []struct {
		name   string
		admin  bool
		method string
		path   string
		body   string
		code   int
	}{
		{"list", true, "GET", "/v1/faults", "", 200},
		{"arm", true, "PUT", "/v1/faults/deliver_twice", `{"enabled":true,"count":1}`, 200},
		{"unknown", true, "PUT", "/v1/faults/nope", `{"enabled":true}`, 404},
		{"bad body", true, "PUT", "/v1/faults/deliver_twice", `{`, 400},
		{"bad delay", true, "PUT", "/v1/faults/deliver_twice", `{"enabled":true,"delay":"x"}`, 400},
		{"reset", true, "DELETE", "/v1/faults", "", 200},
		{"admin off", false, "GET", "/v1/faults", "", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.admin, nil, "deliver_twice")
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, bytes.NewBufferString(tt.body)))
			if rec.Code != tt.code {
				t.Fatalf("%s %s: %d %s, want %d", tt.method, tt.path, rec.Code, rec.Body, tt.code)
			}
			if tt.code == nethttp.StatusOK {
				var out struct{ Faults []Status }
				if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Faults) != 1 {
					t.Fatalf("body %s: %v", rec.Body, err)
				}
			}
		})
	}
}
