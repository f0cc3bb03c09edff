package api

import (
	"context"
	"encoding/json"
	nethttp "net/http"
	"time"

	khttp "github.com/go-kratos/kratos/v2/transport/http"
)

// ReadyTimeout bounds one /readyz check.
const ReadyTimeout = 2 * time.Second

// Ready reports whether a service's dependencies answer; /readyz fails
// (503) while it returns an error.
type Ready func(ctx context.Context) error

// RegisterHealth adds the services' probes to srv: GET /healthz answers
// 200 {"status":"ok"} while the process serves; GET /readyz answers 200
// {"status":"ready"} when ready returns nil within ReadyTimeout, else 503
// {"status":"unavailable","error":"..."}.
func RegisterHealth(srv *khttp.Server, ready Ready) {
	srv.HandleFunc("/healthz", func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		WriteJSON(w, nethttp.StatusOK, map[string]string{"status": "ok"})
	})
	srv.HandleFunc("/readyz", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
		defer cancel()
		if err := ready(ctx); err != nil {
			WriteJSON(w, nethttp.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": err.Error()})
			return
		}
		WriteJSON(w, nethttp.StatusOK, map[string]string{"status": "ready"})
	})
}

// WriteJSON writes v as the JSON body of a code answer.
func WriteJSON(w nethttp.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Bind fills a request message from an HTTP request (its body, query or
// path variables).
type Bind[Req any] func(ctx khttp.Context, in *Req) error

// Body binds the JSON body (the server's strict decoder).
func Body[Req any](ctx khttp.Context, in *Req) error { return ctx.Bind(in) }

// Query binds the query string.
func Query[Req any](ctx khttp.Context, in *Req) error { return ctx.BindQuery(in) }

// Vars binds the path variables.
func Vars[Req any](ctx khttp.Context, in *Req) error { return ctx.BindVars(in) }

// QueryVars binds the query string, then the path variables (which win).
func QueryVars[Req any](ctx khttp.Context, in *Req) error {
	if err := ctx.BindQuery(in); err != nil {
		return err
	}
	return ctx.BindVars(in)
}

// Route registers one unary API method on r as protoc-gen-go-http
// generates it: bind the request, name the operation (the gRPC full
// method name, so middleware, schemas and logs see one name for both
// transports), run call through the server's middleware chain and answer
// 200 with its reply; errors go to the server's error encoder.
func Route[Req, Reply any](r *khttp.Router, method, path, operation string, bind Bind[Req],
	call func(context.Context, *Req) (Reply, error)) {
	r.Handle(method, path, func(ctx khttp.Context) error {
		var in Req
		if err := bind(ctx, &in); err != nil {
			return err
		}
		khttp.SetOperation(ctx, operation)
		h := ctx.Middleware(func(ctx context.Context, req any) (any, error) {
			return call(ctx, req.(*Req))
		})
		out, err := h(ctx, &in)
		if err != nil {
			return err
		}
		return ctx.Result(200, out)
	})
}
