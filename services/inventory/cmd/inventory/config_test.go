package main

import (
	"testing"
	"time"

	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/kit/boot/boottest"
)

// The shipped config loads, with placeholders resolved from the
// environment or their defaults (boottest.Config checks the shared
// sections and that tracing works with or without an OTLP endpoint).
func TestConfigLoads(t *testing.T) {
	cases := []boottest.Case{
		boottest.Defaults("INVENTORY", map[string]string{"NAMESRV_ADDR": "10.0.0.1:9876;10.0.0.2:9876"}),
		boottest.FromEnv("INVENTORY", map[string]string{"FAULT_ADMIN": "true", "INVENTORY_FAULT_DELIVER_TWICE": "true"}),
	}
	boottest.Config(t, "inventory", "../../configs", cases, func(t *testing.T, c boottest.Case, bc *conf.Bootstrap) {
		boottest.Messaging(t, c, bc.GetMessaging())
		on := c.Env["FAULT_ADMIN"] == "true"
		if f := bc.GetFault(); f.GetAdmin() != on || f.GetDeliverTwice() != on || f.GetCrashAfterEffect() {
			t.Errorf("fault switches = %v, want admin and deliver_twice %v (from the environment)", f, on)
		}
		if r := bc.GetReconcile(); r.GetOrderGrpcAddr() != "127.0.0.1:9000" || r.GetInterval().AsDuration() != 0 ||
			r.GetMinAge().AsDuration() != 30*time.Second {
			t.Errorf("reconcile = %v", r)
		}
	})
}
