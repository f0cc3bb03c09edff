package fault

import (
	"encoding/json"
	"errors"
	"fmt"
	nethttp "net/http"
	"strings"
	"time"

	kerrors "github.com/go-kratos/kratos/v2/errors"

	"github.com/tidemq/tide/services/kit/api"
)

// Request is the body of PUT /v1/faults/{name}. Enabled false disarms the
// switch; an absent Enabled means false unless the handler was built with
// ArmWhenEnabledOmitted.
type Request struct {
	Enabled *bool  `json:"enabled"`
	Count   int    `json:"count"`
	Delay   string `json:"delay"`
}

// Reasons of the handler's errors (the services' one error shape,
// services/kit/api), stable across versions.
const (
	ReasonForbidden        = "FORBIDDEN"          // admin is off (403)
	ReasonMethodNotAllowed = "METHOD_NOT_ALLOWED" // 405
	ReasonInvalidArgument  = api.ReasonInvalidArgument
	ReasonInvalidFault     = "INVALID_FAULT" // unknown switch (404) or bad count (400)
)

// HandlerOption adapts Handler to a service's API.
type HandlerOption func(*handler)

// Errors makes the handler answer its errors with encode, the service's
// error encoder (api.Input.EncodeError: the one JSON shape, and one log
// line per refused request). The default encodes the same shape and logs
// nothing.
func Errors(encode func(nethttp.ResponseWriter, *nethttp.Request, error)) HandlerOption {
	return func(h *handler) { h.encode = encode }
}

// ArmWhenEnabledOmitted makes a PUT body without "enabled" arm the switch
// (the default disarms it, as for "enabled": false).
func ArmWhenEnabledOmitted() HandlerOption {
	return func(h *handler) { h.armByDefault = true }
}

type handler struct {
	s            *Set
	encode       func(nethttp.ResponseWriter, *nethttp.Request, error)
	armByDefault bool
}

// Handler serves the admin API under /v1/faults:
//
//	GET    /v1/faults         200 {"faults": List()}
//	DELETE /v1/faults         Reset, then 200 {"faults": List()}
//	PUT    /v1/faults/{name}  body Request: Arm (count 0 = every time, delay
//	                          a Go duration) or Disarm, then 200 {"faults": List()};
//	                          404 INVALID_FAULT for an unknown name, 400 for a bad body
//	anything else             405 METHOD_NOT_ALLOWED
//
// Mount it with a prefix route for /v1/faults. When Admin() is false it
// answers 403 FORBIDDEN to everything; a service may instead not mount it
// at all. Errors are Kratos errors in the services' one JSON shape
// {code, reason, message, metadata} (services/kit/api); the body is read
// with api.DecodeJSON (JSON only, strict, size-limited by the server).
func (s *Set) Handler(opts ...HandlerOption) nethttp.Handler {
	h := &handler{s: s, encode: api.New(api.Options{}, nil).EncodeError}
	for _, o := range opts {
		o(h)
	}
	return h
}

func (h *handler) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	if err := h.serve(w, r); err != nil {
		h.encode(w, r, err)
	}
}

func (h *handler) serve(w nethttp.ResponseWriter, r *nethttp.Request) error {
	s := h.s
	if !s.Admin() {
		return kerrors.Forbidden(ReasonForbidden, "the fault admin API is disabled (fault.admin: false)")
	}
	name := strings.Trim(strings.TrimPrefix(r.URL.Path, "/v1/faults"), "/")
	switch {
	case r.Method == nethttp.MethodGet && name == "":
	case r.Method == nethttp.MethodDelete && name == "":
		s.Reset()
	case r.Method == nethttp.MethodPut && name != "":
		if err := h.put(r, name); err != nil {
			return err
		}
	default:
		return kerrors.New(nethttp.StatusMethodNotAllowed, ReasonMethodNotAllowed,
			fmt.Sprintf("%s %s is not served: use GET or DELETE /v1/faults, PUT /v1/faults/{name}", r.Method, r.URL.Path))
	}
	writeJSON(w, nethttp.StatusOK, map[string]any{"faults": s.List()})
	return nil
}

// put arms or disarms the switch name as the body says.
func (h *handler) put(r *nethttp.Request, name string) error {
	var req Request
	if err := api.DecodeJSON(r, &req); err != nil {
		return err
	}
	if req.Count < 0 {
		return api.Invalid("count", "must be 0 (fire every time) or a positive number of shots, got %d", req.Count)
	}
	var d time.Duration
	if req.Delay != "" {
		var err error
		if d, err = time.ParseDuration(req.Delay); err != nil || d < 0 {
			return api.Invalid("delay", "must be a non-negative Go duration such as 3s or 500ms, got %q", clip(req.Delay))
		}
	}
	arm := h.armByDefault
	if req.Enabled != nil {
		arm = *req.Enabled
	}
	var err error
	if arm {
		err = h.s.Arm(name, req.Count, d)
	} else {
		err = h.s.Disarm(name)
	}
	switch {
	case errors.Is(err, ErrUnknown):
		return kerrors.NotFound(ReasonInvalidFault, fmt.Sprintf("no fault switch is named %q; known: %s", clip(name), strings.Join(h.s.Names(), ", "))).
			WithMetadata(map[string]string{"name": clip(name)})
	case err != nil:
		return kerrors.BadRequest(ReasonInvalidFault, err.Error()).WithMetadata(map[string]string{"name": clip(name)})
	}
	return nil
}

// clip bounds a client-sent string echoed in an error.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func writeJSON(w nethttp.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
