package main

import (
	"io"
	"log/slog"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/kit/boot/boottest"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/mq/mqtest"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

// The wired application starts against real dependencies, becomes ready,
// serves /metrics and the fault admin API, is one client to the broker
// (mqtest.OneClient), and stops.
func TestAppStartsAndStops(t *testing.T) {
	ns := nameservertest.Start(t)
	brokertest.Start(t, ns)
	db, rd := testenv.MariaDB(t), testenv.Redis(t)
	httpAddr := testenv.FreeAddr(t)
	l := slog.New(slog.NewTextHandler(io.Discard, nil))
	app, cleanup, err := wireApp(&kitconf.Bootstrap{
		Server:  &kitconf.Server{Http: &kitconf.Server_HTTP{Addr: httpAddr}, Grpc: &kitconf.Server_GRPC{Addr: testenv.FreeAddr(t)}},
		Data:    &kitconf.Data{Database: &kitconf.Data_Database{Source: db.DSN, Migrate: proto.Bool(true)}, Redis: &kitconf.Data_Redis{Addr: rd.Addr()}},
		Cleanup: &kitconf.Cleanup{},
	}, &conf.Bootstrap{
		Messaging: &conf.Messaging{NameServers: ns, ProducerGroup: "payment-producer", ConsumerGroup: "payment-service"},
		Fault:     &conf.Fault{Admin: true}, Order: &kitconf.Peer{GrpcAddr: testenv.FreeAddr(t)},
		Reconcile: &conf.Reconcile{Interval: durationpb.New(time.Hour), Repair: true},
	}, boot.Info{Name: "payment", Version: "test"}, l)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	stop := boottest.RunReady(t, app, httpAddr)
	get := func(path string) (int, string) {
		resp, err := nethttp.Get("http://" + httpAddr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics: %d", code)
	}
	if code, body := get("/v1/faults"); code != 200 || !strings.Contains(body, "crash_after_commit") {
		t.Fatalf("/v1/faults: %d %s", code, body)
	}
	// One mqclient.Client for the publisher and the consumer.
	mqtest.OneClient(t, ns, "payment-service")
	stop()
}
