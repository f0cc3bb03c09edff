package api

import (
	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	kitconf "github.com/tidemq/tide/services/kit/conf"
)

// Listen is what a service's configuration says about one of its servers:
// the generated kit/conf Server_HTTP and Server_GRPC messages, which every
// service's configuration holds, satisfy it (a nil message is fine: its
// getters answer zero values, and zero values keep Kratos's defaults).
type Listen interface {
	GetNetwork() string
	GetAddr() string
	GetTimeout() *durationpb.Duration
}

// NewHTTPServer returns a Kratos HTTP server listening as l says, with
// the input contract (HTTPServerOptions) and the services' middleware
// chain (ServerMiddleware); extra options come last. The service
// registers its routes on it.
func (in *Input) NewHTTPServer(l Listen, extra ...khttp.ServerOption) *khttp.Server {
	opts := append(in.HTTPServerOptions(), khttp.Middleware(in.ServerMiddleware()...))
	if l.GetNetwork() != "" {
		opts = append(opts, khttp.Network(l.GetNetwork()))
	}
	if l.GetAddr() != "" {
		opts = append(opts, khttp.Address(l.GetAddr()))
	}
	if l.GetTimeout() != nil {
		opts = append(opts, khttp.Timeout(l.GetTimeout().AsDuration()))
	}
	return khttp.NewServer(append(opts, extra...)...)
}

// NewGRPCServer returns a Kratos gRPC server listening as l says, with the
// services' middleware chain and the body limit on every message; extra
// options come last. Kratos registers grpc.health.v1 on it; the service
// registers its API.
func (in *Input) NewGRPCServer(l Listen, extra ...kgrpc.ServerOption) *kgrpc.Server {
	opts := []kgrpc.ServerOption{kgrpc.Middleware(in.ServerMiddleware()...), kgrpc.Options(in.GRPCMaxRecvMsgSize())}
	if l.GetNetwork() != "" {
		opts = append(opts, kgrpc.Network(l.GetNetwork()))
	}
	if l.GetAddr() != "" {
		opts = append(opts, kgrpc.Address(l.GetAddr()))
	}
	if l.GetTimeout() != nil {
		opts = append(opts, kgrpc.Timeout(l.GetTimeout().AsDuration()))
	}
	return kgrpc.NewServer(append(opts, extra...)...)
}

// RegisterGRPC registers a service's API on its gRPC server: the
// generated Register<Name>Server with the service's handlers.
type RegisterGRPC func(grpc.ServiceRegistrar)

// GRPCServer returns a service's gRPC server: c's gRPC listener, the
// input contract and middleware of in (Input.NewGRPCServer) and the API
// that register registers (a service's server.NewGRPCServer passes its
// generated Register<Name>Server). Kratos registers grpc.health.v1 on it.
func GRPCServer(c *kitconf.Server, in *Input, register RegisterGRPC) *kgrpc.Server {
	srv := in.NewGRPCServer(c.GetGrpc())
	register(srv)
	return srv
}
