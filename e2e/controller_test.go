package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/controllerclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Broker modes of the stack (E2E_BROKER_MODE). The default is the one
// `make up` runs: three controllers and broker-a's two replicas in
// controller mode (RocketMQ 5). masterslave is RocketMQ 4.x SYNC_MASTER +
// SLAVE; the scenario that kills the master differs between the two.
const (
	modeController  = "controller"
	modeMasterSlave = "masterslave"
)

func brokerMode() string {
	if envOr("E2E_BROKER_MODE", modeController) == modeMasterSlave {
		return modeMasterSlave
	}
	return modeController
}

const controllerPort = "9878/tcp"

// controllerNames are the aliases of the three controller nodes; node i
// reads deploy/compose/configs/controller/controller-n<i>.properties.
var controllerNames = []string{"controller1", "controller2", "controller3"}

// composeAddrs maps the fixed addresses of the compose demo's network to
// the e2e stack's aliases (the e2e network is not the compose one, so the
// compose configuration is reused with its addresses replaced).
var composeAddrs = strings.NewReplacer(
	"172.28.0.61", "controller1", "172.28.0.62", "controller2", "172.28.0.63", "controller3",
	"172.28.0.11", "namesrv1", "172.28.0.12", "namesrv2",
)

// composeConf reads a file of deploy/compose/configs/controller with the
// compose addresses replaced by aliases.
func composeConf(root, file string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "deploy/compose/configs/controller", file))
	if err != nil {
		return "", err
	}
	return composeAddrs.Replace(string(b)), nil
}

// controllerModeConf is the compose demo's broker-a.conf (controller mode)
// for the e2e replica name, with what differs here: no fixed brokerIP1
// (the broker takes its container address), no ACL (the e2e services run
// without credentials), smaller segments, faster check-backs, slave reads
// and the suite's HA secret.
func controllerModeConf(root, name string) (string, error) {
	base, err := composeConf(root, "broker-a.conf")
	if err != nil {
		return "", err
	}
	return overrideProps(base, map[string]string{
		"brokerIP1":                "",
		"aclEnable":                "",
		"plainAclFile":             "",
		"metricsPromExporterPort":  "",
		"mappedFileSizeCommitLog":  "67108864",
		"transactionCheckInterval": "2000",
		"slaveReadEnable":          "true",
		"haAuthSecret":             "e2e-ha-secret-0123456789",
	}), nil
}

// overrideProps returns a properties text with the keys of set replaced
// (an empty value drops the key) and the keys it did not have appended.
func overrideProps(base string, set map[string]string) string {
	var b strings.Builder
	done := map[string]bool{}
	for _, line := range strings.Split(base, "\n") {
		k, _, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if v, has := set[k]; ok && has && !strings.HasPrefix(k, "#") {
			done[k] = true
			if v != "" {
				fmt.Fprintf(&b, "%s=%s\n", k, v)
			}
			continue
		}
		b.WriteString(line + "\n")
	}
	for k, v := range set {
		if !done[k] && v != "" {
			fmt.Fprintf(&b, "%s=%s\n", k, v)
		}
	}
	return b.String()
}

func (s *stack) startController(ctx context.Context, i int) error {
	conf, err := composeConf(s.root, fmt.Sprintf("controller-n%d.properties", i))
	if err != nil {
		return err
	}
	return s.run(ctx, controllerNames[i], s.img.controller,
		testcontainers.WithFiles(testcontainers.ContainerFile{
			Reader:            strings.NewReader(conf),
			ContainerFilePath: "/etc/tide/controller.properties",
			FileMode:          0o644,
		}),
		testcontainers.WithCmd("-c", "/etc/tide/controller.properties"),
		testcontainers.WithExposedPorts(controllerPort),
		testcontainers.WithWaitStrategyAndDeadline(time.Minute, wait.ForLog("controller running")),
	)
}

// groupView is broker-a as the controller leader sees it, with the
// replicas named by container alias.
type groupView struct {
	Master      string // alias of the master ("" without one)
	MasterEpoch int32
	InSync      []string // aliases in the SyncStateSet
	Leader      string   // alias of the controller leader
}

func (g groupView) String() string {
	return fmt.Sprintf("master %q epoch %d SyncStateSet %v (controller leader %s)", g.Master, g.MasterEpoch, g.InSync, g.Leader)
}

// brokerGroup asks the controller leader (found through each node's
// metadata on its mapped port: a follower's redirect names an address
// inside the network) for broker-a's master, epoch and SyncStateSet.
func (s *stack) brokerGroup(ctx context.Context) (groupView, error) {
	rc := remoting.NewClient(remoting.ClientOptions{})
	defer rc.Close()
	for _, name := range controllerNames {
		if !s.running(ctx, name) {
			continue
		}
		ep, err := s.endpoint(ctx, name, controllerPort)
		if err != nil {
			continue
		}
		cli := controllerclient.New(rc, []string{ep})
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		md, err := cli.Metadata(cctx, ep)
		if err != nil || !md.IsLeader {
			cancel()
			continue
		}
		rs, err := cli.SyncStateData(cctx, []string{"broker-a"})
		cancel()
		if err != nil {
			return groupView{}, fmt.Errorf("sync state data from %s: %w", name, err)
		}
		byIP, err := s.brokerIPs(ctx)
		if err != nil {
			return groupView{}, err
		}
		alias := func(addr string) string {
			if a, ok := byIP[hostOf(addr)]; ok {
				return a
			}
			return addr // a replica whose container is down
		}
		ri := rs.ReplicasInfoTable["broker-a"]
		g := groupView{Leader: name, MasterEpoch: ri.MasterEpoch}
		if ri.MasterBrokerID != protocol.NoBrokerID {
			g.Master = alias(ri.MasterAddress)
		}
		for _, r := range ri.InSyncReplicas {
			g.InSync = append(g.InSync, alias(r.BrokerAddress))
		}
		return g, nil
	}
	return groupView{}, fmt.Errorf("no controller node says it is the leader")
}

func hostOf(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return addr[:i]
	}
	return addr
}

// brokerIPs maps the replicas' container addresses to their aliases.
func (s *stack) brokerIPs(ctx context.Context) (map[string]string, error) {
	m := map[string]string{}
	for _, name := range []string{"broker-a", "broker-a-s"} {
		if !s.running(ctx, name) {
			continue
		}
		ip, err := s.node(name).c.ContainerIP(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s address: %w", name, err)
		}
		m[ip] = name
	}
	return m, nil
}
