package main

import (
	"testing"
	"time"

	"github.com/go-kratos/kratos/v2/config"
	"github.com/go-kratos/kratos/v2/config/env"
	"github.com/go-kratos/kratos/v2/config/file"

	"github.com/tidemq/tide/services/inventory/internal/conf"
)

// The shipped config loads, with placeholders resolved from the
// environment or their defaults.
func TestConfigLoads(t *testing.T) {
	t.Setenv("NAMESRV_ADDR", "10.0.0.1:9876;10.0.0.2:9876")
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
	if f := bc.GetFault(); f.GetAdmin() || f.GetCrashAfterEffect() || f.GetDeliverTwice() {
		t.Errorf("a fault is on by default: %v", f)
	}
	if r := bc.GetReconcile(); r.GetOrderGrpcAddr() != "127.0.0.1:9000" || r.GetInterval().AsDuration() != 0 ||
		r.GetMinAge().AsDuration() != 30*time.Second {
		t.Errorf("reconcile = %v", r)
	}
	t.Setenv("FAULT_ADMIN", "true")
	t.Setenv("INVENTORY_FAULT_DELIVER_TWICE", "true")
	if err := c.Load(); err != nil {
		t.Fatal(err)
	}
	bc.Reset()
	if err := c.Scan(&bc); err != nil {
		t.Fatal(err)
	}
	if !bc.GetFault().GetAdmin() || !bc.GetFault().GetDeliverTwice() {
		t.Errorf("fault switches from the environment: %v", bc.GetFault())
	}
}
