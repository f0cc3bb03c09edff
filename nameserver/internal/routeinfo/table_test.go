package routeinfo

import (
	"io"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTable(t *testing.T) (*Table, *fakeClock) {
	t.Helper()
	clk := &fakeClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	return New(Options{Now: clk.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}), clk
}

func topics(counter int64, tcs ...protocol.TopicConfig) *protocol.TopicConfigSerializeWrapper {
	w := &protocol.TopicConfigSerializeWrapper{
		DataVersion:      protocol.DataVersion{Timestamp: 1000 + counter, Counter: counter},
		TopicConfigTable: map[string]protocol.TopicConfig{},
	}
	for _, tc := range tcs {
		w.TopicConfigTable[tc.TopicName] = tc
	}
	return w
}

func topic(name string, queues int32) protocol.TopicConfig {
	return protocol.TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6, TopicFilterType: protocol.TopicFilterSingleTag}
}

func reg(cluster, name, addr string, id int64, conn uint64, w *protocol.TopicConfigSerializeWrapper) Registration {
	return Registration{ClusterName: cluster, BrokerName: name, BrokerAddr: addr, HAServerAddr: addr + "-ha", BrokerID: id, ConnID: conn, Topics: w}
}

func mustRoute(t *testing.T, tb *Table, topic string) *protocol.TopicRouteData {
	t.Helper()
	r, ok := tb.Route(topic)
	if !ok {
		t.Fatalf("no route for %s", topic)
	}
	return r
}

func TestTableRegisterBuildsRoute(t *testing.T) {
	tb, _ := newTable(t)
	res := tb.Register(reg("c1", "broker-a", "10.0.0.1:10911", 0, 1, topics(1, topic("t1", 4), topic("t2", 8))))
	if res != (RegisterResult{}) {
		t.Fatalf("master got %+v", res)
	}
	r := mustRoute(t, tb, "t1")
	want := &protocol.TopicRouteData{
		QueueDatas:        []protocol.QueueData{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
		BrokerDatas:       []protocol.BrokerData{{Cluster: "c1", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "10.0.0.1:10911"}}},
		FilterServerTable: map[string][]string{},
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("route %+v\nwant %+v", r, want)
	}
	if got := tb.Topics(); !reflect.DeepEqual(got, []string{"t1", "t2"}) {
		t.Fatalf("topics %v", got)
	}
	if _, ok := tb.Route("nope"); ok {
		t.Fatal("route for unknown topic")
	}
}

func TestTableReRegisterSameVersionKeepsQueueData(t *testing.T) {
	tb, clk := newTable(t)
	tb.Register(reg("c1", "b", "a:1", 0, 1, topics(1, topic("t", 4))))
	clk.Advance(30 * time.Second)
	// Same DataVersion, different content: the NameServer trusts the
	// version and does not rebuild.
	tb.Register(reg("c1", "b", "a:1", 0, 1, topics(1, topic("t", 16))))
	if q := mustRoute(t, tb, "t").QueueDatas[0].WriteQueueNums; q != 4 {
		t.Fatalf("queue data rebuilt on same version: %d", q)
	}
	if lb := tb.LiveBrokers(); len(lb) != 1 || !lb[0].LastUpdate.Equal(clk.Now()) {
		t.Fatalf("last update not refreshed: %+v", lb)
	}
}

func TestTableReRegisterNewVersionUpdatesQueueData(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c1", "b", "a:1", 0, 1, topics(1, topic("t", 4), topic("old", 1))))
	tb.Register(reg("c1", "b", "a:1", 0, 1, topics(2, topic("t", 16), topic("new", 2))))
	if q := mustRoute(t, tb, "t").QueueDatas[0].WriteQueueNums; q != 16 {
		t.Fatalf("queue data not rebuilt: %d", q)
	}
	mustRoute(t, tb, "new")
	// Increments carry only the changed topic: the others stay.
	mustRoute(t, tb, "old")
	if lb := tb.LiveBrokers(); lb[0].DataVersion.Counter != 2 {
		t.Fatalf("version %+v", lb[0].DataVersion)
	}
}

func TestTableSlaveRegistration(t *testing.T) {
	tb, _ := newTable(t)
	// A slave before its master: no master info, and no queue data.
	res := tb.Register(reg("c1", "b", "s:1", 1, 2, topics(1, topic("slave-only", 4))))
	if res != (RegisterResult{}) {
		t.Fatalf("slave without master got %+v", res)
	}
	if _, ok := tb.Route("slave-only"); ok {
		t.Fatal("slave registration created queue data")
	}
	tb.Register(reg("c1", "b", "m:1", 0, 1, topics(1, topic("t", 4))))
	res = tb.Register(reg("c1", "b", "s:1", 1, 2, topics(5, topic("t", 99))))
	if res != (RegisterResult{MasterAddr: "m:1", HAServerAddr: "m:1-ha"}) {
		t.Fatalf("slave got %+v", res)
	}
	r := mustRoute(t, tb, "t")
	if !reflect.DeepEqual(r.BrokerDatas[0].BrokerAddrs, map[int64]string{0: "m:1", 1: "s:1"}) {
		t.Fatalf("addrs %v", r.BrokerDatas[0].BrokerAddrs)
	}
	if r.QueueDatas[0].WriteQueueNums != 4 {
		t.Fatal("slave changed queue data")
	}
}

func TestTableSlaveBecomesMaster(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c1", "b", "s:1", 1, 2, nil))
	tb.Register(reg("c1", "b", "s:1", 0, 2, topics(1, topic("t", 4))))
	r := mustRoute(t, tb, "t")
	if !reflect.DeepEqual(r.BrokerDatas[0].BrokerAddrs, map[int64]string{0: "s:1"}) {
		t.Fatalf("addrs %v", r.BrokerDatas[0].BrokerAddrs)
	}
}

func TestTableExpiry(t *testing.T) {
	tb, clk := newTable(t)
	tb.Register(reg("c1", "a", "a:1", 0, 1, topics(1, topic("t", 4))))
	tb.Register(reg("c1", "b", "b:1", 0, 2, topics(1, topic("t", 4))))
	clk.Advance(100 * time.Second)
	tb.Register(reg("c1", "b", "b:1", 0, 2, topics(1, topic("t", 4))))
	clk.Advance(20 * time.Second)
	if got := tb.Expire(); len(got) != 0 {
		t.Fatalf("expired at exactly 120 s: %+v", got)
	}
	clk.Advance(time.Millisecond)
	got := tb.Expire()
	if len(got) != 1 || got[0].Addr != "a:1" || got[0].ConnID != 1 {
		t.Fatalf("expired %+v", got)
	}
	r := mustRoute(t, tb, "t")
	if len(r.BrokerDatas) != 1 || r.BrokerDatas[0].BrokerName != "b" || len(r.QueueDatas) != 1 {
		t.Fatalf("route after expiry %+v", r)
	}
	clk.Advance(121 * time.Second)
	tb.Expire()
	if _, ok := tb.Route("t"); ok {
		t.Fatal("route survives all brokers expiring")
	}
	if ci := tb.ClusterInfo(); len(ci.BrokerAddrTable) != 0 || len(ci.ClusterAddrTable) != 0 {
		t.Fatalf("cluster info after expiry %+v", ci)
	}
}

func TestTableExpiryOfMasterKeepsSlave(t *testing.T) {
	tb, clk := newTable(t)
	tb.Register(reg("c1", "b", "m:1", 0, 1, topics(1, topic("t", 4))))
	clk.Advance(60 * time.Second)
	tb.Register(reg("c1", "b", "s:1", 1, 2, nil))
	clk.Advance(61 * time.Second)
	tb.Expire()
	r := mustRoute(t, tb, "t")
	if !reflect.DeepEqual(r.BrokerDatas[0].BrokerAddrs, map[int64]string{1: "s:1"}) {
		t.Fatalf("addrs %v", r.BrokerDatas[0].BrokerAddrs)
	}
}

func TestTableRemoveConn(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c1", "a", "a:1", 0, 7, topics(1, topic("t", 4))))
	tb.Register(reg("c1", "b", "b:1", 0, 8, topics(1, topic("t", 4))))
	if got := tb.RemoveConn(99); len(got) != 0 {
		t.Fatalf("unknown conn removed %v", got)
	}
	if got := tb.RemoveConn(7); !reflect.DeepEqual(got, []string{"a:1"}) {
		t.Fatalf("removed %v", got)
	}
	r := mustRoute(t, tb, "t")
	if len(r.BrokerDatas) != 1 || r.BrokerDatas[0].BrokerName != "b" {
		t.Fatalf("route %+v", r)
	}
	// Re-registration on a new connection: the old one closing later
	// must not remove the broker.
	tb.Register(reg("c1", "b", "b:1", 0, 9, topics(1, topic("t", 4))))
	tb.RemoveConn(8)
	mustRoute(t, tb, "t")
}

func TestTableUnregister(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c1", "b", "m:1", 0, 1, topics(1, topic("t", 4))))
	tb.Register(reg("c1", "b", "s:1", 1, 2, nil))
	tb.Unregister("c1", "b", "m:1", 0)
	r := mustRoute(t, tb, "t")
	if !reflect.DeepEqual(r.BrokerDatas[0].BrokerAddrs, map[int64]string{1: "s:1"}) {
		t.Fatalf("after master unregister %v", r.BrokerDatas[0].BrokerAddrs)
	}
	// Wrong address for the id: ignored.
	tb.Unregister("c1", "b", "x:1", 1)
	mustRoute(t, tb, "t")
	tb.Unregister("c1", "b", "s:1", 1)
	if _, ok := tb.Route("t"); ok {
		t.Fatal("route after last address unregistered")
	}
	if ci := tb.ClusterInfo(); len(ci.ClusterAddrTable) != 0 || len(ci.BrokerAddrTable) != 0 {
		t.Fatalf("cluster info %+v", ci)
	}
	if len(tb.LiveBrokers()) != 0 {
		t.Fatal("live brokers left")
	}
	tb.Unregister("c1", "unknown", "u:1", 0) // no panic
}

func TestTableTwoBrokersOneCluster(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c1", "broker-b", "b:1", 0, 2, topics(1, topic("t", 8), topic("only-b", 1))))
	tb.Register(reg("c1", "broker-a", "a:1", 0, 1, topics(1, topic("t", 4))))
	r := mustRoute(t, tb, "t")
	if len(r.QueueDatas) != 2 || r.QueueDatas[0].BrokerName != "broker-a" || r.QueueDatas[1].BrokerName != "broker-b" {
		t.Fatalf("queue datas not sorted: %+v", r.QueueDatas)
	}
	if len(r.BrokerDatas) != 2 || r.BrokerDatas[0].BrokerName != "broker-a" {
		t.Fatalf("broker datas %+v", r.BrokerDatas)
	}
	if got := tb.TopicsByCluster("c1"); !reflect.DeepEqual(got, []string{"only-b", "t"}) {
		t.Fatalf("topics by cluster %v", got)
	}
	if got := tb.TopicsByCluster("c2"); len(got) != 0 {
		t.Fatalf("topics of unknown cluster %v", got)
	}
}

func TestTableDeleteTopic(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c1", "a", "a:1", 0, 1, topics(1, topic("t", 4), topic("u", 4))))
	tb.Register(reg("c2", "b", "b:1", 0, 2, topics(1, topic("t", 4))))
	if tb.DeleteTopic("missing", "") {
		t.Fatal("deleted a missing topic")
	}
	if !tb.DeleteTopic("t", "c2") {
		t.Fatal("cluster delete removed nothing")
	}
	r := mustRoute(t, tb, "t")
	if len(r.QueueDatas) != 1 || r.QueueDatas[0].BrokerName != "a" {
		t.Fatalf("after cluster delete %+v", r.QueueDatas)
	}
	if !tb.DeleteTopic("t", "") {
		t.Fatal("delete removed nothing")
	}
	if _, ok := tb.Route("t"); ok {
		t.Fatal("route after delete")
	}
	mustRoute(t, tb, "u")
	// Brokers re-registering with an unchanged version do not resurrect
	// it; a new version does.
	tb.Register(reg("c1", "a", "a:1", 0, 1, topics(1, topic("t", 4), topic("u", 4))))
	if _, ok := tb.Route("t"); ok {
		t.Fatal("route resurrected by a heartbeat")
	}
	tb.Register(reg("c1", "a", "a:1", 0, 1, topics(2, topic("t", 4), topic("u", 4))))
	mustRoute(t, tb, "t")
}

func TestTableClusterInfo(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c1", "a", "a:1", 0, 1, nil))
	tb.Register(reg("c1", "a", "a:2", 1, 2, nil))
	tb.Register(reg("c1", "b", "b:1", 0, 3, nil))
	tb.Register(reg("c2", "z", "z:1", 0, 4, nil))
	ci := tb.ClusterInfo()
	want := &protocol.ClusterInfo{
		BrokerAddrTable: map[string]protocol.BrokerData{
			"a": {Cluster: "c1", BrokerName: "a", BrokerAddrs: map[int64]string{0: "a:1", 1: "a:2"}},
			"b": {Cluster: "c1", BrokerName: "b", BrokerAddrs: map[int64]string{0: "b:1"}},
			"z": {Cluster: "c2", BrokerName: "z", BrokerAddrs: map[int64]string{0: "z:1"}},
		},
		ClusterAddrTable: map[string][]string{"c1": {"a", "b"}, "c2": {"z"}},
	}
	if !reflect.DeepEqual(ci, want) {
		t.Fatalf("cluster info %+v\nwant %+v", ci, want)
	}
	// The returned value is a copy.
	ci.BrokerAddrTable["a"].BrokerAddrs[5] = "x"
	if _, ok := tb.ClusterInfo().BrokerAddrTable["a"].BrokerAddrs[5]; ok {
		t.Fatal("ClusterInfo shares state with the table")
	}
}

func TestTableQueryDataVersion(t *testing.T) {
	tb, clk := newTable(t)
	if changed, stored := tb.QueryDataVersion("a:1", protocol.DataVersion{Counter: 1}); !changed || stored != nil {
		t.Fatalf("unknown broker: %v %v", changed, stored)
	}
	w := topics(3, topic("t", 4))
	tb.Register(reg("c1", "a", "a:1", 0, 1, w))
	clk.Advance(time.Minute)
	changed, stored := tb.QueryDataVersion("a:1", w.DataVersion)
	if changed || stored == nil || *stored != w.DataVersion {
		t.Fatalf("same version: %v %v", changed, stored)
	}
	if lb := tb.LiveBrokers(); !lb[0].LastUpdate.Equal(clk.Now()) {
		t.Fatal("query with an unchanged version did not refresh liveness")
	}
	if changed, _ := tb.QueryDataVersion("a:1", protocol.DataVersion{Counter: 4}); !changed {
		t.Fatal("different version not reported as changed")
	}
}

func TestTableFilterServers(t *testing.T) {
	tb, _ := newTable(t)
	r := reg("c1", "a", "a:1", 0, 1, topics(1, topic("t", 4)))
	r.FilterServers = []string{"f:1"}
	tb.Register(r)
	if got := mustRoute(t, tb, "t").FilterServerTable; !reflect.DeepEqual(got, map[string][]string{"a:1": {"f:1"}}) {
		t.Fatalf("filter servers %v", got)
	}
}

func TestTableConcurrentUse(t *testing.T) {
	tb, clk := newTable(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				tb.Register(reg("c1", "b", "a:1", int64(i%2), uint64(i+1), topics(int64(j), topic("t", 4))))
				tb.Route("t")
				tb.ClusterInfo()
				clk.Advance(time.Second)
				tb.Expire()
				if j%50 == 0 {
					tb.RemoveConn(uint64(i + 1))
				}
			}
		}()
	}
	wg.Wait()
}
