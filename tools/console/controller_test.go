package console_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/controller"
	"github.com/tidemq/tide/controller/controllertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/tools/console"
)

// ctlFixture is a one-node controller, a NameServer, broker group
// "broker-a" with two replicas in controller mode (SYNC_MASTER, every
// in-sync replica acknowledges) and a console given the controller's
// address, signed in as viewer.
type ctlFixture struct {
	ctl, ns       string
	master, slave *broker.Broker
	base          string
	client        *http.Client
	clock         *clock
	masterAddr    string
	slaveAddr     string
}

func newCtlFixture(t *testing.T) *ctlFixture {
	t.Helper()
	f := &ctlFixture{ctl: controllertest.Start(t, func(o *controller.Options) { o.Logger = quiet() })}
	ns := nameservertest.Start(t)
	f.ns = ns
	opts := func(o *broker.Options) {
		o.EnableControllerMode, o.ControllerAddr = true, f.ctl
		o.BrokerName, o.BrokerRole = "broker-a", "SYNC_MASTER"
		// dead after 2.5 s without a heartbeat; no SyncStateSet shrink
		o.ControllerHeartBeatTimeoutMills, o.BrokerHeartbeatInterval = 2500, 200
		o.AllAckInSyncStateSet, o.HaMaxTimeSlaveNotCatchup, o.SlaveTimeout = true, 30000, 3000
	}
	f.master = brokertest.Start(t, ns, opts)
	f.slave = brokertest.Start(t, ns, opts)
	f.masterAddr, f.slaveAddr = f.master.Addr(), f.slave.Addr()
	o := console.DefaultOptions()
	o.ListenAddr, o.NameServers, o.ControllerAddrs = "127.0.0.1:0", []string{ns}, []string{f.ctl}
	o.SampleInterval = -1 // the page views alone look at the controller
	o.Logger = quiet()
	_, f.clock = authOptions(t, &o)
	srv := startServer(t, o)
	f.base = "http://" + srv.Addr()
	f.client = signIn(t, f.base, "viewer")
	return f
}

// view reads /api/controller.
func (f *ctlFixture) view(t *testing.T) console.ControllerView {
	t.Helper()
	var v console.ControllerView
	resp, err := f.client.Get(f.base + "/api/controller")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("/api/controller: %d", resp.StatusCode)
	}
	decode(t, resp, &v)
	return v
}

// group returns broker-a from v (ok false when the page lacks it).
func group(v console.ControllerView) (console.ReplicaGroup, bool) {
	for _, g := range v.Groups {
		if g.BrokerName == "broker-a" {
			return g, true
		}
	}
	return console.ReplicaGroup{}, false
}

// killMaster shuts the master down (its heartbeats stop; the controller
// elects the in-sync slave 2.5 s later).
func (f *ctlFixture) killMaster(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.master.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestControllerPage: the controller page and its JSON twin show the
// controller's node and leader, broker-a's master, epoch and
// SyncStateSet; after the master dies, the new master, the bumped epoch
// and the election in the log. Without controller addresses the page
// answers 404 naming the flag.
func TestControllerPage(t *testing.T) {
	f := newCtlFixture(t)
	var v console.ControllerView
	waitFor(t, "broker-a with both replicas in the SyncStateSet", func() bool {
		v = f.view(t)
		g, ok := group(v)
		return ok && g.SyncStateSetSize() == 2
	})
	if len(v.Nodes) != 1 || !v.Nodes[0].IsLeader || v.Nodes[0].Addr != f.ctl || v.Nodes[0].Group != "tide-controller" ||
		v.LeaderID != "n0" || v.Leader != f.ctl || v.Error != "" {
		t.Fatalf("nodes %+v leader %q (%s) error %q", v.Nodes, v.LeaderID, v.Leader, v.Error)
	}
	g, _ := group(v)
	if !g.HasMaster() || g.MasterAddr != f.masterAddr || g.MasterEpoch != 1 || len(g.Replicas) != 2 {
		t.Fatalf("before: %+v", g)
	}
	for _, r := range g.Replicas {
		if !r.Alive || !r.InSync || r.Master != (r.Addr == f.masterAddr) {
			t.Fatalf("replica %+v (master %s)", r, f.masterAddr)
		}
	}
	// the controller's history: the first election only
	if len(v.Elections) != 1 || v.ElectionsError != "" {
		t.Fatalf("elections before any failover: %+v (%s)", v.Elections, v.ElectionsError)
	}
	if e := v.Elections[0]; e.BrokerName != "broker-a" || e.FromEpoch != 0 || e.Epoch != 1 || e.FromMaster != "" ||
		e.Master != f.masterAddr || e.Source != console.ElectionsFromController || e.At.IsZero() {
		t.Fatalf("first election %+v", e)
	}
	code, body := getPage(t, f.client, f.base+"/controller")
	for _, want := range []string{"n0 (" + f.ctl + ")", "LEADER", "broker-a", f.masterAddr, "2 replica(s)", "replicated election history", "0 → 1"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("/controller %d lacks %q:\n%s", code, want, body)
		}
	}

	f.killMaster(t)
	waitFor(t, "the slave elected", func() bool {
		v = f.view(t)
		g, ok := group(v)
		return ok && g.MasterAddr == f.slaveAddr
	})
	g, _ = group(v)
	if g.MasterEpoch != 2 || g.SyncStateSetSize() != 1 {
		t.Fatalf("after: %+v", g)
	}
	for _, r := range g.Replicas {
		if r.Addr == f.masterAddr && (r.Alive || r.InSync || r.Master) {
			t.Fatalf("the dead master: %+v", r)
		}
	}
	if len(v.Elections) != 2 {
		t.Fatalf("elections: %+v", v.Elections)
	}
	if e := v.Elections[0]; e.BrokerName != "broker-a" || e.FromEpoch != 1 || e.Epoch != 2 || e.FromMaster != f.masterAddr ||
		e.Master != f.slaveAddr || e.At.IsZero() || e.Reason != "controller" || len(e.SyncStateSet) != 1 {
		t.Fatalf("election %+v", e)
	}
	// the next look records nothing new
	if v = f.view(t); len(v.Elections) != 2 {
		t.Fatalf("elections after another look: %+v", v.Elections)
	}

	// a console without controller addresses
	o := console.DefaultOptions()
	o.ListenAddr, o.NameServers, o.SampleInterval, o.Logger = "127.0.0.1:0", []string{f.ns}, -1, quiet()
	authOptions(t, &o)
	base := "http://" + startServer(t, o).Addr()
	c := signIn(t, base, "viewer")
	if code, body := getPage(t, c, base+"/api/controller"); code != http.StatusNotFound || !strings.Contains(body, "-controllerAddr") {
		t.Fatalf("without controllers: %d %s", code, body)
	}
}

// getPage GETs url with c and returns the status and body.
func getPage(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
