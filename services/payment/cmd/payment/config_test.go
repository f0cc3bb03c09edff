package main

import (
	"testing"

	"github.com/go-kratos/kratos/v2/config"
	"github.com/go-kratos/kratos/v2/config/env"
	"github.com/go-kratos/kratos/v2/config/file"

	"github.com/tidemq/tide/services/payment/internal/conf"
)

// The shipped config loads, with placeholders resolved from the
// environment or their defaults.
func TestConfigLoads(t *testing.T) {
	t.Setenv("NAMESRV_ADDR", "10.0.0.1:9876;10.0.0.2:9876")
	t.Setenv("FAULT_ADMIN", "false")
	c := config.New(config.WithSource(env.NewSource(), file.NewSource("../../configs")), config.WithResolveActualTypes(true))
	defer c.Close()
	if err := c.Load(); err != nil {
		t.Fatal(err)
	}
	var bc conf.Bootstrap
	if err := c.Scan(&bc); err != nil {
		t.Fatal(err)
	}
	if got := bc.GetMessaging().GetNameServers(); got != "10.0.0.1:9876;10.0.0.2:9876" {
		t.Errorf("name_servers = %q", got)
	}
	if bc.GetData().GetDatabase().GetSource() == "" || !bc.GetData().GetDatabase().GetMigrate() {
		t.Errorf("database = %v", bc.GetData().GetDatabase())
	}
	if bc.GetMessaging().GetDuplicateDelivery() {
		t.Error("duplicate_delivery is on by default")
	}
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
}
