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

	kerrors "github.com/go-kratos/kratos/v2/errors"
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
	tests := []struct {
		name        string
		admin       bool
		opts        []HandlerOption
		method      string
		path        string
		ctype       string
		body        string
		code        int
		wantEnabled bool   // after a 200
		reason      string // of an error
		field       string // metadata "field" of an error, when set
	}{
		{"list", true, nil, "GET", "/v1/faults", "", "", 200, false, "", ""},
		{"arm", true, nil, "PUT", "/v1/faults/deliver_twice", "", `{"enabled":true,"count":1}`, 200, true, "", ""},
		{"arm with delay", true, nil, "PUT", "/v1/faults/deliver_twice", "application/json", `{"enabled":true,"delay":"2s"}`, 200, true, "", ""},
		{"omitted disarms", true, nil, "PUT", "/v1/faults/deliver_twice", "", `{"count":1}`, 200, false, "", ""},
		{"omitted arms", true, []HandlerOption{ArmWhenEnabledOmitted()}, "PUT", "/v1/faults/deliver_twice", "", `{"count":1}`, 200, true, "", ""},
		{"explicit off", true, []HandlerOption{ArmWhenEnabledOmitted()}, "PUT", "/v1/faults/deliver_twice", "", `{"enabled":false}`, 200, false, "", ""},
		{"unknown", true, nil, "PUT", "/v1/faults/nope", "", `{"enabled":true}`, 404, false, ReasonInvalidFault, ""},
		{"bad body", true, nil, "PUT", "/v1/faults/deliver_twice", "", `{`, 400, false, "MALFORMED_BODY", ""},
		{"unknown field", true, nil, "PUT", "/v1/faults/deliver_twice", "", `{"enabled":true,"times":2}`, 400, false, ReasonInvalidArgument, "times"},
		{"wrong type", true, nil, "PUT", "/v1/faults/deliver_twice", "", `{"enabled":"yes"}`, 400, false, ReasonInvalidArgument, "enabled"},
		{"not JSON", true, nil, "PUT", "/v1/faults/deliver_twice", "text/plain", `enabled`, 415, false, "UNSUPPORTED_MEDIA_TYPE", ""},
		{"bad delay", true, nil, "PUT", "/v1/faults/deliver_twice", "", `{"enabled":true,"delay":"x"}`, 400, false, ReasonInvalidArgument, "delay"},
		{"negative delay", true, nil, "PUT", "/v1/faults/deliver_twice", "", `{"enabled":true,"delay":"-1s"}`, 400, false, ReasonInvalidArgument, "delay"},
		{"negative count", true, nil, "PUT", "/v1/faults/deliver_twice", "", `{"enabled":true,"count":-1}`, 400, false, ReasonInvalidArgument, "count"},
		{"reset", true, nil, "DELETE", "/v1/faults", "", "", 200, false, "", ""},
		{"method", true, nil, "POST", "/v1/faults", "", "", 405, false, ReasonMethodNotAllowed, ""},
		{"admin off", false, nil, "GET", "/v1/faults", "", "", 403, false, ReasonForbidden, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.admin, nil, "deliver_twice")
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(tt.method, tt.path, bytes.NewBufferString(tt.body))
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			s.Handler(tt.opts...).ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("%s %s: %d %s, want %d", tt.method, tt.path, rec.Code, rec.Body, tt.code)
			}
			if tt.code != nethttp.StatusOK {
				// The services' one error shape (services/kit/api).
				var out struct {
					Code     int
					Reason   string
					Message  string
					Metadata map[string]string
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Code != tt.code || out.Reason != tt.reason || out.Message == "" {
					t.Fatalf("error body %s (%v), want code %d reason %s and a message", rec.Body, err, tt.code, tt.reason)
				}
				if tt.field != "" && out.Metadata["field"] != tt.field {
					t.Fatalf("error body %s: field %q, want %q", rec.Body, out.Metadata["field"], tt.field)
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

// TestHTTPErrorsEncoder: a service's encoder receives every error (it
// logs a refused request once, as a warning).
func TestHTTPErrorsEncoder(t *testing.T) {
	var got []error
	h := New(true, nil, "deliver_twice").Handler(Errors(func(w nethttp.ResponseWriter, _ *nethttp.Request, err error) {
		got = append(got, err)
		w.WriteHeader(599)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("PUT", "/v1/faults/nope", bytes.NewBufferString(`{"enabled":true}`)))
	if rec.Code != 599 || len(got) != 1 || kerrors.FromError(got[0]).Reason != ReasonInvalidFault {
		t.Fatalf("status %d, errors %v: want the encoder called once with %s", rec.Code, got, ReasonInvalidFault)
	}
}
