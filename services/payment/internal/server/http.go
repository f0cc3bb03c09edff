package server

import (
	"context"
	"encoding/json"
	nethttp "net/http"
	"strconv"
	"time"

	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/middleware/logging"
	"github.com/go-kratos/kratos/v2/middleware/recovery"
	"github.com/go-kratos/kratos/v2/transport/http"

	v1 "github.com/tidemq/tide/api/payment/v1"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/data"
	"github.com/tidemq/tide/services/payment/internal/service"
)

// NewHTTPServer returns the HTTP server with the API routes (written by
// hand: protoc-gen-go-http is not available), the simulated gateway's
// statement, /healthz (the process runs) and /readyz (database and Redis
// answer).
func NewHTTPServer(c *conf.Server, s *service.PaymentService, gw *data.Gateway, ready Pinger, logger log.Logger) *http.Server {
	opts := []http.ServerOption{http.Middleware(recovery.Recovery(), logging.Server(logger))}
	if c.GetHttp().GetNetwork() != "" {
		opts = append(opts, http.Network(c.GetHttp().GetNetwork()))
	}
	if c.GetHttp().GetAddr() != "" {
		opts = append(opts, http.Address(c.GetHttp().GetAddr()))
	}
	if c.GetHttp().GetTimeout() != nil {
		opts = append(opts, http.Timeout(c.GetHttp().GetTimeout().AsDuration()))
	}
	srv := http.NewServer(opts...)
	registerHealth(srv, ready)
	srv.HandleFunc("/v1/gateway/statement", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		lines, err := gw.Statement(r.Context(), after, 1000)
		if err != nil {
			writeJSON(w, nethttp.StatusServiceUnavailable, map[string]string{"error": err.Error()})
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

func writeJSON(w nethttp.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
