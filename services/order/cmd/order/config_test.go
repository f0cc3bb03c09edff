package main

import (
	"testing"

	"github.com/tidemq/tide/services/kit/boot/boottest"
	"github.com/tidemq/tide/services/order/internal/conf"
)

// The shipped config's broker credentials and OTLP endpoint are empty
// unless the environment sets them (MQ_ACCESS_KEY, MQ_SECRET_KEY,
// OTEL_EXPORTER_OTLP_ENDPOINT), and tracing works either way; the
// cleanup keeps 7 days and runs hourly unless ORDER_CLEANUP_* say
// otherwise (boottest.Config checks those shared sections).
func TestConfigLoads(t *testing.T) {
	cases := []boottest.Case{
		boottest.Defaults("ORDER", nil),
		boottest.FromEnv("ORDER", map[string]string{"ORDER_CLEANUP_DISABLED": "true"}),
	}
	boottest.Config(t, "order", "../../configs", cases, func(t *testing.T, c boottest.Case, bc *conf.Bootstrap) {
		boottest.Credentials(t, c, bc.GetMq())
	})
}
