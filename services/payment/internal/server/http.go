package server

import (
	"context"
	"encoding/json"
	stderrors "errors"
	"math"
	nethttp "net/http"
	"strings"
	"time"

	"github.com/go-kratos/kratos/v2/errors"
	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/transport/http"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tidemq/tide/services/kit/api"

	"github.com/tidemq/tide/services/kit/reconcile"
	"github.com/tidemq/tide/services/payment/internal/fault"

	v1 "github.com/tidemq/tide/api/payment/v1"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/data"
	"github.com/tidemq/tide/services/payment/internal/service"
)

// NewHTTPServer returns the HTTP server with the API routes (written by
// hand: protoc-gen-go-http is not available), the simulated gateway's
// statement, the reconciliation endpoints, /v1/faults (only when
// fault.admin is on), /metrics, /healthz (the process runs) and /readyz
// (database, Redis and the NameServer answer).
func NewHTTPServer(c *conf.Server, fc *conf.Fault, s *service.PaymentService, gw *data.Gateway, rc *Reconciler,
	faults *fault.Set, reg *prometheus.Registry, ready Pinger, logger log.Logger) *http.Server {
	in := api.New(api.Options{Logger: logger}, service.Schemas)
	srv := in.NewHTTPServer(c.GetHttp())
	registerHealth(srv, ready)
	srv.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	registerReconcile(srv, rc, in)
	if fc.GetAdmin() {
		srv.HandlePrefix("/v1/faults", fault.Handler(faults, in.EncodeError))
	}
	srv.HandleFunc("/v1/gateway/statement", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		after, err := api.QueryInt(r, "after", 0, math.MaxInt64, 0)
		if err != nil {
			in.EncodeError(w, r, err)
			return
		}
		lines, err := gw.Statement(r.Context(), after, 1000)
		if err != nil {
			in.EncodeError(w, r, errors.ServiceUnavailable("UNAVAILABLE", "the gateway statement could not be read; it was logged").WithCause(err))
			return
		}
		writeJSON(w, nethttp.StatusOK, map[string]any{"lines": lines})
	})
	r := srv.Route("/")
	r.POST("/v1/payments", func(ctx http.Context) error {
		var in v1.CreatePaymentRequest
		if err := ctx.Bind(&in); err != nil {
			return err
		}
		// The service reads the Idempotency-Key header through the
		// transport in ctx; it wins over the body field.
		http.SetOperation(ctx, v1.Payment_CreatePayment_FullMethodName)
		h := ctx.Middleware(func(ctx context.Context, req any) (any, error) {
			return s.CreatePayment(ctx, req.(*v1.CreatePaymentRequest))
		})
		out, err := h(ctx, &in)
		if err != nil {
			return err
		}
		return ctx.Result(200, out)
	})
	r.GET("/v1/payments/{id}", func(ctx http.Context) error {
		var in v1.GetPaymentRequest
		if err := ctx.BindVars(&in); err != nil {
			return err
		}
		http.SetOperation(ctx, v1.Payment_GetPayment_FullMethodName)
		h := ctx.Middleware(func(ctx context.Context, req any) (any, error) {
			return s.GetPayment(ctx, req.(*v1.GetPaymentRequest))
		})
		out, err := h(ctx, &in)
		if err != nil {
			return err
		}
		return ctx.Result(200, out)
	})
	return srv
}

func registerHealth(srv *http.Server, ready Pinger) {
	srv.HandleFunc("/healthz", func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		writeJSON(w, nethttp.StatusOK, map[string]string{"status": "ok"})
	})
	srv.HandleFunc("/readyz", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := ready.Ping(ctx); err != nil {
			writeJSON(w, nethttp.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": err.Error()})
			return
		}
		writeJSON(w, nethttp.StatusOK, map[string]string{"status": "ready"})
	})
}

func registerReconcile(srv *http.Server, rc *Reconciler, in *api.Input) {
	srv.HandlePrefix("/v1/reconcile/", nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		job := strings.TrimPrefix(r.URL.Path, "/v1/reconcile/")
		switch {
		case job == "runs" && r.Method == nethttp.MethodGet:
			limit, err := api.QueryInt(r, "limit", 1, 500, 50)
			if err != nil {
				in.EncodeError(w, r, err)
				return
			}
			orderID := r.URL.Query().Get("order_id")
			if len(orderID) > 64 {
				in.EncodeError(w, r, errors.BadRequest("INVALID_ARGUMENT", "order_id: at most 64 bytes"))
				return
			}
			runs, audit, err := rc.Runs(r.Context(), r.URL.Query().Get("job"), orderID, int(limit))
			if err != nil {
				in.EncodeError(w, r, unavailable(err))
				return
			}
			writeJSON(w, nethttp.StatusOK, map[string]any{"runs": runs, "audit": audit})
		case r.Method == nethttp.MethodPost && job != "" && !strings.Contains(job, "/"):
			var body struct {
				DryRun bool `json:"dry_run"`
			}
			if err := api.DecodeJSON(r, &body); err != nil {
				in.EncodeError(w, r, err)
				return
			}
			rep, err := rc.Run(r.Context(), job, body.DryRun)
			switch {
			case stderrors.Is(err, ErrUnknownJob):
				in.EncodeError(w, r, errors.NotFound("UNKNOWN_JOB", err.Error()))
			case stderrors.Is(err, reconcile.ErrLeaseHeld):
				in.EncodeError(w, r, errors.Conflict("RUN_IN_PROGRESS", "another run of the job is in progress"))
			case err != nil:
				in.EncodeError(w, r, unavailable(err))
			default:
				writeJSON(w, nethttp.StatusOK, rep)
			}
		default:
			in.EncodeError(w, r, errors.NotFound("NOT_FOUND", "POST /v1/reconcile/{job} or GET /v1/reconcile/runs?job=&order_id="))
		}
	}))
}

// unavailable is the 503 of a reconciliation that could not run: the
// cause is logged, not sent.
func unavailable(err error) error {
	return errors.ServiceUnavailable("UNAVAILABLE", "reconciliation could not run; it was logged").WithCause(err)
}

// rawJSON returns s as JSON when it is, else as a string.
func rawJSON(s string) any {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return s
}

func writeJSON(w nethttp.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
