//go:build wireinject

// The build tag makes sure the stub is not built in the final build.

package main

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2"
	"github.com/google/wire"

	"github.com/tidemq/tide/services/inventory/internal/biz"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/inventory/internal/data"
	"github.com/tidemq/tide/services/inventory/internal/server"
	"github.com/tidemq/tide/services/inventory/internal/service"
	"github.com/tidemq/tide/services/kit/boot"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/reconcile/rechttp"
)

// wireApp builds the kratos application.
func wireApp(*kitconf.Bootstrap, *conf.Bootstrap, boot.Info, *slog.Logger) (*kratos.App, func(), error) {
	panic(wire.Build(data.ProviderSet, biz.ProviderSet, service.ProviderSet, server.ProviderSet,
		wire.Bind(new(service.Relay), new(*data.Outbox)),
		wire.Bind(new(rechttp.Schedule), new(*conf.Reconcile)), newReadiness, boot.ProviderSet, newServers,
		wire.FieldsOf(new(*conf.Bootstrap), "Messaging", "Fault", "Reconcile")))
}
