package console

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/tidemq/tide/pkg/remoting/controllerclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// ErrNoController: the console was started without controller addresses
// (Options.ControllerAddrs), so the controller page has nothing to show.
// Answered 404.
var ErrNoController = fmt.Errorf("%w: no controller address configured (-controllerAddr or CONTROLLER_ADDR)", ErrNotFound)

// ControllerView is the controller page: the controller nodes and their
// leader, each broker group's master, epoch and SyncStateSet as the
// leader holds them, and the elections the console observed.
type ControllerView struct {
	Addrs     []string         `json:"controllerAddr"`
	Nodes     []ControllerNode `json:"nodes"`
	LeaderID  string           `json:"leaderId,omitempty"`
	Leader    string           `json:"leaderAddress,omitempty"`
	Groups    []ReplicaGroup   `json:"groups"`
	Elections []Election       `json:"elections"`
	// ElectionsError says why Elections are the console's own
	// observations instead of the controller's history ("" when they are
	// the controller's).
	ElectionsError string `json:"electionsError,omitempty"`
	// Error is set when the leader could not be asked for the groups
	// (no leader: an election in progress, or a majority down).
	Error string `json:"error,omitempty"`
}

// ControllerNode is one controller node's answer to
// CONTROLLER_GET_METADATA_INFO (or the error asking it).
type ControllerNode struct {
	Addr     string `json:"addr"`
	Group    string `json:"group,omitempty"`
	IsLeader bool   `json:"isLeader"`
	LeaderID string `json:"leaderId,omitempty"`
	Leader   string `json:"leaderAddress,omitempty"`
	Error    string `json:"error,omitempty"`
}

// ReplicaGroup is one broker group as the controller leader holds it.
type ReplicaGroup struct {
	BrokerName        string    `json:"brokerName"`
	MasterID          int64     `json:"masterBrokerId"` // protocol.NoBrokerID without a master
	MasterAddr        string    `json:"masterAddress,omitempty"`
	MasterEpoch       int32     `json:"masterEpoch"`
	SyncStateSetEpoch int32     `json:"syncStateSetEpoch"`
	Replicas          []Replica `json:"replicas"`
}

// HasMaster reports whether the group has a master.
func (g ReplicaGroup) HasMaster() bool { return g.MasterID != protocol.NoBrokerID }

// SyncStateSetSize is the number of replicas in the SyncStateSet.
func (g ReplicaGroup) SyncStateSetSize() int {
	n := 0
	for _, r := range g.Replicas {
		if r.InSync {
			n++
		}
	}
	return n
}

// Replica is one broker of a group.
type Replica struct {
	BrokerID int64  `json:"brokerId"`
	Addr     string `json:"addr"`
	Alive    bool   `json:"alive"`
	InSync   bool   `json:"inSyncStateSet"`
	Master   bool   `json:"master"`
}

// Election is one master election of a group, newest first in the view.
// From the controller's replicated history (Source "controller": every
// election the controller applied, the last 100 per group, with its time,
// trigger and SyncStateSet); or, from a controller without that history
// (or none answering), a change of a group's master epoch the console
// observed while it ran (Source "observed", At is when it looked; an
// epoch that moved by more than one between two looks was several
// elections).
type Election struct {
	At           time_   `json:"at"`
	BrokerName   string  `json:"brokerName"`
	FromEpoch    int32   `json:"fromEpoch"`
	FromMaster   string  `json:"fromMaster,omitempty"`
	Epoch        int32   `json:"epoch"`
	Master       string  `json:"master,omitempty"` // "" when the group was left without a master
	Reason       string  `json:"reason,omitempty"` // controller, broker or admin (Source controller)
	SyncStateSet []int64 `json:"syncStateSet,omitempty"`
	Source       string  `json:"source"`
}

// Sources of Election.
const (
	ElectionsFromController = "controller"
	ElectionsObserved       = "observed"
)

// electionsKept bounds the election log.
const electionsKept = 200

// electionLog remembers each group's last seen master and epoch and the
// changes. Safe for concurrent use.
type electionLog struct {
	mu   sync.Mutex
	last map[string]ReplicaGroup
	log  []Election // oldest first
}

// observe compares groups with the last look and records each epoch
// change; the first look at a group is its baseline.
func (l *electionLog) observe(groups []ReplicaGroup, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = map[string]ReplicaGroup{}
	}
	for _, g := range groups {
		prev, seen := l.last[g.BrokerName]
		l.last[g.BrokerName] = g
		if !seen || g.MasterEpoch <= prev.MasterEpoch {
			continue
		}
		e := Election{At: time_{now}, BrokerName: g.BrokerName, FromEpoch: prev.MasterEpoch, FromMaster: prev.MasterAddr,
			Epoch: g.MasterEpoch, Master: g.MasterAddr, Source: ElectionsObserved}
		l.log = append(l.log, e)
		if len(l.log) > electionsKept {
			l.log = l.log[len(l.log)-electionsKept:]
		}
	}
}

// newest returns the log, newest first.
func (l *electionLog) newest() []Election {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Election, 0, len(l.log))
	for i := len(l.log) - 1; i >= 0; i-- {
		out = append(out, l.log[i])
	}
	return out
}

// controller builds the controller page: every node's metadata, then the
// groups the NameServers know (by broker name) from the leader.
func (s *Server) controller(ctx context.Context) (*ControllerView, error) {
	if s.ctl == nil {
		return nil, ErrNoController
	}
	v := &ControllerView{Addrs: s.ctl.Addrs(), Nodes: []ControllerNode{}, Groups: []ReplicaGroup{}}
	for _, a := range v.Addrs {
		cctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
		md, err := s.ctl.Metadata(cctx, a)
		cancel()
		if err != nil {
			v.Nodes = append(v.Nodes, ControllerNode{Addr: a, Error: err.Error()})
			continue
		}
		v.Nodes = append(v.Nodes, ControllerNode{Addr: a, Group: md.Group, IsLeader: md.IsLeader, LeaderID: md.ControllerLeaderID,
			Leader: md.ControllerLeaderAddress})
		if md.ControllerLeaderAddress != "" {
			v.LeaderID, v.Leader = md.ControllerLeaderID, md.ControllerLeaderAddress
		}
	}
	groups, err := s.replicaGroups(ctx)
	if err != nil {
		v.Error = err.Error()
	} else {
		v.Groups = groups
	}
	v.Elections, v.ElectionsError = s.electionHistory(ctx)
	return v, nil
}

// electionHistory returns the controller's election history, newest
// first: the leader's, else the first node that answers (what it has
// applied). A controller without the history (REQUEST_CODE_NOT_SUPPORTED)
// or none answering leaves the elections this console observed, and the
// reason.
func (s *Server) electionHistory(ctx context.Context) ([]Election, string) {
	cctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	hist, err := s.ctl.ElectionHistory(cctx, "")
	cancel()
	for _, a := range s.ctl.Addrs() {
		if err == nil {
			break
		}
		cctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
		hist, err = s.ctl.ElectionHistoryAt(cctx, a, "")
		cancel()
	}
	if err != nil {
		return s.elections.newest(), fmt.Sprintf("the controller's election history is unavailable (%v): elections this console observed", err)
	}
	out := make([]Election, 0, len(hist))
	for i := len(hist) - 1; i >= 0; i-- {
		e := hist[i]
		out = append(out, Election{At: time_{e.Time}, BrokerName: e.Group, FromEpoch: e.Epoch - 1, FromMaster: e.OldMasterAddr,
			Epoch: e.Epoch, Master: e.NewMasterAddr, Reason: e.Reason, SyncStateSet: e.SyncStateSet, Source: ElectionsFromController})
	}
	return out, ""
}

// replicaGroups asks the controller leader for the groups of every broker
// name the NameServers know, and records epoch changes in the election
// log.
func (s *Server) replicaGroups(ctx context.Context) ([]ReplicaGroup, error) {
	bs, err := s.brokers(ctx)
	if err != nil {
		return nil, fmt.Errorf("broker names from the NameServers: %w", err)
	}
	var names []string
	seen := map[string]bool{}
	for _, b := range bs {
		if !seen[b.BrokerName] {
			seen[b.BrokerName] = true
			names = append(names, b.BrokerName)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	info, err := s.ctl.SyncStateData(cctx, names)
	if err != nil {
		return nil, fmt.Errorf("controller leader: %w", err)
	}
	groups := make([]ReplicaGroup, 0, len(info.ReplicasInfoTable))
	for name, ri := range info.ReplicasInfoTable {
		g := ReplicaGroup{BrokerName: name, MasterID: ri.MasterBrokerID, MasterAddr: ri.MasterAddress, MasterEpoch: ri.MasterEpoch,
			SyncStateSetEpoch: ri.SyncStateSetEpoch, Replicas: []Replica{}}
		add := func(rs []protocol.ReplicaIdentity, inSync bool) {
			for _, r := range rs {
				g.Replicas = append(g.Replicas, Replica{BrokerID: r.BrokerID, Addr: r.BrokerAddress, Alive: r.Alive, InSync: inSync,
					Master: r.BrokerID == ri.MasterBrokerID})
			}
		}
		add(ri.InSyncReplicas, true)
		add(ri.NotInSyncReplicas, false)
		sort.Slice(g.Replicas, func(i, j int) bool { return g.Replicas[i].BrokerID < g.Replicas[j].BrokerID })
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].BrokerName < groups[j].BrokerName })
	s.elections.observe(groups, s.now())
	return groups, nil
}

// validControllerAddrs checks ControllerAddrs (host:port each).
func validControllerAddrs(addrs []string) error {
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("%w: controller address %q: %v", ErrInvalidOptions, a, err)
		}
	}
	return nil
}

// newControllerClient returns nil without addresses.
func newControllerClient(s *Server) *controllerclient.Client {
	if len(s.opts.ControllerAddrs) == 0 {
		return nil
	}
	return controllerclient.New(s.ctlRC, s.opts.ControllerAddrs)
}
