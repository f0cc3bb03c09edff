package server

import (
	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/transport/grpc"

	"github.com/tidemq/tide/services/kit/api"

	v1 "github.com/tidemq/tide/api/payment/v1"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/service"
)

// NewGRPCServer returns the gRPC server (grpc.health.v1 is registered by
// Kratos itself).
func NewGRPCServer(c *conf.Server, s *service.PaymentService, logger log.Logger) *grpc.Server {
	in := api.New(api.Options{Logger: logger}, service.Schemas)
	srv := in.NewGRPCServer(c.GetGrpc())
	v1.RegisterPaymentServer(srv, s)
	return srv
}
