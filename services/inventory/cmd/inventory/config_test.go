package main

import (
	"os"
	"testing"
	"time"

	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/kit/cleanup"
)

// The shipped config loads, with placeholders resolved from the
// environment or their defaults; setupTracing works with or without an
// OTLP endpoint.
func TestConfigLoads(t *testing.T) {
	for _, k := range []string{"MQ_ACCESS_KEY", "MQ_SECRET_KEY", "OTEL_EXPORTER_OTLP_ENDPOINT", "INVENTORY_CLEANUP_RETENTION"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)  // the placeholder's default applies
	}
	t.Setenv("NAMESRV_ADDR", "10.0.0.1:9876;10.0.0.2:9876")
	var bc conf.Bootstrap
	if err := boot.Load("../../configs", &bc); err != nil {
		t.Fatal(err)
	}
	if got := bc.GetMessaging().GetNameServers(); got != "10.0.0.1:9876;10.0.0.2:9876" {
		t.Errorf("name_servers = %q", got)
	}
	if bc.GetData().GetDatabase().GetSource() == "" || !bc.GetData().GetDatabase().GetMigrate() {
		t.Errorf("database = %v", bc.GetData().GetDatabase())
	}
	if m := bc.GetMessaging(); m.GetDuplicateDelivery() || m.GetAccessKey() != "" || m.GetSecretKey() != "" {
		t.Errorf("duplicate_delivery or credentials by default: %v", m)
	}
	if f := bc.GetFault(); f.GetAdmin() || f.GetCrashAfterEffect() || f.GetDeliverTwice() {
		t.Errorf("a fault is on by default: %v", f)
	}
	if r := bc.GetReconcile(); r.GetOrderGrpcAddr() != "127.0.0.1:9000" || r.GetInterval().AsDuration() != 0 ||
		r.GetMinAge().AsDuration() != 30*time.Second {
		t.Errorf("reconcile = %v", r)
	}
	if c := bc.GetCleanup(); c.GetRetention().AsDuration() != cleanup.DefaultRetention || c.GetInterval().AsDuration() != time.Hour || c.GetDisabled() {
		t.Errorf("cleanup = %v", c)
	}
	if ep := bc.GetObservability().GetOtlpEndpoint(); ep != "" {
		t.Errorf("otlp_endpoint by default: %q", ep)
	}
	stop, err := boot.Tracing(Name, Version, bc.GetObservability().GetOtlpEndpoint())
	if err != nil {
		t.Fatal(err)
	}
	stop()

	for k, v := range map[string]string{"FAULT_ADMIN": "true", "INVENTORY_FAULT_DELIVER_TWICE": "true", "MQ_ACCESS_KEY": "svcKey",
		"MQ_SECRET_KEY": "svcSecret", "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318", "INVENTORY_CLEANUP_RETENTION": "864000s"} {
		t.Setenv(k, v)
	}
	bc.Reset()
	if err := boot.Load("../../configs", &bc); err != nil {
		t.Fatal(err)
	}
	if !bc.GetFault().GetAdmin() || !bc.GetFault().GetDeliverTwice() {
		t.Errorf("fault switches from the environment: %v", bc.GetFault())
	}
	if m := bc.GetMessaging(); m.GetAccessKey() != "svcKey" || m.GetSecretKey() != "svcSecret" {
		t.Errorf("credentials from the environment: %q/%q", m.GetAccessKey(), m.GetSecretKey())
	}
	if ep := bc.GetObservability().GetOtlpEndpoint(); ep != "collector:4318" {
		t.Errorf("otlp_endpoint from the environment: %q", ep)
	}
	if r := bc.GetCleanup().GetRetention().AsDuration(); r != 10*24*time.Hour {
		t.Errorf("cleanup.retention from the environment: %v", r)
	}
}
