package server

import (
	"github.com/go-kratos/kratos/v2/transport/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	orderv1 "github.com/tidemq/tide/api/order/v1"

	"github.com/tidemq/tide/services/kit/api"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/fault"
	"github.com/tidemq/tide/services/order/internal/service"
)

// NewHTTPServer returns the HTTP server: the Order API routes (written by
// hand, as protoc-gen-go-http would generate them, so Kratos middleware and
// error encoding apply; bodies, fields and errors follow services/kit/api), GET /healthz (the process runs) and GET /readyz
// (the database and Redis answer; both JSON, services/kit/api.RegisterHealth), GET /metrics (Prometheus: the pattern
// packages' metrics) and, when fault.admin is on, /v1/faults.
func NewHTTPServer(c *kitconf.Server, order *service.OrderService, in *api.Input, ready api.Ready, faults *fault.Set, reg *prometheus.Registry) *http.Server {
	srv := in.NewHTTPServer(c.GetHttp())
	registerOrderHTTP(srv, order)
	srv.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// The fault API answers 403 unless fault.admin is on.
	srv.HandlePrefix("/v1/faults", faults.Handler(fault.Errors(in.EncodeError)))
	api.RegisterHealth(srv, ready)
	return srv
}

// registerOrderHTTP maps POST /v1/orders, GET /v1/orders (list) and GET
// /v1/orders/{id} to the service.
func registerOrderHTTP(srv *http.Server, s orderv1.OrderServer) {
	r := srv.Route("/")
	api.Route(r, "POST", "/v1/orders", orderv1.Order_CreateOrder_FullMethodName, api.Body[orderv1.CreateOrderRequest], s.CreateOrder)
	api.Route(r, "GET", "/v1/orders", orderv1.Order_ListOrders_FullMethodName, bindListOrders, s.ListOrders)
	api.Route(r, "GET", "/v1/orders/{id}", orderv1.Order_GetOrder_FullMethodName, api.QueryVars[orderv1.GetOrderRequest], s.GetOrder)
}

// bindListOrders reads GET /v1/orders's query (service.ListOrdersQuery).
func bindListOrders(ctx http.Context, in *orderv1.ListOrdersRequest) error {
	req, err := service.ListOrdersQuery(ctx.Request().URL.Query())
	if err != nil {
		return err
	}
	in.Status, in.UserId, in.PageToken, in.Limit = req.Status, req.UserId, req.PageToken, req.Limit
	return nil
}
