package main

import (
	"context"
	"io"
	"log/slog"
	nethttp "net/http"
	"testing"
	"time"

	"github.com/go-kratos/kratos/v2/log"

	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/order/internal/conf"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestAppFromConfigFile loads configs/config.yaml with its placeholders
// resolved from the environment, wires the app as main does, runs it
// against a real broker, MariaDB and Redis, and waits for /readyz.
func TestAppFromConfigFile(t *testing.T) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ns := nameservertest.Start(t)
	brokertest.Start(t, ns)
	db := testenv.MariaDB(t)
	rdb := testenv.Redis(t)
	httpAddr := testenv.FreeAddr(t)
	t.Setenv("MYSQL_DSN", db.DSN)
	t.Setenv("REDIS_ADDR", rdb.Addr())
	t.Setenv("NAMESRV_ADDR", ns)
	t.Setenv("ORDER_HTTP_ADDR", httpAddr)
	t.Setenv("ORDER_GRPC_ADDR", testenv.FreeAddr(t))
	t.Setenv("ORDER_CANCEL_AFTER", "90s")

	var bc conf.Bootstrap
	if err := boot.Load("../../configs/config.yaml", &bc); err != nil {
		t.Fatal(err)
	}
	if bc.GetData().GetDatabase().GetSource() != db.DSN || bc.GetMq().GetNamesrvAddr() != ns ||
		bc.GetOrder().GetCancelAfter().AsDuration() != 90*time.Second || bc.GetOrder().GetSweepInterval().AsDuration() != time.Minute {
		t.Fatalf("placeholders not resolved: %v", &bc)
	}
	if f := bc.GetFault(); f.GetAdmin() || f.GetCrashAfterCommit() || f.GetCrashAfterEffect() || f.GetDeliverTwice() {
		t.Fatalf("a fault is on by default: %v", f)
	}
	app, cleanup, err := wireApp(bc.GetServer(), bc.GetData(), bc.GetMq(), bc.GetOrder(), bc.GetInventory(), bc.GetFault(), bc.GetCleanup(), log.NewFilter(log.DefaultLogger, log.FilterLevel(log.LevelError)))
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	done := make(chan error, 1)
	go func() { done <- app.Run() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := nethttp.Get("http://" + httpAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := app.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil && err != context.Canceled {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("app did not stop")
	}
}
