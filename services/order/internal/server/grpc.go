package server

import (
	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/transport/grpc"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/order/internal/conf"
	"github.com/tidemq/tide/services/order/internal/service"
)

// NewGRPCServer returns the gRPC server of the Order API; requests are
// checked against service.Schemas (InvalidArgument naming the field). Kratos also
// registers grpc.health.v1 on it.
func NewGRPCServer(c *conf.Server, order *service.OrderService, logger log.Logger) *grpc.Server {
	in := api.New(api.Options{Logger: logger}, service.Schemas)
	srv := in.NewGRPCServer(c.GetGrpc())
	orderv1.RegisterOrderServer(srv, order)
	return srv
}
