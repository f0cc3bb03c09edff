package fault

import (
	"encoding/json"
	"errors"
	"fmt"
	nethttp "net/http"
	"strings"
	"time"
)

// Request is the body of PUT /v1/faults/{name}. Enabled false disarms the
// switch; an absent Enabled means false unless the handler was built with
// ArmWhenEnabledOmitted.
type Request struct {
	Enabled *bool  `json:"enabled"`
	Count   int    `json:"count"`
	Delay   string `json:"delay"`
}

// Reasons passed to an ErrorBody function: the kind of failure, stable
// across versions.
const (
	ReasonForbidden        = "FORBIDDEN"          // admin is off (403)
	ReasonMethodNotAllowed = "METHOD_NOT_ALLOWED" // 405
	ReasonInvalidArgument  = "INVALID_ARGUMENT"   // bad body or delay (400)
	ReasonInvalidFault     = "INVALID_FAULT"      // unknown switch (404) or bad count/delay (400)
)

// HandlerOption adapts Handler to a service's existing API.
type HandlerOption func(*handler)

// ErrorBody makes error answers f(reason, err) encoded as JSON, instead of
// the default {"error": err.Error()}.
func ErrorBody(f func(reason string, err error) any) HandlerOption {
	return func(h *handler) { h.errBody = f }
}

// ArmWhenEnabledOmitted makes a PUT body without "enabled" arm the switch
// (the default disarms it, as for "enabled": false).
func ArmWhenEnabledOmitted() HandlerOption {
	return func(h *handler) { h.armByDefault = true }
}

type handler struct {
	s            *Set
	errBody      func(reason string, err error) any
	armByDefault bool
}

// Handler serves the admin API under /v1/faults:
//
//	GET    /v1/faults         200 {"faults": List()}
//	DELETE /v1/faults         Reset, then 200 {"faults": List()}
//	PUT    /v1/faults/{name}  body Request: Arm (count 0 = every time, delay
//	                          a Go duration) or Disarm, then 200 {"faults": List()};
//	                          404 for an unknown name, 400 for a bad body
//	anything else             405
//
// Mount it with a prefix route for /v1/faults. When Admin() is false it
// answers 403 to everything; a service may instead not mount it at all.
// Errors are JSON, {"error": "..."} unless ErrorBody says otherwise.
func (s *Set) Handler(opts ...HandlerOption) nethttp.Handler {
	h := &handler{s: s, errBody: func(_ string, err error) any { return map[string]string{"error": err.Error()} }}
	for _, o := range opts {
		o(h)
	}
	return h
}

func (h *handler) fail(w nethttp.ResponseWriter, code int, reason string, err error) {
	writeJSON(w, code, h.errBody(reason, err))
}

func (h *handler) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	s := h.s
	if !s.Admin() {
		h.fail(w, nethttp.StatusForbidden, ReasonForbidden, errors.New("fault admin is disabled (fault.admin: false)"))
		return
	}
	name := strings.Trim(strings.TrimPrefix(r.URL.Path, "/v1/faults"), "/")
	switch {
	case r.Method == nethttp.MethodGet && name == "":
		writeJSON(w, nethttp.StatusOK, map[string]any{"faults": s.List()})
	case r.Method == nethttp.MethodDelete && name == "":
		s.Reset()
		writeJSON(w, nethttp.StatusOK, map[string]any{"faults": s.List()})
	case r.Method == nethttp.MethodPut && name != "":
		var req Request
		if err := json.NewDecoder(nethttp.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
			h.fail(w, nethttp.StatusBadRequest, ReasonInvalidArgument, fmt.Errorf("bad body: %w", err))
			return
		}
		var d time.Duration
		if req.Delay != "" {
			var err error
			if d, err = time.ParseDuration(req.Delay); err != nil {
				h.fail(w, nethttp.StatusBadRequest, ReasonInvalidArgument, fmt.Errorf("bad delay: %w", err))
				return
			}
		}
		arm := h.armByDefault
		if req.Enabled != nil {
			arm = *req.Enabled
		}
		var err error
		if arm {
			err = s.Arm(name, req.Count, d)
		} else {
			err = s.Disarm(name)
		}
		switch {
		case errors.Is(err, ErrUnknown):
			h.fail(w, nethttp.StatusNotFound, ReasonInvalidFault, err)
		case err != nil:
			h.fail(w, nethttp.StatusBadRequest, ReasonInvalidFault, err)
		default:
			writeJSON(w, nethttp.StatusOK, map[string]any{"faults": s.List()})
		}
	default:
		h.fail(w, nethttp.StatusMethodNotAllowed, ReasonMethodNotAllowed, errors.New("use GET or DELETE /v1/faults, PUT /v1/faults/{name}"))
	}
}

func writeJSON(w nethttp.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
