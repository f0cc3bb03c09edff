package main

import (
	"testing"

	"github.com/tidemq/tide/services/kit/boot/boottest"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

// The shipped config loads, with placeholders resolved from the
// environment or their defaults (boottest.Config checks the shared
// sections and that tracing works with or without an OTLP endpoint).
func TestConfigLoads(t *testing.T) {
	cases := []boottest.Case{
		boottest.Defaults("PAYMENT", map[string]string{"NAMESRV_ADDR": "10.0.0.1:9876;10.0.0.2:9876", "FAULT_ADMIN": "false"}),
		boottest.FromEnv("PAYMENT", nil),
	}
	boottest.Config(t, "payment", "../../configs", cases, func(t *testing.T, c boottest.Case, bc *conf.Bootstrap) {
		boottest.Messaging(t, c, bc.GetMessaging())
		f := bc.GetFault()
		if f.GetAdmin() || f.GetCrashAfterCommit() || f.GetCrashBeforeCommit() || f.GetCrashAfterEffect() || f.GetDeliverTwice() ||
			f.GetGatewayTimeoutAfterCapture() || f.GetGatewayDuplicateCallback() || f.GetSlowLocalTx().AsDuration() != 0 {
			t.Errorf("a fault is on by default: %v", f)
		}
		for _, st := range newFaults(f, nil).List() {
			if st.Enabled {
				t.Errorf("fault %s armed by default", st.Name)
			}
		}
		if bc.GetOrder().GetGrpcAddr() == "" || bc.GetReconcile().GetGrace().AsDuration() <= 0 || !bc.GetReconcile().GetRepair() ||
			bc.GetReconcile().GetInterval().AsDuration() != 0 {
			t.Errorf("order %v reconcile %v", bc.GetOrder(), bc.GetReconcile())
		}
	})
}
