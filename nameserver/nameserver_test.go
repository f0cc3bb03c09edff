package nameserver_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/nameserver"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newClient(t *testing.T) *remoting.Client {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{Logger: quietLogger()})
	t.Cleanup(func() { cl.Close() })
	return cl
}

func invoke(t *testing.T, cl *remoting.Client, addr string, req *protocol.Command) *protocol.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, req)
	if err != nil {
		t.Fatalf("invoke code %d: %v", req.Code, err)
	}
	return resp
}

type broker struct {
	cluster, name, addr string
	id                  int64
}

func registerRequest(t *testing.T, b broker, compressed bool, counter int64, tcs ...protocol.TopicConfig) *protocol.Command {
	t.Helper()
	body := &protocol.RegisterBrokerBody{
		TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
			DataVersion:      protocol.DataVersion{Timestamp: time.Now().UnixMilli(), Counter: counter},
			TopicConfigTable: map[string]protocol.TopicConfig{},
		},
	}
	for _, tc := range tcs {
		body.TopicConfigSerializeWrapper.TopicConfigTable[tc.TopicName] = tc
	}
	data, err := body.Encode(compressed)
	if err != nil {
		t.Fatal(err)
	}
	h := protocol.RegisterBrokerRequestHeader{
		BrokerName: b.name, BrokerAddr: b.addr, ClusterName: b.cluster, HAServerAddr: b.addr + "-ha",
		BrokerID: b.id, Compressed: compressed, BodyCRC32: protocol.BodyCRC(data),
	}
	return protocol.NewRequest(protocol.RegisterBroker, h.Encode(), data)
}

func topicConf(name string, queues int32) protocol.TopicConfig {
	return protocol.TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6, TopicFilterType: protocol.TopicFilterSingleTag}
}

func register(t *testing.T, cl *remoting.Client, ns string, b broker, compressed bool, tcs ...protocol.TopicConfig) *protocol.Command {
	t.Helper()
	resp := invoke(t, cl, ns, registerRequest(t, b, compressed, 1, tcs...))
	if resp.Code != protocol.Success {
		t.Fatalf("register: %v", resp.Err())
	}
	return resp
}

func route(t *testing.T, cl *remoting.Client, ns, topic string) (*protocol.TopicRouteData, *protocol.Command) {
	t.Helper()
	resp := invoke(t, cl, ns, protocol.NewRequest(protocol.GetRouteInfoByTopic, (&protocol.GetRouteInfoRequestHeader{Topic: topic}).Encode(), nil))
	if resp.Code != protocol.Success {
		return nil, resp
	}
	r, err := protocol.DecodeTopicRouteData(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return r, resp
}

func TestNameServerRegisterAndRoute(t *testing.T) {
	for _, compressed := range []bool{false, true} {
		name := "plain"
		if compressed {
			name = "compressed"
		}
		t.Run(name, func(t *testing.T) {
			ns := nameservertest.Start(t)
			cl := newClient(t)
			b := broker{"DefaultCluster", "broker-a", "127.0.0.1:10911", 0}
			resp := register(t, cl, ns, b, compressed, topicConf("TopicTest", 4), topicConf("TBW102", 8))
			if len(resp.Body) != 0 || resp.Ext("masterAddr") != "" {
				t.Fatalf("master register response: ext %v body %q", resp.ExtFields, resp.Body)
			}
			r, _ := route(t, cl, ns, "TopicTest")
			want := &protocol.TopicRouteData{
				QueueDatas:        []protocol.QueueData{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
				BrokerDatas:       []protocol.BrokerData{{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "127.0.0.1:10911"}}},
				FilterServerTable: map[string][]string{},
			}
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("route %+v\nwant %+v", r, want)
			}
		})
	}
}

func TestNameServerRouteBodyIsCompact(t *testing.T) {
	ns := nameservertest.Start(t)
	cl := newClient(t)
	register(t, cl, ns, broker{"c", "b", "127.0.0.1:10911", 0}, false, topicConf("t", 2))
	_, resp := route(t, cl, ns, "t")
	want := `{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"b","cluster":"c"}],"filterServerTable":{},"orderTopicConf":"",` +
		`"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}`
	if string(resp.Body) != want {
		t.Fatalf("body %s\nwant %s", resp.Body, want)
	}
}

func TestNameServerRegisterBadCRC(t *testing.T) {
	ns := nameservertest.Start(t)
	cl := newClient(t)
	req := registerRequest(t, broker{"c", "b", "127.0.0.1:10911", 0}, false, 1, topicConf("t", 4))
	req.SetExtInt("bodyCrc32", int64(protocol.BodyCRC(req.Body)^1))
	resp := invoke(t, cl, ns, req)
	if resp.Code != protocol.SystemError || resp.Remark != "crc32 not match" {
		t.Fatalf("got code %d remark %q", resp.Code, resp.Remark)
	}
	if _, resp := route(t, cl, ns, "t"); resp.Code != protocol.TopicNotExist {
		t.Fatal("rejected registration created a route")
	}
	// bodyCrc32 0 disables the check.
	req = registerRequest(t, broker{"c", "b", "127.0.0.1:10911", 0}, false, 1, topicConf("t", 4))
	req.SetExt("bodyCrc32", "0")
	if resp := invoke(t, cl, ns, req); resp.Code != protocol.Success {
		t.Fatalf("crc 0: %v", resp.Err())
	}
}

func TestNameServerRegisterBadRequests(t *testing.T) {
	ns := nameservertest.Start(t)
	cl := newClient(t)
	tests := []struct {
		name string
		mod  func(*protocol.Command)
	}{
		{"missing broker name", func(c *protocol.Command) { delete(c.ExtFields, "brokerName") }},
		{"bad broker id", func(c *protocol.Command) { c.SetExt("brokerId", "x") }},
		{"bad body", func(c *protocol.Command) { c.Body = []byte("{nope"); c.SetExt("bodyCrc32", "0") }},
		{"bad compressed body", func(c *protocol.Command) { c.SetExt("compressed", "true"); c.SetExt("bodyCrc32", "0") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := registerRequest(t, broker{"c", "b", "127.0.0.1:10911", 0}, false, 1, topicConf("t", 4))
			tc.mod(req)
			resp := invoke(t, cl, ns, req)
			if resp.Code != protocol.SystemError || resp.Remark == "" {
				t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
			}
		})
	}
}

func TestNameServerTopicNotExist(t *testing.T) {
	ns := nameservertest.Start(t)
	cl := newClient(t)
	_, resp := route(t, cl, ns, "missing")
	if resp.Code != protocol.TopicNotExist || resp.Remark != "No topic route info in name server for the topic: missing" {
		t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
	}
	resp = invoke(t, cl, ns, protocol.NewRequest(protocol.GetRouteInfoByTopic, nil, nil))
	if resp.Code != protocol.SystemError || !strings.Contains(resp.Remark, "topic") {
		t.Fatalf("no topic header: code %d remark %q", resp.Code, resp.Remark)
	}
}

func TestNameServerSlaveRegistration(t *testing.T) {
	ns := nameservertest.Start(t)
	cl := newClient(t)
	register(t, cl, ns, broker{"c", "b", "127.0.0.1:10911", 0}, false, topicConf("t", 4))
	resp := register(t, cl, ns, broker{"c", "b", "127.0.0.1:10921", 1}, false, topicConf("t", 4))
	var h protocol.RegisterBrokerResponseHeader
	h.Decode(resp.ExtFields)
	if h.MasterAddr != "127.0.0.1:10911" || h.HAServerAddr != "127.0.0.1:10911-ha" {
		t.Fatalf("slave response %+v", h)
	}
	r, _ := route(t, cl, ns, "t")
	if len(r.BrokerDatas[0].BrokerAddrs) != 2 {
		t.Fatalf("addrs %v", r.BrokerDatas[0].BrokerAddrs)
	}
}

func TestNameServerUnregister(t *testing.T) {
	ns := nameservertest.Start(t)
	cl := newClient(t)
	register(t, cl, ns, broker{"c", "b", "127.0.0.1:10911", 0}, false, topicConf("t", 4))
	h := protocol.UnregisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "127.0.0.1:10911", ClusterName: "c", BrokerID: 0}
	if resp := invoke(t, cl, ns, protocol.NewRequest(protocol.UnregisterBroker, h.Encode(), nil)); resp.Code != protocol.Success {
		t.Fatal(resp.Err())
	}
	if _, resp := route(t, cl, ns, "t"); resp.Code != protocol.TopicNotExist {
		t.Fatalf("route after unregister: code %d", resp.Code)
	}
}

func TestNameServerConnectionCloseRemovesBroker(t *testing.T) {
	ns := nameservertest.Start(t)
	brokerCl := newClient(t)
	cl := newClient(t)
	register(t, brokerCl, ns, broker{"c", "b", "127.0.0.1:10911", 0}, false, topicConf("t", 4))
	route(t, cl, ns, "t")
	brokerCl.CloseConn(ns)
	waitFor(t, func() bool {
		_, resp := route(t, cl, ns, "t")
		return resp.Code == protocol.TopicNotExist
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

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

func TestNameServerExpiryScan(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1e9, 0)}
	ns := nameservertest.Start(t, func(o *nameserver.Options) {
		o.Now = clk.Now
		o.ScanInterval = 5 * time.Millisecond
	})
	brokerCl := newClient(t)
	cl := newClient(t)
	register(t, brokerCl, ns, broker{"c", "b", "127.0.0.1:10911", 0}, false, topicConf("t", 4))
	clk.Advance(119 * time.Second)
	// Give several scans the chance to (wrongly) expire the broker: this
	// checks that something does not happen, so there is nothing to poll.
	time.Sleep(30 * time.Millisecond)
	if _, resp := route(t, cl, ns, "t"); resp.Code != protocol.Success {
		t.Fatal("broker expired early")
	}
	clk.Advance(2 * time.Second)
	waitFor(t, func() bool {
		_, resp := route(t, cl, ns, "t")
		return resp.Code == protocol.TopicNotExist
	})
	// The NameServer closed the expired broker's connection; the broker's
	// client redials on a later call and registers again.
	waitFor(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := registerRequest(t, broker{"c", "b", "127.0.0.1:10911", 0}, false, 1, topicConf("t", 4))
		resp, err := brokerCl.Invoke(ctx, ns, req)
		return err == nil && resp.Code == protocol.Success
	})
	if _, resp := route(t, cl, ns, "t"); resp.Code != protocol.Success {
		t.Fatal("re-registration after expiry failed")
	}
}

func TestNameServerClusterInfoAndTopicLists(t *testing.T) {
	ns := nameservertest.Start(t)
	cl := newClient(t)
	register(t, cl, ns, broker{"c1", "a", "127.0.0.1:1", 0}, false, topicConf("t1", 4), topicConf("shared", 4))
	register(t, cl, ns, broker{"c2", "b", "127.0.0.1:2", 0}, true, topicConf("t2", 4), topicConf("shared", 4))

	resp := invoke(t, cl, ns, protocol.NewRequest(protocol.GetBrokerClusterInfo, nil, nil))
	ci, err := protocol.DecodeClusterInfo(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ci.ClusterAddrTable, map[string][]string{"c1": {"a"}, "c2": {"b"}}) || ci.BrokerAddrTable["b"].BrokerAddrs[0] != "127.0.0.1:2" {
		t.Fatalf("cluster info %+v", ci)
	}

	resp = invoke(t, cl, ns, protocol.NewRequest(protocol.GetAllTopicListFromNameServer, nil, nil))
	tl, err := protocol.DecodeTopicList(resp.Body)
	if err != nil || !reflect.DeepEqual(tl.TopicList, []string{"shared", "t1", "t2"}) {
		t.Fatalf("all topics %+v %v", tl, err)
	}

	resp = invoke(t, cl, ns, protocol.NewRequest(protocol.GetTopicsByCluster, (&protocol.GetTopicsByClusterRequestHeader{Cluster: "c2"}).Encode(), nil))
	tl, err = protocol.DecodeTopicList(resp.Body)
	if err != nil || !reflect.DeepEqual(tl.TopicList, []string{"shared", "t2"}) {
		t.Fatalf("cluster topics %+v %v", tl, err)
	}

	del := &protocol.DeleteTopicInNamesrvRequestHeader{Topic: "shared", ClusterName: "c1"}
	if resp := invoke(t, cl, ns, protocol.NewRequest(protocol.DeleteTopicInNameServer, del.Encode(), nil)); resp.Code != protocol.Success {
		t.Fatal(resp.Err())
	}
	r, _ := route(t, cl, ns, "shared")
	if len(r.QueueDatas) != 1 || r.QueueDatas[0].BrokerName != "b" {
		t.Fatalf("after cluster delete %+v", r.QueueDatas)
	}
	del = &protocol.DeleteTopicInNamesrvRequestHeader{Topic: "shared"}
	invoke(t, cl, ns, protocol.NewRequest(protocol.DeleteTopicInNameServer, del.Encode(), nil))
	if _, resp := route(t, cl, ns, "shared"); resp.Code != protocol.TopicNotExist {
		t.Fatal("topic survives delete")
	}
}

func TestNameServerQueryDataVersion(t *testing.T) {
	ns := nameservertest.Start(t)
	cl := newClient(t)
	b := broker{"c", "b", "127.0.0.1:10911", 0}
	reg := registerRequest(t, b, false, 7, topicConf("t", 4))
	invoke(t, cl, ns, reg)
	body, _ := protocol.DecodeRegisterBrokerBody(reg.Body, false)
	v := body.TopicConfigSerializeWrapper.DataVersion

	h := protocol.QueryDataVersionRequestHeader{BrokerName: b.name, BrokerAddr: b.addr, ClusterName: b.cluster}
	resp := invoke(t, cl, ns, protocol.NewRequest(protocol.QueryDataVersion, h.Encode(), v.Encode()))
	if resp.Code != protocol.Success || resp.Ext("changed") != "false" {
		t.Fatalf("same version: code %d ext %v", resp.Code, resp.ExtFields)
	}
	if got, err := protocol.DecodeDataVersion(resp.Body); err != nil || got != v {
		t.Fatalf("stored version %+v %v", got, err)
	}
	v.Counter++
	resp = invoke(t, cl, ns, protocol.NewRequest(protocol.QueryDataVersion, h.Encode(), v.Encode()))
	if resp.Ext("changed") != "true" {
		t.Fatalf("new version: ext %v", resp.ExtFields)
	}
	resp = invoke(t, cl, ns, protocol.NewRequest(protocol.QueryDataVersion, h.Encode(), []byte("x")))
	if resp.Code != protocol.SystemError {
		t.Fatalf("bad body: code %d", resp.Code)
	}
}

func TestNameServerKVConfig(t *testing.T) {
	kvPath := filepath.Join(t.TempDir(), "kv", "kvConfig.json")
	ns := nameservertest.Start(t, func(o *nameserver.Options) { o.KVConfigPath = kvPath })
	cl := newClient(t)
	put := &protocol.PutKVConfigRequestHeader{Namespace: protocol.NamespaceOrderTopicConfig, Key: "ordered", Value: "broker-a:4"}
	if resp := invoke(t, cl, ns, protocol.NewRequest(protocol.PutKVConfig, put.Encode(), nil)); resp.Code != protocol.Success {
		t.Fatal(resp.Err())
	}

	get := &protocol.KVConfigRequestHeader{Namespace: protocol.NamespaceOrderTopicConfig, Key: "ordered"}
	resp := invoke(t, cl, ns, protocol.NewRequest(protocol.GetKVConfig, get.Encode(), nil))
	if resp.Code != protocol.Success || resp.Ext("value") != "broker-a:4" {
		t.Fatalf("get: code %d ext %v", resp.Code, resp.ExtFields)
	}

	list := &protocol.GetKVListByNamespaceRequestHeader{Namespace: protocol.NamespaceOrderTopicConfig}
	resp = invoke(t, cl, ns, protocol.NewRequest(protocol.GetKVListByNamespace, list.Encode(), nil))
	kv, err := protocol.DecodeKVTable(resp.Body)
	if err != nil || kv.Table["ordered"] != "broker-a:4" {
		t.Fatalf("list %+v %v", kv, err)
	}

	// The order config reaches routes and registration responses.
	regResp := register(t, cl, ns, broker{"c", "broker-a", "127.0.0.1:10911", 0}, false, topicConf("ordered", 4))
	if kv, err := protocol.DecodeKVTable(regResp.Body); err != nil || kv.Table["ordered"] != "broker-a:4" {
		t.Fatalf("register response body %q", regResp.Body)
	}
	if r, _ := route(t, cl, ns, "ordered"); r.OrderTopicConf != "broker-a:4" {
		t.Fatalf("orderTopicConf %q", r.OrderTopicConf)
	}

	data, err := os.ReadFile(kvPath)
	if err != nil || !strings.Contains(string(data), `"broker-a:4"`) {
		t.Fatalf("kv file %q %v", data, err)
	}

	if resp := invoke(t, cl, ns, protocol.NewRequest(protocol.DeleteKVConfig, get.Encode(), nil)); resp.Code != protocol.Success {
		t.Fatal(resp.Err())
	}
	resp = invoke(t, cl, ns, protocol.NewRequest(protocol.GetKVConfig, get.Encode(), nil))
	if resp.Code != protocol.QueryNotFound {
		t.Fatalf("get after delete: code %d", resp.Code)
	}
	resp = invoke(t, cl, ns, protocol.NewRequest(protocol.GetKVListByNamespace, list.Encode(), nil))
	if resp.Code != protocol.QueryNotFound {
		t.Fatalf("list after delete: code %d", resp.Code)
	}
	resp = invoke(t, cl, ns, protocol.NewRequest(protocol.PutKVConfig, map[string]string{"namespace": "n"}, nil))
	if resp.Code != protocol.SystemError {
		t.Fatalf("put without key: code %d", resp.Code)
	}
}

func TestNameServerUnknownCode(t *testing.T) {
	ns := nameservertest.Start(t)
	cl := newClient(t)
	resp := invoke(t, cl, ns, protocol.NewRequest(protocol.SendMessage, nil, nil))
	if resp.Code != protocol.RequestCodeNotSupported {
		t.Fatalf("code %d", resp.Code)
	}
}

func TestNameServerTwoIndependentInstances(t *testing.T) {
	ns1 := nameservertest.Start(t)
	ns2 := nameservertest.Start(t)
	cl := newClient(t)
	// A broker registers with every NameServer; each keeps its own table.
	register(t, cl, ns1, broker{"c", "a", "127.0.0.1:1", 0}, false, topicConf("t", 4))
	register(t, cl, ns2, broker{"c", "a", "127.0.0.1:1", 0}, true, topicConf("t", 4))
	register(t, cl, ns2, broker{"c", "b", "127.0.0.1:2", 0}, false, topicConf("only-2", 4))
	r1, _ := route(t, cl, ns1, "t")
	r2, _ := route(t, cl, ns2, "t")
	if !reflect.DeepEqual(r1, r2) {
		t.Fatalf("routes differ:\n%+v\n%+v", r1, r2)
	}
	if _, resp := route(t, cl, ns1, "only-2"); resp.Code != protocol.TopicNotExist {
		t.Fatal("registration leaked between NameServers")
	}
	cl.CloseConn(ns1)
	waitFor(t, func() bool {
		_, resp := route(t, cl, ns1, "t")
		return resp.Code == protocol.TopicNotExist
	})
	if _, resp := route(t, cl, ns2, "t"); resp.Code != protocol.Success {
		t.Fatal("closing a connection to one NameServer affected the other")
	}
}

func TestNameServerLifecycle(t *testing.T) {
	o := nameserver.DefaultOptions()
	o.ListenAddr = "127.0.0.1:0"
	o.Logger = quietLogger()
	ns, err := nameserver.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if ns.Addr() != "" {
		t.Fatal("address before start")
	}
	ctx := context.Background()
	if err := ns.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(ctx); !errors.Is(err, nameserver.ErrState) {
		t.Fatalf("second start: %v", err)
	}
	addr := ns.Addr()
	if err := ns.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ns.Shutdown(ctx); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("still accepting after shutdown")
	}

	// Port in use.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	o.ListenAddr = ln.Addr().String()
	ns, err = nameserver.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(ctx); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("start on a used port: %v", err)
	}
	ns.Shutdown(ctx)
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*nameserver.Options)
		ok   bool
	}{
		{"defaults", func(*nameserver.Options) {}, true},
		{"port 0", func(o *nameserver.Options) { o.ListenAddr = "127.0.0.1:0" }, true},
		{"all interfaces", func(o *nameserver.Options) { o.ListenAddr = ":9876" }, true},
		{"ipv6", func(o *nameserver.Options) { o.ListenAddr = "[::1]:9876" }, true},
		{"no port", func(o *nameserver.Options) { o.ListenAddr = "127.0.0.1" }, false},
		{"port too big", func(o *nameserver.Options) { o.ListenAddr = ":65536" }, false},
		{"port not a number", func(o *nameserver.Options) { o.ListenAddr = ":x" }, false},
		{"bad host", func(o *nameserver.Options) { o.ListenAddr = "a b:1" }, false},
		{"zero scan", func(o *nameserver.Options) { o.ScanInterval = 0 }, false},
		{"negative expiry", func(o *nameserver.Options) { o.BrokerExpiry = -1 }, false},
		{"negative frame", func(o *nameserver.Options) { o.MaxFrameSize = -1 }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := nameserver.DefaultOptions()
			tc.mod(&o)
			err := o.Validate()
			if tc.ok != (err == nil) {
				t.Fatalf("err %v", err)
			}
			if err != nil && !errors.Is(err, nameserver.ErrInvalidOptions) {
				t.Fatalf("err %v does not wrap ErrInvalidOptions", err)
			}
			if _, nerr := nameserver.New(o); (nerr == nil) != tc.ok {
				t.Fatalf("New: %v", nerr)
			}
		})
	}
}
