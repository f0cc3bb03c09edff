package fault

import (
	"encoding/json"
	"errors"
	nethttp "net/http"
	"strings"
	"time"
)

// Request is the body of PUT /v1/faults/{name}.
type Request struct {
	Enabled bool   `json:"enabled"`
	Count   int    `json:"count"`
	Delay   string `json:"delay"`
}

// Handler serves the admin API (GET /v1/faults, PUT /v1/faults/{name},
// DELETE /v1/faults). Mount it under /v1/faults only when Admin() is true;
// otherwise it answers 403 to everything.
func (s *Set) Handler() nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if !s.Admin() {
			writeJSON(w, nethttp.StatusForbidden, map[string]string{"error": "fault admin is disabled (fault.admin: false)"})
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
			if err := json.NewDecoder(nethttp.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
				writeJSON(w, nethttp.StatusBadRequest, map[string]string{"error": "bad body: " + err.Error()})
				return
			}
			var d time.Duration
			if req.Delay != "" {
				var err error
				if d, err = time.ParseDuration(req.Delay); err != nil {
					writeJSON(w, nethttp.StatusBadRequest, map[string]string{"error": "bad delay: " + err.Error()})
					return
				}
			}
			var err error
			if req.Enabled {
				err = s.Arm(name, req.Count, d)
			} else {
				err = s.Disarm(name)
			}
			switch {
			case errors.Is(err, ErrUnknown):
				writeJSON(w, nethttp.StatusNotFound, map[string]string{"error": err.Error()})
			case err != nil:
				writeJSON(w, nethttp.StatusBadRequest, map[string]string{"error": err.Error()})
			default:
				writeJSON(w, nethttp.StatusOK, map[string]any{"faults": s.List()})
			}
		default:
			writeJSON(w, nethttp.StatusMethodNotAllowed, map[string]string{"error": "use GET or DELETE /v1/faults, PUT /v1/faults/{name}"})
		}
	})
}

func writeJSON(w nethttp.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
