//go:build wireinject
// +build wireinject

// The build tag makes sure the stub is not built in the final build.

package main

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2"
	"github.com/google/wire"

	"github.com/tidemq/tide/services/kit/boot"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/order/internal/biz"
	"github.com/tidemq/tide/services/order/internal/conf"
	"github.com/tidemq/tide/services/order/internal/data"
	"github.com/tidemq/tide/services/order/internal/server"
	"github.com/tidemq/tide/services/order/internal/service"
)

// wireApp init kratos application.
func wireApp(*kitconf.Bootstrap, *conf.Bootstrap, boot.Info, *slog.Logger) (*kratos.App, func(), error) {
	panic(wire.Build(server.ProviderSet, data.ProviderSet, biz.ProviderSet, service.ProviderSet, newReadiness,
		boot.ProviderSet, newServers, wire.FieldsOf(new(*conf.Bootstrap), "Mq", "Order", "Inventory", "Fault")))
}
