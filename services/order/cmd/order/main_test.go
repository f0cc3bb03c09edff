package main

import (
	"io"
	"log/slog"
	"testing"
	"time"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/kit/boot/boottest"
	"github.com/tidemq/tide/services/kit/mq/mqtest"
	"github.com/tidemq/tide/services/order/internal/conf"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestAppFromConfigFile loads configs/config.yaml with its placeholders
// resolved from the environment, wires the app as main does, runs it
// against a real broker, MariaDB and Redis, waits for /readyz and checks
// that the process is one client to the broker (mqtest.OneClient).
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

	kit, bc, err := boot.LoadService[conf.Bootstrap]("../../configs/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if kit.GetData().GetDatabase().GetSource() != db.DSN || bc.GetMq().GetNamesrvAddr() != ns ||
		bc.GetOrder().GetCancelAfter().AsDuration() != 90*time.Second || bc.GetOrder().GetSweepInterval().AsDuration() != time.Minute {
		t.Fatalf("placeholders not resolved: %v %v", kit, bc)
	}
	if f := bc.GetFault(); f.GetAdmin() || f.GetCrashAfterCommit() || f.GetCrashAfterEffect() || f.GetDeliverTwice() {
		t.Fatalf("a fault is on by default: %v", f)
	}
	app, cleanup, err := wireApp(kit, bc, boot.Info{Name: "order", Version: "test"}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	stop := boottest.RunReady(t, app, httpAddr)
	// One mqclient.Client for the sender, the timer admin and both
	// consumer groups.
	mqtest.OneClient(t, ns, eventv1.GroupOrder, eventv1.GroupOrderTimer)
	stop()
}
