//go:build wireinject

// The build tag makes sure the stub is not built in the final build.

package main

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2"
	"github.com/google/wire"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/services/kit/boot"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/data"
	"github.com/tidemq/tide/services/payment/internal/server"
	"github.com/tidemq/tide/services/payment/internal/service"
)

// wireApp builds the kratos application.
func wireApp(*kitconf.Bootstrap, *conf.Bootstrap, boot.Info, *slog.Logger) (*kratos.App, func(), error) {
	panic(wire.Build(data.ProviderSet, biz.ProviderSet, service.ProviderSet, server.ProviderSet,
		newRegistry, wire.Bind(new(prometheus.Registerer), new(*prometheus.Registry)), newMQMetrics,
		wire.Bind(new(service.Statements), new(*data.Gateway)),
		wire.Bind(new(rechttp.Schedule), new(*conf.Reconcile)), newReadiness, newFaults, newOptions, boot.ProviderSet, newServers,
		wire.FieldsOf(new(*conf.Bootstrap), "Messaging", "Fault", "Order", "Reconcile")))
}
