package main

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/kit/boot/boottest"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/mq/mqtest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The wired application starts against real dependencies, becomes ready,
// is one client to the broker (mqtest.OneClient: the outbox producer and
// the consumer on one mqclient.Client), and stops.
func TestAppStartsAndStops(t *testing.T) {
	ns := nameservertest.Start(t)
	brokertest.Start(t, ns)
	db, rd := testenv.MariaDB(t), testenv.Redis(t)
	httpAddr := testenv.FreeAddr(t)
	app, cleanup, err := wireApp(&kitconf.Bootstrap{
		Server:  &kitconf.Server{Http: &kitconf.Server_HTTP{Addr: httpAddr}, Grpc: &kitconf.Server_GRPC{Addr: testenv.FreeAddr(t)}},
		Data:    &kitconf.Data{Database: &kitconf.Data_Database{Source: db.DSN, Migrate: proto.Bool(true)}, Redis: &kitconf.Data_Redis{Addr: rd.Addr()}},
		Cleanup: &kitconf.Cleanup{},
	}, &conf.Bootstrap{
		Messaging: &conf.Messaging{NameServers: ns, ProducerGroup: eventv1.GroupInventoryProducer, ConsumerGroup: eventv1.GroupInventory},
		Fault:     &conf.Fault{}, Reconcile: &conf.Reconcile{OrderGrpcAddr: testenv.FreeAddr(t), Interval: durationpb.New(time.Hour)},
	}, boot.Info{Name: "inventory", Version: "test"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	stop := boottest.RunReady(t, app, httpAddr)
	mqtest.OneClient(t, ns, eventv1.GroupInventory)
	stop()
}
