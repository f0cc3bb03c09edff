package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Fixed ports inside the hosts' namespaces (the chaos helper's range; each
// host has its own network stack, so they never collide).
const (
	nameServerPort = 21876
	brokerPort     = 21911
	haPort         = 21912

	controllerPort     = 21878
	controllerRaftPort = 21880
)

// Binaries are the paths of the built daemons.
type Binaries struct {
	Broker, NameServer, Controller string
}

// Build compiles the broker and the NameServer of the repository at root
// into dir.
func Build(root, dir string) (Binaries, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	b := Binaries{Broker: filepath.Join(dir, "broker"), NameServer: filepath.Join(dir, "nameserver"),
		Controller: filepath.Join(dir, "controller")}
	for _, t := range []struct{ out, src string }{
		{b.Broker, filepath.Join(root, "broker", "cmd", "broker")},
		{b.NameServer, filepath.Join(root, "nameserver", "cmd", "nameserver")},
		{b.Controller, filepath.Join(root, "controller", "cmd", "controller")},
	} {
		args := []string{"build", "-o", t.out}
		if t.out == b.Broker {
			// a wall clock the clock-jump fault can step (FClockJump)
			args = append(args, "-tags", BrokerBuildTags)
		}
		cmd := exec.Command(goBin, append(args, ".")...)
		cmd.Dir = t.src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("go build %s: %v\n%s", t.src, err, out)
		}
	}
	return b, nil
}

// Cluster modes.
const (
	// ModeMasterSlave: a SYNC_MASTER and its SLAVE (RocketMQ 4.x), no
	// failover: while the master is down nobody takes writes.
	ModeMasterSlave = "masterslave"
	// ModeController: three controllers (Raft) and two brokers in
	// controller mode (SYNC_MASTER flavour, allAckInSyncStateSet): the
	// controller elects a new master when the master is lost.
	ModeController = "controller"
)

// Cluster is the system under test: two NameServers and one broker group
// of two brokers (SYNC_FLUSH), and in controller mode three controllers,
// each process on a host of its own. In master/slave mode the brokers'
// hosts are "master" and "slave"; in controller mode "b1" and "b2", and
// which is master is asked of the NameServers (Roles).
type Cluster struct {
	Net         *Network
	Mode        string
	NameSrv     []*Process
	Controllers []*Process
	Brokers     []*Process
	BrokerName  string
	dir         string
	mounts      []string

	admin *mqclient.Admin // set by WaitReady, for Roles
}

// Procs returns every process: NameServers, controllers, brokers.
func (c *Cluster) Procs() []*Process {
	out := append([]*Process{}, c.NameSrv...)
	out = append(out, c.Controllers...)
	return append(out, c.Brokers...)
}

// Roles returns the current master and slave broker processes. In
// controller mode the master is the broker the NameServers route as
// broker id 0; when none is (an election in progress) the first broker
// stands for "master".
func (c *Cluster) Roles(ctx context.Context) (master, slave *Process) {
	if c.Mode != ModeController || c.admin == nil {
		return c.Brokers[0], c.Brokers[1]
	}
	if addr := c.MasterAddr(ctx); addr == c.Brokers[1].Addr {
		return c.Brokers[1], c.Brokers[0]
	}
	return c.Brokers[0], c.Brokers[1]
}

// MasterAddr returns the address the NameServers route as the broker
// group's master (broker id 0), or "" if none.
func (c *Cluster) MasterAddr(ctx context.Context) string {
	if c.Mode != ModeController || c.admin == nil {
		return c.Brokers[0].Addr
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ci, err := c.admin.ClusterInfo(ctx)
	if err != nil {
		return ""
	}
	return ci.BrokerAddrTable[c.BrokerName].BrokerAddrs[0]
}

// Host resolves a schedule's host name: "master" and "slave" are the
// current roles' hosts, other names are hosts.
func (c *Cluster) Host(ctx context.Context, name string) string {
	switch name {
	case "master":
		m, _ := c.Roles(ctx)
		return m.Host
	case "slave":
		_, s := c.Roles(ctx)
		return s.Host
	}
	return name
}

// Proc returns the process named name, or nil.
func (c *Cluster) Proc(name string) *Process {
	for _, p := range c.Procs() {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// NameServerAddrs are the NameServers' addresses.
func (c *Cluster) NameServerAddrs() []string {
	out := make([]string, len(c.NameSrv))
	for i, p := range c.NameSrv {
		out[i] = p.Addr
	}
	return out
}

// BrokerConfig returns the configuration a campaign checks (written to
// the history's setup event).
func BrokerConfig(mode string) map[string]string {
	cfg := map[string]string{
		"mode":          mode,
		"brokerRole":    "SYNC_MASTER (slave: SLAVE)",
		"flushDiskType": "SYNC_FLUSH",
		"slaveTimeout":  "3000",
		"store":         "ext4 on a loop device in RAM per broker; diskSpaceWarningLevelRatio 90, diskMaxUsedSpaceRatio and diskSpaceCleanForciblyRatio 100",
	}
	if mode == ModeController {
		cfg["brokerRole"] = "SYNC_MASTER flavour, roles from 3 controllers"
		cfg["allAckInSyncStateSet"] = "true"
		// only SEND_OK is on every replica the controller may elect
		cfg[ConfigDurable] = "SEND_OK"
	}
	return cfg
}

// StoreDir returns the store root (a file system of its own, mountStore)
// of broker host "master" or "slave".
func (c *Cluster) StoreDir(host string) string { return filepath.Join(c.dir, host, "store") }

// StartCluster creates the hosts on net, writes the configurations under
// dir and starts every process, waiting until each listens. Each broker's
// store is a file system of storeMiB (mountStore; disk faults fill or
// throttle it).
func StartCluster(net *Network, bins Binaries, dir string, storeMiB int, mode string) (*Cluster, error) {
	c := &Cluster{Net: net, Mode: mode, BrokerName: "chaos-a", dir: dir}
	var nsAddrs []string
	for _, name := range []string{"ns1", "ns2"} {
		ip, err := net.AddHost(name)
		if err != nil {
			return c, err
		}
		pdir := filepath.Join(dir, name)
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return c, err
		}
		conf := filepath.Join(pdir, "namesrv.properties")
		body := fmt.Sprintf("listenPort=%d\nbindAddress=%s\nkvConfigPath=%s\nscanNotActiveBrokerInterval=2000\nbrokerChannelExpiredTime=15000\n",
			nameServerPort, ip, filepath.Join(pdir, "kvConfig.json"))
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			return c, err
		}
		addr := fmt.Sprintf("%s:%d", ip, nameServerPort)
		nsAddrs = append(nsAddrs, addr)
		c.NameSrv = append(c.NameSrv, &Process{Name: name, Host: name, Addr: addr,
			Argv: net.Exec(name, bins.NameServer, "-c", conf), LogPath: filepath.Join(pdir, "nameserver.log")})
	}
	ctlAddrs, err := c.addControllers(bins)
	if err != nil {
		return c, err
	}
	brokers := []struct {
		name, role string
		id         int
	}{{"master", "SYNC_MASTER", 0}, {"slave", "SLAVE", 1}}
	if mode == ModeController {
		brokers = []struct {
			name, role string
			id         int
		}{{"b1", "SYNC_MASTER", 0}, {"b2", "SYNC_MASTER", 0}}
	}
	for _, b := range brokers {
		ip, err := net.AddHost(b.name)
		if err != nil {
			return c, err
		}
		pdir := filepath.Join(dir, b.name)
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return c, err
		}
		mounts, err := mountStore(c.StoreDir(b.name), storeMiB)
		if err != nil {
			return c, err
		}
		c.mounts = append(c.mounts, mounts...)
		for _, m := range mounts {
			if err := net.TrackMount(m); err != nil {
				return c, err
			}
		}
		conf := filepath.Join(pdir, "broker.conf")
		lines := []string{
			"brokerClusterName=ChaosCluster",
			"brokerName=" + c.BrokerName,
			fmt.Sprintf("brokerId=%d", b.id),
			"brokerRole=" + b.role,
			"flushDiskType=SYNC_FLUSH",
			"slaveTimeout=3000",
			fmt.Sprintf("listenPort=%d", brokerPort),
			"listenAddr=" + ip,
			"brokerIP1=" + ip,
			fmt.Sprintf("haListenPort=%d", haPort),
			"haAuthSecret=chaos-campaign-ha-secret",
			"namesrvAddr=" + strings.Join(nsAddrs, ";"),
			"storePathRootDir=" + filepath.Join(pdir, "store"),
			"autoCreateTopicEnable=true",
			"registerNameServerPeriod=3000",
			// check-backs come soon after a lost END_TRANSACTION, so the
			// drain can wait for them
			"transactionTimeOut=2000",
			"transactionCheckInterval=2000",
			// a full disk refuses writes (diskSpaceWarningLevelRatio, 90 %)
			// and never deletes unexpired messages to make room, so a
			// disk-full fault loses nothing acknowledged
			"diskMaxUsedSpaceRatio=100",
			"diskSpaceCleanForciblyRatio=100",
			"mappedFileSizeCommitLog=" + fmt.Sprint(8<<20),
			"mappedFileSizeConsumeQueue=" + fmt.Sprint(20*30000),
		}
		if mode == ModeController {
			lines = append(lines,
				"enableControllerMode=true",
				"controllerAddr="+strings.Join(ctlAddrs, ";"),
				"allAckInSyncStateSet=true",
				"controllerHeartBeatTimeoutMills=3000",
				"brokerHeartbeatInterval=500",
				"haMaxTimeSlaveNotCatchup=6000")
		}
		if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			return c, err
		}
		c.Brokers = append(c.Brokers, &Process{Name: b.name, Host: b.name, Addr: fmt.Sprintf("%s:%d", ip, brokerPort),
			Argv: net.Exec(b.name, bins.Broker, "-c", conf), LogPath: filepath.Join(pdir, "broker.log"),
			Env: []string{ClockOffsetEnv + "=" + c.ClockFile(b.name)}})
	}
	for _, p := range c.Procs() {
		if err := p.Start(); err != nil {
			return c, err
		}
		if err := p.WaitTCP(60 * time.Second); err != nil {
			return c, err
		}
	}
	return c, nil
}

// addControllers adds, in controller mode, the hosts and processes of
// three controllers and returns their remoting addresses.
func (c *Cluster) addControllers(bins Binaries) ([]string, error) {
	if c.Mode != ModeController {
		return nil, nil
	}
	names := []string{"c1", "c2", "c3"}
	var ips, raft, rpc []string
	for i, name := range names {
		ip, err := c.Net.AddHost(name)
		if err != nil {
			return nil, err
		}
		ips = append(ips, ip)
		raft = append(raft, fmt.Sprintf("n%d-%s:%d", i, ip, controllerRaftPort))
		rpc = append(rpc, fmt.Sprintf("n%d-%s:%d", i, ip, controllerPort))
	}
	var addrs []string
	for i, name := range names {
		pdir := filepath.Join(c.dir, name)
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return nil, err
		}
		conf := filepath.Join(pdir, "controller.properties")
		body := strings.Join([]string{
			"controllerDLegerGroup=chaos-controller",
			"controllerDLegerPeers=" + strings.Join(raft, ";"),
			"controllerRPCPeers=" + strings.Join(rpc, ";"),
			fmt.Sprintf("controllerDLegerSelfId=n%d", i),
			fmt.Sprintf("listenPort=%d", controllerPort),
			"bindAddress=" + ips[i],
			"controllerStorePath=" + filepath.Join(pdir, "store"),
			"scanNotActiveBrokerInterval=1000",
			"brokerHeartbeatTimeoutMills=3000",
		}, "\n") + "\n"
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("%s:%d", ips[i], controllerPort)
		addrs = append(addrs, addr)
		c.Controllers = append(c.Controllers, &Process{Name: name, Host: name, Addr: addr,
			Argv: c.Net.Exec(name, bins.Controller, "-c", conf), LogPath: filepath.Join(pdir, "controller.log")})
	}
	return addrs, nil
}

// WaitReady waits until the master lists a connected slave and both
// NameServers route topic (created on the master with queues queues if
// missing).
func (c *Cluster) WaitReady(ctx context.Context, admin *mqclient.Admin, topics []string, queues int) error {
	c.admin = admin
	var master string
	for master == "" {
		if master = c.MasterAddr(ctx); master == "" {
			if ctx.Err() != nil {
				return errors.New("no master routed by the NameServers")
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, t := range topics {
		for {
			err := admin.CreateTopicOn(ctx, master, t, mqclient.TopicConfig{Queues: queues})
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("create topic %s: %w", t, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for {
		st, err := admin.HAStatus(ctx, master)
		if err == nil && st.Server != nil && len(st.Server.Slaves) > 0 {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("slave never connected to the master: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, ns := range c.NameServerAddrs() {
		a, err := mqclient.NewAdmin(mqclient.WithNameServers(ns))
		if err != nil {
			return err
		}
		if err := a.Start(ctx); err != nil {
			return err
		}
		for _, t := range topics {
			if err := a.WaitTopic(ctx, t); err != nil {
				a.Shutdown(context.Background())
				return fmt.Errorf("topic %s not routed by %s: %w", t, ns, err)
			}
		}
		a.Shutdown(context.Background())
	}
	return nil
}

// Heal resumes paused processes and restarts dead ones, waiting until
// each listens.
func (c *Cluster) Heal() error {
	for _, p := range c.Procs() {
		if p.Paused() {
			if err := p.Resume(); err != nil {
				return err
			}
		}
		if !p.Running() {
			if err := p.Start(); err != nil {
				return err
			}
		}
	}
	for _, p := range c.Procs() {
		if err := p.WaitTCP(60 * time.Second); err != nil {
			return err
		}
	}
	return nil
}

// Stop kills every process and unmounts the stores (their files are
// gone then; the logs stay).
func (c *Cluster) Stop() {
	for _, p := range c.Procs() {
		if p != nil {
			if p.Paused() {
				_ = p.Resume()
			}
			_ = p.Kill()
		}
	}
	_ = unmountStore(c.mounts)
}
