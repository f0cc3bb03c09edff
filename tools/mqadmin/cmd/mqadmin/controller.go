package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/controllerclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Controller commands (RocketMQ 5 mqadmin's getControllerMetaData,
// getSyncStateSet and electMaster) talk to the controllers at -a, not to
// the NameServers (docs/controller.md).

func (e *cli) controllerFlags(name, usage string) (*common, func(args []string) error, *string) {
	_, co, parseArgs, addr := e.controllerFlagSet(name, usage)
	return co, parseArgs, addr
}

// controllerFlagSet is controllerFlags with the flag set, for commands
// with flags of their own.
func (e *cli) controllerFlagSet(name, usage string) (*flag.FlagSet, *common, func(args []string) error, *string) {
	fs, co := e.flags(name, "-a controllerAddr "+usage)
	addr := fs.String("a", e.getenv("CONTROLLER_ADDR"), "controller addresses, `host:port[;host:port]` (default $CONTROLLER_ADDR)")
	return fs, co, func(args []string) error {
		if err := parse(fs, args); err != nil {
			return err
		}
		return require("-a controllerAddr", *addr)
	}, addr
}

// controllerClient returns a client of the controllers at addrs (";"
// separated) and a function that closes it. It connects over TLS when the
// --tls* flags ask for it (a controller with tlsMode=enforcing, or
// mutual TLS: docs/controller.md); the controller has no ACL, so the
// access keys do not apply.
func (e *cli) controllerClient(co *common, addrs string) (*controllerclient.Client, func(), error) {
	cfg, err := co.sec.tlsConfig()
	if err != nil {
		return nil, nil, err
	}
	var list []string
	for _, a := range strings.Split(addrs, ";") {
		if a = strings.TrimSpace(a); a != "" {
			list = append(list, a)
		}
	}
	rc := remoting.NewClient(remoting.ClientOptions{TLSConfig: cfg})
	return controllerclient.New(rc, list), func() { rc.Close() }, nil
}

// withController runs fn with a client of the controllers at addrs and a
// context bounded by the command's --timeout; the client is closed when fn
// returns.
func (e *cli) withController(ctx context.Context, co *common, addrs string, fn func(context.Context, *controllerclient.Client) error) error {
	cli, closeFn, err := e.controllerClient(co, addrs)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(ctx, co.timeout)
	defer cancel()
	return fn(ctx, cli)
}

func runGetControllerMetaData(ctx context.Context, e *cli, args []string) error {
	co, parseArgs, addr := e.controllerFlags("getControllerMetaData", "")
	if err := parseArgs(args); err != nil {
		return err
	}
	cli, closeFn, err := e.controllerClient(co, *addr)
	if err != nil {
		return err
	}
	defer closeFn()
	type nodeView struct {
		Addr     string `json:"addr"`
		Group    string `json:"group"`
		IsLeader bool   `json:"isLeader"`
		LeaderID string `json:"leaderId"`
		Leader   string `json:"leaderAddress"`
		Peers    string `json:"peers"`
		Error    string `json:"error,omitempty"`
	}
	var nodes []nodeView
	for _, a := range cli.Addrs() {
		cctx, cancel := context.WithTimeout(ctx, co.timeout)
		md, err := cli.Metadata(cctx, a)
		cancel()
		if err != nil {
			nodes = append(nodes, nodeView{Addr: a, Error: err.Error()})
			continue
		}
		nodes = append(nodes, nodeView{Addr: a, Group: md.Group, IsLeader: md.IsLeader, LeaderID: md.ControllerLeaderID,
			Leader: md.ControllerLeaderAddress, Peers: md.Peers})
	}
	return e.emit(co.json, nodes, func(tw *tabwriter.Writer) {
		row(tw, "#Controller", "#Group", "#IsLeader", "#LeaderId", "#LeaderAddress", "#Error")
		for _, n := range nodes {
			row(tw, n.Addr, dash(n.Group), n.IsLeader, dash(n.LeaderID), dash(n.Leader), dash(n.Error))
		}
	})
}

func runGetSyncStateSet(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("getSyncStateSet", "-a controllerAddr -b brokerName[,brokerName]")
	addr := fs.String("a", e.getenv("CONTROLLER_ADDR"), "controller addresses, `host:port[;host:port]` (default $CONTROLLER_ADDR)")
	names := fs.String("b", "", "broker group names, comma-separated")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-a controllerAddr", *addr, "-b brokerName", *names); err != nil {
		return err
	}
	var info *protocol.BrokerReplicasInfo
	err := e.withController(ctx, co, *addr, func(ctx context.Context, cli *controllerclient.Client) (err error) {
		info, err = cli.SyncStateData(ctx, strings.Split(*names, ","))
		return err
	})
	if err != nil {
		return err
	}
	return e.emit(co.json, info.ReplicasInfoTable, func(tw *tabwriter.Writer) {
		row(tw, "#BrokerName", "#MasterId", "#MasterAddress", "#MasterEpoch", "#SyncStateSetEpoch", "#BrokerId", "#Address", "#InSync", "#Alive")
		for _, name := range strings.Split(*names, ",") {
			ri, ok := info.ReplicasInfoTable[name]
			if !ok {
				row(tw, name, "-", "-", "-", "-", "-", "-", "-", "-")
				continue
			}
			master := "-"
			if ri.MasterBrokerID != protocol.NoBrokerID {
				master = fmt.Sprint(ri.MasterBrokerID)
			}
			for _, set := range []struct {
				in bool
				rs []protocol.ReplicaIdentity
			}{{true, ri.InSyncReplicas}, {false, ri.NotInSyncReplicas}} {
				for _, r := range set.rs {
					row(tw, name, master, dash(ri.MasterAddress), ri.MasterEpoch, ri.SyncStateSetEpoch, r.BrokerID, r.BrokerAddress, set.in, r.Alive)
				}
			}
		}
	})
}

func runElectMaster(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("electMaster", "-a controllerAddr -b brokerName -i brokerId [-c cluster]")
	addr := fs.String("a", e.getenv("CONTROLLER_ADDR"), "controller addresses, `host:port[;host:port]` (default $CONTROLLER_ADDR)")
	name := fs.String("b", "", "broker group name")
	id := fs.Int64("i", protocol.NoBrokerID, "the broker id to make master (it must be an alive member of the SyncStateSet)")
	cluster := fs.String("c", "", "cluster name")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-a controllerAddr", *addr, "-b brokerName", *name); err != nil {
		return err
	}
	if *id < 0 {
		return usagef("-i brokerId is required")
	}
	var h *protocol.ElectMasterResponseHeader
	err := e.withController(ctx, co, *addr, func(ctx context.Context, cli *controllerclient.Client) (err error) {
		h, _, err = cli.ElectMaster(ctx, &protocol.ElectMasterRequestHeader{ClusterName: *cluster, BrokerName: *name,
			BrokerID: *id, DesignateElect: true})
		return err
	})
	if err != nil {
		return err
	}
	return e.emit(co.json, h, func(tw *tabwriter.Writer) {
		row(tw, "#BrokerName", "#MasterId", "#MasterAddress", "#MasterEpoch", "#SyncStateSetEpoch")
		row(tw, *name, h.MasterBrokerID, h.MasterAddress, h.MasterEpoch, h.SyncStateSetEpoch)
	})
}

func runListElections(ctx context.Context, e *cli, args []string) error {
	fs, co, parseArgs, addr := e.controllerFlagSet("listElections", "[-b brokerName]")
	name := fs.String("b", "", "broker group name (default: every group)")
	if err := parseArgs(args); err != nil {
		return err
	}
	var hist []protocol.Election
	err := e.withController(ctx, co, *addr, func(ctx context.Context, cli *controllerclient.Client) (err error) {
		hist, err = cli.ElectionHistory(ctx, *name)
		return err
	})
	if err != nil {
		return err
	}
	if hist == nil {
		hist = []protocol.Election{}
	}
	return e.emit(co.json, hist, func(tw *tabwriter.Writer) {
		row(tw, "#Time", "#BrokerName", "#Epoch", "#OldMaster", "#NewMaster", "#Reason", "#SyncStateSet")
		for _, el := range hist {
			at := "-"
			if !el.Time.IsZero() {
				at = el.Time.UTC().Format("2006-01-02T15:04:05.000Z")
			}
			row(tw, at, el.Group, el.Epoch, replicaRef(el.OldMaster, el.OldMasterAddr), replicaRef(el.NewMaster, el.NewMasterAddr),
				dash(el.Reason), fmt.Sprint(el.SyncStateSet))
		}
	})
}

// replicaRef shows a broker id with its address ("-" for none).
func replicaRef(id int64, addr string) string {
	if id == protocol.NoBrokerID {
		return "-"
	}
	if addr == "" {
		return fmt.Sprint(id)
	}
	return fmt.Sprintf("%d(%s)", id, addr)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
