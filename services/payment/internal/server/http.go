package server

import (
	"github.com/go-kratos/kratos/v2/transport/http"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"

	"github.com/tidemq/tide/services/payment/internal/fault"

	v1 "github.com/tidemq/tide/api/payment/v1"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/service"
)

// NewHTTPServer returns the HTTP server with the API routes (written by
// hand: protoc-gen-go-http is not available), the simulated gateway's
// statement, the reconciliation endpoints, /v1/faults (only when
// fault.admin is on), /metrics, /healthz (the process runs) and /readyz
// (database, Redis and the NameServer answer).
func NewHTTPServer(c *kitconf.Server, fc *conf.Fault, s *service.PaymentService, gw *service.GatewayService, rc *rechttp.Jobs,
	faults *fault.Set, reg *prometheus.Registry, ready api.Ready, in *api.Input) *http.Server {
	srv := in.NewHTTPServer(c.GetHttp())
	api.RegisterHealth(srv, ready)
	srv.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv.HandlePrefix("/v1/reconcile/", rc.Handler(in))
	if fc.GetAdmin() {
		srv.HandlePrefix("/v1/faults", fault.Handler(faults, in.EncodeError))
	}
	srv.HandleFunc("/v1/gateway/statement", gw.Statement(in.EncodeError))
	r := srv.Route("/")
	// The service reads the Idempotency-Key header through the transport
	// in ctx; it wins over the body field.
	api.Route(r, "POST", "/v1/payments", v1.Payment_CreatePayment_FullMethodName, api.Body[v1.CreatePaymentRequest], s.CreatePayment)
	api.Route(r, "GET", "/v1/payments/{id}", v1.Payment_GetPayment_FullMethodName, api.Vars[v1.GetPaymentRequest], s.GetPayment)
	return srv
}
