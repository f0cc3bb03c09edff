package main

import (
	"os"
	"testing"
	"time"

	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/kit/cleanup"
	"github.com/tidemq/tide/services/order/internal/conf"
)

// The shipped config's broker credentials and OTLP endpoint are empty
// unless the environment sets them (MQ_ACCESS_KEY, MQ_SECRET_KEY,
// OTEL_EXPORTER_OTLP_ENDPOINT), and setupTracing works either way; the
// cleanup keeps 7 days and runs hourly unless ORDER_CLEANUP_* say
// otherwise.
func TestConfigLoads(t *testing.T) {
	tests := []struct {
		name              string
		env               map[string]string
		key, secret, otlp string
		retention         time.Duration
		cleanupDisabled   bool
	}{
		{"defaults", nil, "", "", "", cleanup.DefaultRetention, false},
		{"environment", map[string]string{"MQ_ACCESS_KEY": "svcKey", "MQ_SECRET_KEY": "svcSecret",
			"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318", "ORDER_CLEANUP_RETENTION": "864000s", "ORDER_CLEANUP_DISABLED": "true"},
			"svcKey", "svcSecret", "collector:4318", 10 * 24 * time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"MQ_ACCESS_KEY", "MQ_SECRET_KEY", "OTEL_EXPORTER_OTLP_ENDPOINT", "ORDER_CLEANUP_RETENTION", "ORDER_CLEANUP_DISABLED"} {
				t.Setenv(k, tt.env[k]) // restored after the test
				if tt.env[k] == "" {
					os.Unsetenv(k) // the placeholder's default applies
				}
			}
			var bc conf.Bootstrap
			if err := boot.Load("../../configs", &bc); err != nil {
				t.Fatal(err)
			}
			if m := bc.GetMq(); m.GetAccessKey() != tt.key || m.GetSecretKey() != tt.secret {
				t.Errorf("credentials %q/%q", m.GetAccessKey(), m.GetSecretKey())
			}
			if ep := bc.GetObservability().GetOtlpEndpoint(); ep != tt.otlp {
				t.Errorf("otlp_endpoint %q", ep)
			}
			if c := bc.GetCleanup(); c.GetRetention().AsDuration() != tt.retention || c.GetInterval().AsDuration() != time.Hour ||
				c.GetDisabled() != tt.cleanupDisabled {
				t.Errorf("cleanup %v", c)
			}
			stop, err := boot.Tracing(Name, Version, bc.GetObservability().GetOtlpEndpoint())
			if err != nil {
				t.Fatal(err)
			}
			stop()
		})
	}
}
