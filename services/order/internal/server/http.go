package server

import (
	"context"
	nethttp "net/http"
	"strconv"

	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/transport/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	orderv1 "github.com/tidemq/tide/api/order/v1"

	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/fault"
	"github.com/tidemq/tide/services/order/internal/biz"
	"github.com/tidemq/tide/services/order/internal/conf"
	"github.com/tidemq/tide/services/order/internal/service"
)

// NewHTTPServer returns the HTTP server: the Order API routes (written by
// hand, as protoc-gen-go-http would generate them, so Kratos middleware and
// error encoding apply; bodies, fields and errors follow services/kit/api), GET /healthz (the process runs) and GET /readyz
// (the database and Redis answer), GET /metrics (Prometheus: the pattern
// packages' metrics) and, when fault.admin is on, /v1/faults.
func NewHTTPServer(c *conf.Server, order *service.OrderService, ready Readiness, faults *fault.Set, reg *prometheus.Registry, logger log.Logger) *http.Server {
	in := api.New(api.Options{Logger: logger}, service.Schemas)
	srv := in.NewHTTPServer(c.GetHttp())
	registerOrderHTTP(srv, order)
	srv.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// The fault API answers 403 unless fault.admin is on.
	srv.HandlePrefix("/v1/faults", faults.Handler(fault.Errors(in.EncodeError)))
	srv.HandleFunc("/healthz", func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok\n"))
	})
	srv.HandleFunc("/readyz", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if err := ready.Ready(r.Context()); err != nil {
			w.WriteHeader(nethttp.StatusServiceUnavailable)
			w.Write([]byte(err.Error() + "\n"))
			return
		}
		w.Write([]byte("ready\n"))
	})
	return srv
}

// registerOrderHTTP maps POST /v1/orders, GET /v1/orders (list) and GET
// /v1/orders/{id} to the service.
func registerOrderHTTP(srv *http.Server, s orderv1.OrderServer) {
	r := srv.Route("/")
	r.POST("/v1/orders", func(ctx http.Context) error {
		var in orderv1.CreateOrderRequest
		if err := ctx.Bind(&in); err != nil {
			return err
		}
		http.SetOperation(ctx, orderv1.Order_CreateOrder_FullMethodName)
		h := ctx.Middleware(func(ctx context.Context, req any) (any, error) {
			return s.CreateOrder(ctx, req.(*orderv1.CreateOrderRequest))
		})
		out, err := h(ctx, &in)
		if err != nil {
			return err
		}
		return ctx.Result(200, out)
	})
	r.GET("/v1/orders", func(ctx http.Context) error {
		q := ctx.Request().URL.Query()
		st, ok := service.ParseStatus(q.Get("status"))
		if !ok {
			return biz.ErrInvalidArgument.WithMetadata(map[string]string{"field": "status",
				"why": "one of CREATED, RESERVED, PAID, CANCELLED"})
		}
		in := orderv1.ListOrdersRequest{Status: st, UserId: q.Get("user_id"), PageToken: q.Get("page_token")}
		if l := q.Get("limit"); l != "" {
			n, err := strconv.ParseInt(l, 10, 32)
			if err != nil {
				return biz.ErrInvalidArgument.WithMetadata(map[string]string{"field": "limit", "why": "an integer"})
			}
			in.Limit = int32(n)
		}
		http.SetOperation(ctx, orderv1.Order_ListOrders_FullMethodName)
		h := ctx.Middleware(func(ctx context.Context, req any) (any, error) {
			return s.ListOrders(ctx, req.(*orderv1.ListOrdersRequest))
		})
		out, err := h(ctx, &in)
		if err != nil {
			return err
		}
		return ctx.Result(200, out)
	})
	r.GET("/v1/orders/{id}", func(ctx http.Context) error {
		var in orderv1.GetOrderRequest
		if err := ctx.BindQuery(&in); err != nil {
			return err
		}
		if err := ctx.BindVars(&in); err != nil {
			return err
		}
		http.SetOperation(ctx, orderv1.Order_GetOrder_FullMethodName)
		h := ctx.Middleware(func(ctx context.Context, req any) (any, error) {
			return s.GetOrder(ctx, req.(*orderv1.GetOrderRequest))
		})
		out, err := h(ctx, &in)
		if err != nil {
			return err
		}
		return ctx.Result(200, out)
	})
}
