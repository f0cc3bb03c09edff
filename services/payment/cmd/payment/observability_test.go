package main

import (
	"testing"

	"github.com/go-kratos/kratos/v2/config"
	"github.com/go-kratos/kratos/v2/config/env"
	"github.com/go-kratos/kratos/v2/config/file"

	"github.com/tidemq/tide/services/payment/internal/conf"
)

// The broker credentials and the OTLP endpoint are empty unless the
// environment sets them (MQ_ACCESS_KEY, MQ_SECRET_KEY,
// OTEL_EXPORTER_OTLP_ENDPOINT); setupTracing works either way.
func TestConfigCredentialsAndObservability(t *testing.T) {
	load := func() *conf.Bootstrap {
		t.Helper()
		c := config.New(config.WithSource(env.NewSource(), file.NewSource("../../configs")), config.WithResolveActualTypes(true))
		defer c.Close()
		if err := c.Load(); err != nil {
			t.Fatal(err)
		}
		var bc conf.Bootstrap
		if err := c.Scan(&bc); err != nil {
			t.Fatal(err)
		}
		return &bc
	}
	for _, k := range []string{"MQ_ACCESS_KEY", "MQ_SECRET_KEY", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		t.Setenv(k, "")
	}
	bc := load()
	if m := bc.GetMessaging(); m.GetAccessKey() != "" || m.GetSecretKey() != "" {
		t.Errorf("credentials by default: %q/%q", m.GetAccessKey(), m.GetSecretKey())
	}
	if ep := bc.GetObservability().GetOtlpEndpoint(); ep != "" {
		t.Errorf("otlp_endpoint by default: %q", ep)
	}
	stop, err := setupTracing(bc.GetObservability(), "test")
	if err != nil {
		t.Fatal(err)
	}
	stop()

	t.Setenv("MQ_ACCESS_KEY", "svcKey")
	t.Setenv("MQ_SECRET_KEY", "svcSecret")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")
	bc = load()
	if m := bc.GetMessaging(); m.GetAccessKey() != "svcKey" || m.GetSecretKey() != "svcSecret" {
		t.Errorf("credentials from the environment: %q/%q", m.GetAccessKey(), m.GetSecretKey())
	}
	if ep := bc.GetObservability().GetOtlpEndpoint(); ep != "collector:4318" {
		t.Errorf("otlp_endpoint from the environment: %q", ep)
	}
}
