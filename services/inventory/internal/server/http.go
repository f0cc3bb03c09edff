package server

import (
	"github.com/go-kratos/kratos/v2/transport/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	v1 "github.com/tidemq/tide/api/inventory/v1"
	"github.com/tidemq/tide/services/kit/api"

	"github.com/tidemq/tide/services/inventory/internal/service"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/fault"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
)

// NewHTTPServer returns the HTTP server with the API routes (written by
// hand: protoc-gen-go-http is not available), /healthz (the process
// runs), /readyz (database and Redis answer), /metrics (Prometheus),
// /v1/faults (fault switches, when fault.admin is on) and /v1/reconcile
// (the reservations job).
func NewHTTPServer(c *kitconf.Server, s *service.InventoryService, in *api.Input, ready api.Ready, faults *fault.Set, reg *prometheus.Registry,
	recon *rechttp.Jobs) *http.Server {
	srv := in.NewHTTPServer(c.GetHttp())
	api.RegisterHealth(srv, ready)
	srv.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// The fault API answers 403 unless fault.admin is on.
	srv.HandlePrefix("/v1/faults", faults.Handler(fault.Errors(in.EncodeError)))
	srv.HandlePrefix("/v1/reconcile/", recon.Handler(in))
	r := srv.Route("/")
	api.Route(r, "GET", "/v1/products", v1.Inventory_ListProducts_FullMethodName, api.Query[v1.ListProductsRequest], s.ListProducts)
	api.Route(r, "GET", "/v1/products/{id}", v1.Inventory_GetProduct_FullMethodName, api.Vars[v1.GetProductRequest], s.GetProduct)
	return srv
}
