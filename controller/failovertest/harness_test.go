//go:build cluster

package failovertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/tidemq/tide/broker/clustertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/controllerclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

var (
	bins          clustertest.Binaries
	controllerBin string
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("fatal")
	dir, err := os.MkdirTemp("", "tide-failovertest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	wd, _ := os.Getwd()
	root := filepath.Dir(filepath.Dir(wd)) // the repository
	bins, err = clustertest.Build(dir, filepath.Join(root, "broker"))
	if err == nil {
		controllerBin = filepath.Join(dir, "controller")
		err = goBuild(controllerBin, filepath.Join(root, "controller", "cmd", "controller"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func goBuild(out, src string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goBin, "build", "-o", out, ".")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", src, err, b)
	}
	return nil
}

// group is one test's processes: controllers, a NameServer, two brokers
// of group "fo" in controller mode (SYNC_MASTER, allAckInSyncStateSet).
type group struct {
	t       *testing.T
	dir     string
	rc      *remoting.Client
	cli     *controllerclient.Client
	ns      string
	ctls    []string
	brokers map[int64]*brokerProc // by controller id, once known
	all     []*brokerProc
	procs   []*clustertest.Process
	ctlGid  uint32 // group id of the controller processes (0: the test's)
	// brokerConf holds broker.conf keys a test adds to (or overrides in)
	// the brokers it starts afterwards.
	brokerConf map[string]string
}

type brokerProc struct {
	*clustertest.Process
	addr   string
	haPort string
}

const (
	groupName = "fo"
	// heartbeatTimeout is the brokers' controllerHeartBeatTimeoutMills:
	// the controller's failure detection, most of a failover.
	heartbeatTimeout = 3000
)

func newGroup(t *testing.T, controllers int) *group {
	t.Helper()
	return newGroupGid(t, controllers, 0)
}

// newGroupGid is newGroup with the controllers running as group ctlGid
// (root only; see netcut_test.go).
func newGroupGid(t *testing.T, controllers int, ctlGid uint32) *group {
	t.Helper()
	g := &group{t: t, dir: t.TempDir(), rc: remoting.NewClient(remoting.ClientOptions{DialTimeout: 2 * time.Second}),
		brokers: map[int64]*brokerProc{}, ctlGid: ctlGid}
	t.Cleanup(func() {
		for _, p := range g.procs {
			p.Kill()
		}
		if t.Failed() {
			for _, p := range g.procs {
				t.Logf("===== log of %s (%s)\n%s", p.Name, p.LogPath, p.Log(16<<10))
			}
		}
		g.rc.Close()
	})
	g.startControllers(controllers)
	g.cli = controllerclient.New(g.rc, g.ctls)
	g.startNameServer()
	return g
}

func (g *group) port() string {
	g.t.Helper()
	p, err := clustertest.FreePort()
	if err != nil {
		g.t.Fatal(err)
	}
	return strconv.Itoa(p)
}

func (g *group) writeConf(path string, kv map[string]string) {
	g.t.Helper()
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, kv[k])
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		g.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		g.t.Fatal(err)
	}
}

func (g *group) start(p *clustertest.Process, addr string) {
	g.t.Helper()
	if err := p.Start(); err != nil {
		g.t.Fatal(err)
	}
	if err := p.WaitTCP(addr, 30*time.Second); err != nil {
		g.t.Fatal(err)
	}
}

func (g *group) startControllers(n int) {
	g.t.Helper()
	var raft, rpc []string
	for i := range n {
		raft = append(raft, fmt.Sprintf("n%d-127.0.0.1:%s", i, g.port()))
		addr := "127.0.0.1:" + g.port()
		rpc = append(rpc, fmt.Sprintf("n%d-%s", i, addr))
		g.ctls = append(g.ctls, addr)
	}
	for i := range n {
		dir := filepath.Join(g.dir, fmt.Sprintf("controller%d", i))
		conf := filepath.Join(dir, "controller.properties")
		_, port, _ := strings.Cut(g.ctls[i], ":")
		g.writeConf(conf, map[string]string{"controllerDLegerPeers": strings.Join(raft, ";"),
			"controllerRPCPeers": strings.Join(rpc, ";"), "controllerDLegerSelfId": fmt.Sprintf("n%d", i),
			"listenPort": port, "bindAddress": "127.0.0.1", "controllerStorePath": filepath.Join(dir, "store"),
			"scanNotActiveBrokerInterval": "200"})
		p := &clustertest.Process{Name: fmt.Sprintf("controller%d", i), Bin: controllerBin, Args: []string{"-c", conf},
			LogPath: filepath.Join(dir, "controller.log"), Gid: g.ctlGid}
		g.procs = append(g.procs, p)
		g.start(p, g.ctls[i])
	}
	g.eventually(30*time.Second, "a controller leader", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		md, err := controllerclient.New(g.rc, g.ctls).Metadata(ctx, g.ctls[0])
		return err == nil && md.ControllerLeaderAddress != ""
	})
}

func (g *group) startNameServer() {
	g.t.Helper()
	dir := filepath.Join(g.dir, "ns")
	port := g.port()
	conf := filepath.Join(dir, "namesrv.properties")
	g.writeConf(conf, map[string]string{"listenPort": port, "bindAddress": "127.0.0.1",
		"kvConfigPath": filepath.Join(dir, "kvConfig.json"), "scanNotActiveBrokerInterval": "1000"})
	p := &clustertest.Process{Name: "ns", Bin: bins.NameServer, Args: []string{"-c", conf}, LogPath: filepath.Join(dir, "nameserver.log")}
	g.procs = append(g.procs, p)
	g.ns = "127.0.0.1:" + port
	g.start(p, g.ns)
}

// startBroker starts a broker of the group; it takes its id and role from
// the controllers.
func (g *group) startBroker(name string) *brokerProc {
	g.t.Helper()
	return g.startBrokerGid(name, 0)
}

// startBrokerGid is startBroker with the broker running as group gid
// (root only; see netcut_test.go).
func (g *group) startBrokerGid(name string, gid uint32) *brokerProc {
	g.t.Helper()
	dir := filepath.Join(g.dir, name)
	port, haPort := g.port(), g.port()
	conf := filepath.Join(dir, "broker.conf")
	g.writeConf(conf, mergeConf(map[string]string{
		"brokerClusterName": "DefaultCluster", "brokerName": groupName, "brokerRole": "SYNC_MASTER",
		"enableControllerMode": "true", "controllerAddr": strings.Join(g.ctls, ";"),
		"controllerHeartBeatTimeoutMills": strconv.Itoa(heartbeatTimeout), "brokerHeartbeatInterval": "300",
		"allAckInSyncStateSet": "true", "haMaxTimeSlaveNotCatchup": "5000", "slaveTimeout": "3000",
		"listenPort": port, "listenAddr": "127.0.0.1", "brokerIP1": "127.0.0.1", "haListenPort": haPort,
		"namesrvAddr": g.ns, "storePathRootDir": filepath.Join(dir, "store"),
		"mappedFileSizeCommitLog": strconv.Itoa(1 << 20), "mappedFileSizeConsumeQueue": strconv.Itoa(20 * 4000),
		"maxMessageSize": strconv.Itoa(64 << 10), "maxHashSlotNum": "1000", "maxIndexNum": "4000",
		"registerNameServerPeriod": "1000",
	}, g.brokerConf))
	b := &brokerProc{Process: &clustertest.Process{Name: name, Bin: bins.Broker, Args: []string{"-c", conf},
		LogPath: filepath.Join(dir, "broker.log"), Gid: gid}, addr: "127.0.0.1:" + port, haPort: haPort}
	g.procs = append(g.procs, b.Process)
	g.all = append(g.all, b)
	g.start(b.Process, b.addr)
	return b
}

// mergeConf returns base with extra's keys added or replaced.
func mergeConf(base, extra map[string]string) map[string]string {
	for k, v := range extra {
		base[k] = v
	}
	return base
}

// replicaInfo is the controller's view of the group.
func (g *group) replicaInfo() (protocol.MasterInfo, []int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	h, set, err := g.cli.ReplicaInfo(ctx, groupName)
	if err != nil {
		return protocol.MasterInfo{}, nil, err
	}
	return h.MasterInfo, slices.Sorted(slices.Values(set.SyncStateSet)), nil
}

// byAddr returns the broker process listening on addr.
func (g *group) byAddr(addr string) *brokerProc {
	for _, b := range g.all {
		if b.addr == addr {
			return b
		}
	}
	g.t.Fatalf("no broker at %s", addr)
	return nil
}

func (g *group) eventually(timeout time.Duration, what string, cond func() bool) {
	g.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			g.t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (g *group) invoke(addr string, req *protocol.Command) (*protocol.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := g.rc.Invoke(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	return resp, resp.Err()
}

func (g *group) maxPhyOffset(addr string) (int64, error) {
	resp, err := g.invoke(addr, protocol.NewRequest(protocol.TideHAStatus, nil, nil))
	if err != nil {
		return 0, err
	}
	st, err := protocol.DecodeHAStatus(resp.Body)
	if err != nil {
		return 0, err
	}
	return st.MaxPhyOffset, nil
}

// createTopic creates topic on the master and waits for its route.
func (g *group) createTopic(master, topic string, queues int32) {
	g.t.Helper()
	h := protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: queues, WriteQueueNums: queues,
		Perm: protocol.PermRead | protocol.PermWrite, TopicFilterType: "SINGLE_TAG"}
	if _, err := g.invoke(master, protocol.NewRequest(protocol.UpdateAndCreateTopic, h.Encode(), nil)); err != nil {
		g.t.Fatal(err)
	}
	g.eventually(20*time.Second, "the topic's route", func() bool {
		hh := protocol.GetRouteInfoRequestHeader{Topic: topic}
		resp, err := g.invoke(g.ns, protocol.NewRequest(protocol.GetRouteInfoByTopic, hh.Encode(), nil))
		return err == nil && resp.Code == protocol.Success
	})
}

// probeSend sends one message with a raw request; ok means SEND_OK.
func (g *group) probeSend(addr, topic string) bool {
	h := protocol.SendMessageRequestHeader{ProducerGroup: "probe", Topic: topic, DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 0, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1}
	resp, err := g.invoke(addr, protocol.NewRequest(protocol.SendMessage, h.Encode(), []byte("probe")))
	return err == nil && resp.Code == protocol.Success
}

// ledger records what each client had acknowledged SEND_OK (by body)
// and when each client last got a SEND_OK.
type ledger struct {
	mu     sync.Mutex
	acked  map[string]bool
	lastOK map[string]time.Time
	errs   map[string]int
}

func newLedger() *ledger {
	return &ledger{acked: map[string]bool{}, lastOK: map[string]time.Time{}, errs: map[string]int{}}
}

func (l *ledger) ok(client, body string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked[body] = true
	l.lastOK[client] = time.Now()
}

func (l *ledger) failed(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs[client]++
}

func (l *ledger) okSince(client string, t time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastOK[client].After(t)
}

func (l *ledger) snapshot() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]bool, len(l.acked))
	for k := range l.acked {
		out[k] = true
	}
	return out
}

// startInSyncPair starts b1 (the master), then b2, creates the test topic
// and waits until b2 is in the SyncStateSet.
func (g *group) startInSyncPair() (first, second *brokerProc) {
	g.t.Helper()
	first = g.startBroker("b1")
	g.eventually(30*time.Second, "b1 master", func() bool {
		m, _, err := g.replicaInfo()
		return err == nil && m.MasterAddress == first.addr
	})
	second = g.startBroker("b2")
	g.createTopic(first.addr, topic, queues)
	g.waitInSync("b2 in the SyncStateSet")
	return first, second
}

// waitInSync waits until the SyncStateSet has both brokers.
func (g *group) waitInSync(what string) {
	g.t.Helper()
	g.eventually(60*time.Second, what, func() bool {
		_, set, err := g.replicaInfo()
		return err == nil && len(set) == 2
	})
}

// newWritableMaster waits until the controller names a master other than
// old and it answers a raw send SEND_OK; it returns its address.
func (g *group) newWritableMaster(old *brokerProc) string {
	g.t.Helper()
	var newMaster string
	g.eventually(30*time.Second, "a new writable master", func() bool {
		mi, _, err := g.replicaInfo()
		if err != nil || mi.MasterBrokerID == protocol.NoBrokerID || mi.MasterAddress == old.addr {
			return false
		}
		newMaster = mi.MasterAddress
		return g.probeSend(newMaster, topic)
	})
	return newMaster
}

// rejoin restarts a killed broker and waits until it is back in the
// SyncStateSet.
func (g *group) rejoin(b *brokerProc) {
	g.t.Helper()
	if err := b.Start(); err != nil {
		g.t.Fatal(err)
	}
	if err := b.WaitTCP(b.addr, 30*time.Second); err != nil {
		g.t.Fatal(err)
	}
	g.waitInSync(fmt.Sprintf("%s back in the SyncStateSet", b.Name))
}

// master returns the broker the controller names master.
func (g *group) master() *brokerProc {
	g.t.Helper()
	m, _, err := g.replicaInfo()
	if err != nil {
		g.t.Fatal(err)
	}
	return g.byAddr(m.MasterAddress)
}
