package chaos

import (
	"context"
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
)

// Binaries are the paths of the built daemons.
type Binaries struct {
	Broker, NameServer string
}

// Build compiles the broker and the NameServer of the repository at root
// into dir.
func Build(root, dir string) (Binaries, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	b := Binaries{Broker: filepath.Join(dir, "broker"), NameServer: filepath.Join(dir, "nameserver")}
	for _, t := range []struct{ out, src string }{
		{b.Broker, filepath.Join(root, "broker", "cmd", "broker")},
		{b.NameServer, filepath.Join(root, "nameserver", "cmd", "nameserver")},
	} {
		cmd := exec.Command(goBin, "build", "-o", t.out, ".")
		cmd.Dir = t.src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("go build %s: %v\n%s", t.src, err, out)
		}
	}
	return b, nil
}

// Cluster is the system under test: two NameServers and one broker group
// (a SYNC_MASTER and its SLAVE, both SYNC_FLUSH), each process on a host
// of its own.
type Cluster struct {
	Net        *Network
	NameSrv    []*Process
	Master     *Process
	Slave      *Process
	BrokerName string
	dir        string
	mounts     []string
}

// Procs returns every process, NameServers first.
func (c *Cluster) Procs() []*Process {
	return append(append([]*Process{}, c.NameSrv...), c.Master, c.Slave)
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

// BrokerConfig is the configuration a campaign checks (written to the
// history's setup event).
var BrokerConfig = map[string]string{
	"brokerRole":    "SYNC_MASTER (slave: SLAVE)",
	"flushDiskType": "SYNC_FLUSH",
	"slaveTimeout":  "3000",
	"store":         "tmpfs per broker; diskSpaceWarningLevelRatio 90, diskMaxUsedSpaceRatio and diskSpaceCleanForciblyRatio 100",
}

// StoreDir returns the store root (a tmpfs of its own) of broker host
// "master" or "slave".
func (c *Cluster) StoreDir(host string) string { return filepath.Join(c.dir, host, "store") }

// StartCluster creates the hosts on net, writes the configurations under
// dir and starts every process, waiting until each listens. Each broker's
// store is a tmpfs of storeMiB (disk-full faults fill it).
func StartCluster(net *Network, bins Binaries, dir string, storeMiB int) (*Cluster, error) {
	c := &Cluster{Net: net, BrokerName: "chaos-a", dir: dir}
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
	for _, b := range []struct {
		name, role string
		id         int
	}{{"master", "SYNC_MASTER", 0}, {"slave", "SLAVE", 1}} {
		ip, err := net.AddHost(b.name)
		if err != nil {
			return c, err
		}
		pdir := filepath.Join(dir, b.name)
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return c, err
		}
		if err := mountStore(c.StoreDir(b.name), storeMiB); err != nil {
			return c, err
		}
		c.mounts = append(c.mounts, c.StoreDir(b.name))
		if err := net.TrackMount(c.StoreDir(b.name)); err != nil {
			return c, err
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
		if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			return c, err
		}
		p := &Process{Name: b.name, Host: b.name, Addr: fmt.Sprintf("%s:%d", ip, brokerPort),
			Argv: net.Exec(b.name, bins.Broker, "-c", conf), LogPath: filepath.Join(pdir, "broker.log")}
		if b.id == 0 {
			c.Master = p
		} else {
			c.Slave = p
		}
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

// WaitReady waits until the master lists a connected slave and both
// NameServers route topic (created on the master with queues queues if
// missing).
func (c *Cluster) WaitReady(ctx context.Context, admin *mqclient.Admin, topics []string, queues int) error {
	for _, t := range topics {
		for {
			err := admin.CreateTopicOn(ctx, c.Master.Addr, t, mqclient.TopicConfig{Queues: queues})
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
		st, err := admin.HAStatus(ctx, c.Master.Addr)
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
	for _, m := range c.mounts {
		_ = unmountStore(m)
	}
}
