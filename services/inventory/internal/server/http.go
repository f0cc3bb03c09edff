package server

import (
	"context"
	"encoding/json"
	nethttp "net/http"
	"time"

	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/transport/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	v1 "github.com/tidemq/tide/api/inventory/v1"
	"github.com/tidemq/tide/services/kit/api"

	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/inventory/internal/service"
	"github.com/tidemq/tide/services/kit/fault"
)

// NewHTTPServer returns the HTTP server with the API routes (written by
// hand: protoc-gen-go-http is not available), /healthz (the process
// runs), /readyz (database and Redis answer), /metrics (Prometheus),
// /v1/faults (fault switches, when fault.admin is on) and /v1/reconcile
// (the reservations job).
func NewHTTPServer(c *conf.Server, s *service.InventoryService, ready Pinger, faults *fault.Set, reg *prometheus.Registry,
	recon *Reconciler, logger log.Logger) *http.Server {
	in := api.New(api.Options{Logger: logger}, service.Schemas)
	srv := in.NewHTTPServer(c.GetHttp())
	registerHealth(srv, ready)
	srv.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// The fault API answers 403 unless fault.admin is on.
	srv.HandlePrefix("/v1/faults", faults.Handler(fault.Errors(in.EncodeError)))
	srv.HandlePrefix("/v1/reconcile/", recon.Handler(in))
	r := srv.Route("/")
	r.GET("/v1/products", func(ctx http.Context) error {
		var in v1.ListProductsRequest
		if err := ctx.BindQuery(&in); err != nil {
			return err
		}
		http.SetOperation(ctx, v1.Inventory_ListProducts_FullMethodName)
		h := ctx.Middleware(func(ctx context.Context, req any) (any, error) {
			return s.ListProducts(ctx, req.(*v1.ListProductsRequest))
		})
		out, err := h(ctx, &in)
		if err != nil {
			return err
		}
		return ctx.Result(200, out)
	})
	r.GET("/v1/products/{id}", func(ctx http.Context) error {
		var in v1.GetProductRequest
		if err := ctx.BindVars(&in); err != nil {
			return err
		}
		http.SetOperation(ctx, v1.Inventory_GetProduct_FullMethodName)
		h := ctx.Middleware(func(ctx context.Context, req any) (any, error) {
			return s.GetProduct(ctx, req.(*v1.GetProductRequest))
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
