package controller

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// State is the replicated state: every broker group the controller knows.
// It changes only by applying commands from the Raft log (fsm.Apply), so
// every controller node holds the same State for the same log index.
type State struct {
	Groups map[string]*Group `json:"groups"`
	// Elections is each group's history of master elections, the last
	// protocol.MaxElectionHistory, oldest first (history.go). Snapshots
	// taken before it existed restore with none.
	Elections map[string][]protocol.Election `json:"elections,omitempty"`
}

// Group is one broker group (a brokerName): its replicas, its master and
// the SyncStateSet, each with its epoch. MasterID is protocol.NoBrokerID
// when the group has no master.
type Group struct {
	Cluster           string             `json:"cluster"`
	BrokerName        string             `json:"brokerName"`
	Replicas          map[int64]*Replica `json:"replicas"`
	MasterID          int64              `json:"masterId"`
	MasterEpoch       int32              `json:"masterEpoch"`
	SyncStateSet      []int64            `json:"syncStateSet"` // sorted
	SyncStateSetEpoch int32              `json:"syncStateSetEpoch"`
}

// Replica is one broker of a group.
type Replica struct {
	Addr      string `json:"addr"`
	CheckCode string `json:"checkCode"` // the registerCheckCode it applied with
}

func newState() *State {
	return &State{Groups: map[string]*Group{}, Elections: map[string][]protocol.Election{}}
}

// clone returns a deep copy (for snapshots and for readers).
func (g *Group) clone() *Group {
	c := *g
	c.Replicas = make(map[int64]*Replica, len(g.Replicas))
	for id, r := range g.Replicas {
		rc := *r
		c.Replicas[id] = &rc
	}
	c.SyncStateSet = slices.Clone(g.SyncStateSet)
	return &c
}

// InSync reports whether id is in the SyncStateSet.
func (g *Group) InSync(id int64) bool { return slices.Contains(g.SyncStateSet, id) }

// HasMaster reports whether the group has a master.
func (g *Group) HasMaster() bool { return g.MasterID != protocol.NoBrokerID }

// MasterAddr is the master's address ("" without a master).
func (g *Group) MasterAddr() string { return g.addr(g.MasterID) }

func (g *Group) addr(id int64) string {
	if r, ok := g.Replicas[id]; ok {
		return r.Addr
	}
	return ""
}

// nextID is the id the next new replica gets: one more than the highest.
func (g *Group) nextID() int64 {
	next := protocol.FirstBrokerControllerID
	for id := range g.Replicas {
		if id >= next {
			next = id + 1
		}
	}
	return next
}

// ids returns the replica ids, sorted.
func (g *Group) ids() []int64 { return slices.Sorted(maps.Keys(g.Replicas)) }

// masterInfo is the group's master part of a response header.
func (g *Group) masterInfo() protocol.MasterInfo {
	return protocol.MasterInfo{MasterBrokerID: g.MasterID, MasterAddress: g.MasterAddr(),
		MasterEpoch: g.MasterEpoch, SyncStateSetEpoch: g.SyncStateSetEpoch}
}

// command kinds of the Raft log.
const (
	cmdApplyBrokerID     = "applyBrokerId"
	cmdUpdateAddr        = "updateAddress"
	cmdElectMaster       = "electMaster"
	cmdAlterSyncStateSet = "alterSyncStateSet"
)

// command is one entry of the Raft log (JSON). Each command carries the
// epochs its proposer saw, and apply refuses it if they changed in
// between: a decision made on a stale view never lands (fencing in the
// log itself, not only in the leader's checks).
type command struct {
	Kind       string  `json:"kind"`
	Cluster    string  `json:"cluster,omitempty"`
	BrokerName string  `json:"brokerName"`
	BrokerID   int64   `json:"brokerId"`
	Addr       string  `json:"addr,omitempty"`
	CheckCode  string  `json:"checkCode,omitempty"`
	NewSet     []int64 `json:"newSet,omitempty"`
	// the epochs the proposer saw
	MasterEpoch       int32 `json:"masterEpoch"`
	SyncStateSetEpoch int32 `json:"syncStateSetEpoch"`
	// electMaster: when the leader proposed it (Unix ms, its clock: apply
	// must not read the clock, every node applies the same value) and
	// what triggered it, for the election history
	Time   int64  `json:"time,omitempty"`
	Reason string `json:"reason,omitempty"`
}

func (c *command) encode() []byte {
	b, _ := json.Marshal(c)
	return b
}

// result is what applying a command returns to its proposer: a response
// code (protocol.Success or a controller code), its remark, and the
// group after the command.
type result struct {
	Code   int16
	Remark string
	Group  *Group
}

func fail(code int16, format string, args ...any) *result {
	return &result{Code: code, Remark: fmt.Sprintf(format, args...)}
}

// apply changes the state by one command. It never panics on bad input:
// a command that does not fit the state is refused with a code.
func (s *State) apply(c *command) *result {
	switch c.Kind {
	case cmdApplyBrokerID:
		return s.applyBrokerID(c)
	case cmdUpdateAddr:
		return s.updateAddr(c)
	case cmdElectMaster:
		return s.electMaster(c)
	case cmdAlterSyncStateSet:
		return s.alterSyncStateSet(c)
	}
	return fail(protocol.ControllerInvalidRequest, "unknown command %q", c.Kind)
}

// applyBrokerID gives a broker its id: the first broker of a new group
// must take FirstBrokerControllerID; later ones a free id, or an id they
// already hold (same check code: a restart).
func (s *State) applyBrokerID(c *command) *result {
	g, ok := s.Groups[c.BrokerName]
	if !ok {
		if c.BrokerID != protocol.FirstBrokerControllerID {
			return fail(protocol.ControllerBrokerIDInvalid,
				"broker group %s is not registered, the first broker must apply for id %d, not %d",
				c.BrokerName, protocol.FirstBrokerControllerID, c.BrokerID)
		}
		g = &Group{Cluster: c.Cluster, BrokerName: c.BrokerName, Replicas: map[int64]*Replica{},
			MasterID: protocol.NoBrokerID}
		s.Groups[c.BrokerName] = g
	} else if r, held := g.Replicas[c.BrokerID]; held && r.CheckCode != c.CheckCode {
		return fail(protocol.ControllerBrokerIDInvalid, "broker id %d of group %s is held by another broker (%s)",
			c.BrokerID, c.BrokerName, r.Addr)
	}
	if c.BrokerID < protocol.FirstBrokerControllerID {
		return fail(protocol.ControllerBrokerIDInvalid, "broker id %d is below %d", c.BrokerID, protocol.FirstBrokerControllerID)
	}
	g.Replicas[c.BrokerID] = &Replica{Addr: c.Addr, CheckCode: c.CheckCode}
	return &result{Code: protocol.Success, Group: g.clone()}
}

func (s *State) updateAddr(c *command) *result {
	g, r := s.replica(c.BrokerName, c.BrokerID)
	if r == nil {
		return fail(protocol.ControllerBrokerNeedToBeRegistered, "broker %s/%d is not registered", c.BrokerName, c.BrokerID)
	}
	r.Addr = c.Addr
	return &result{Code: protocol.Success, Group: g.clone()}
}

// electMaster makes c.BrokerID the master (or leaves the group without
// one for NoBrokerID), bumping the master epoch. A new master starts a
// SyncStateSet of itself alone and bumps its epoch; without a master the
// SyncStateSet is kept, so a replica of it can be elected when it returns.
func (s *State) electMaster(c *command) *result {
	g, ok := s.Groups[c.BrokerName]
	if !ok {
		return fail(protocol.ControllerBrokerNeedToBeRegistered, "broker group %s is not registered", c.BrokerName)
	}
	if g.MasterEpoch != c.MasterEpoch || g.SyncStateSetEpoch != c.SyncStateSetEpoch {
		return fail(protocol.ControllerElectMasterFailed,
			"group %s changed while electing (master epoch %d, sync state set epoch %d; proposal saw %d, %d)",
			c.BrokerName, g.MasterEpoch, g.SyncStateSetEpoch, c.MasterEpoch, c.SyncStateSetEpoch)
	}
	if c.BrokerID != protocol.NoBrokerID {
		if _, ok := g.Replicas[c.BrokerID]; !ok {
			return fail(protocol.ControllerInvalidReplicas, "broker %s/%d is not registered", c.BrokerName, c.BrokerID)
		}
		g.SyncStateSet = []int64{c.BrokerID}
		g.SyncStateSetEpoch++
	}
	old := g.MasterID
	oldAddr := g.MasterAddr()
	g.MasterID = c.BrokerID
	g.MasterEpoch++
	s.recordElection(c, g, old, oldAddr)
	return &result{Code: protocol.Success, Group: g.clone()}
}

// alterSyncStateSet replaces the SyncStateSet on behalf of the current
// master of the current epochs only. The change that made the current set,
// proposed again, is answered with the group as it is (alterApplied).
func (s *State) alterSyncStateSet(c *command) *result {
	g, ok := s.Groups[c.BrokerName]
	if !ok {
		return fail(protocol.ControllerAlterSyncStateSetFailed, "broker group %s is not registered", c.BrokerName)
	}
	if alterApplied(g, c.BrokerID, c.MasterEpoch, c.SyncStateSetEpoch, c.NewSet) {
		return &result{Code: protocol.Success, Group: g.clone()}
	}
	if code, remark := checkAlter(g, c.BrokerID, c.MasterEpoch, c.SyncStateSetEpoch, c.NewSet); code != protocol.Success {
		return &result{Code: code, Remark: remark}
	}
	g.SyncStateSet = slices.Sorted(slices.Values(c.NewSet))
	g.SyncStateSetEpoch++
	return &result{Code: protocol.Success, Group: g.clone()}
}

// alterApplied reports whether an ALTER_SYNC_STATE_SET is the change that
// made the group's current SyncStateSet: from the master of the current
// master epoch, computed from the SyncStateSet epoch just before the
// current one, for the set the group holds. That is a retry of a change
// that committed although its proposer never heard so: a leader that
// loses its leadership while committing answers CONTROLLER_NOT_LEADER
// ("leadership lost while committing log": the entry may have committed),
// and controllerclient sends the same request to the new leader. Fenced
// as a stale epoch (CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH), the master
// kept its old set and epoch until its next GET_REPLICA_INFO (a grown set
// it did not wait for, though the controller may elect from it); answered
// with the group as it is, it learns the set and epoch the controller
// holds. Nothing changes: only this master of this master epoch changes
// the set, so the set at the next epoch is its own proposal's.
func alterApplied(g *Group, master int64, masterEpoch, sse int32, set []int64) bool {
	return g.HasMaster() && g.MasterID == master && g.MasterEpoch == masterEpoch && sse+1 == g.SyncStateSetEpoch &&
		slices.Equal(slices.Sorted(slices.Values(set)), g.SyncStateSet)
}

// checkAlter validates an ALTER_SYNC_STATE_SET against the group (liveness
// is the leader's separate check): the asker must be the master of the
// current master epoch, the set must be computed from the current
// SyncStateSet epoch, contain the master and only registered replicas.
func checkAlter(g *Group, master int64, masterEpoch, sse int32, set []int64) (int16, string) {
	switch {
	case !g.HasMaster() || g.MasterID != master:
		return protocol.ControllerInvalidMaster, fmt.Sprintf("broker %d is not the master of %s (master is %d)",
			master, g.BrokerName, g.MasterID)
	case masterEpoch != g.MasterEpoch:
		return protocol.ControllerFencedMasterEpoch, fmt.Sprintf("master epoch %d is stale, current is %d",
			masterEpoch, g.MasterEpoch)
	case sse != g.SyncStateSetEpoch:
		return protocol.ControllerFencedSyncStateSetEpoch, fmt.Sprintf("sync state set epoch %d is stale, current is %d",
			sse, g.SyncStateSetEpoch)
	case !slices.Contains(set, master):
		return protocol.ControllerAlterSyncStateSetFailed, fmt.Sprintf("the new sync state set %v lacks the master %d", set, master)
	case slices.Equal(slices.Sorted(slices.Values(set)), g.SyncStateSet):
		return protocol.ControllerAlterSyncStateSetFailed, "the new sync state set equals the current one"
	}
	for _, id := range set {
		if _, ok := g.Replicas[id]; !ok {
			return protocol.ControllerInvalidReplicas, fmt.Sprintf("replica %d of %s is not registered", id, g.BrokerName)
		}
	}
	return protocol.Success, ""
}

func (s *State) replica(name string, id int64) (*Group, *Replica) {
	g, ok := s.Groups[name]
	if !ok {
		return nil, nil
	}
	return g, g.Replicas[id]
}

// names returns the group names, sorted.
func (s *State) names() []string { return slices.Sorted(maps.Keys(s.Groups)) }

// String is a compact description for logs.
func (g *Group) String() string {
	ids := make([]string, 0, len(g.Replicas))
	for _, id := range g.ids() {
		ids = append(ids, fmt.Sprintf("%d=%s", id, g.Replicas[id].Addr))
	}
	return fmt.Sprintf("%s{master=%d epoch=%d sss=%v sssEpoch=%d replicas=[%s]}", g.BrokerName, g.MasterID,
		g.MasterEpoch, g.SyncStateSet, g.SyncStateSetEpoch, strings.Join(ids, " "))
}
