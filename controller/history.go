package controller

import (
	"slices"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// The election history is part of the replicated state: every applied
// electMaster command appends one protocol.Election to its group's list,
// which keeps the last protocol.MaxElectionHistory. It is written by
// apply from the command alone (the proposer's time and trigger), so
// every node holds the same history, and it survives restarts and
// leader changes with the snapshots and the log.

// recordElection appends the election c just applied to g (whose master
// was old at oldAddr) to the history.
func (s *State) recordElection(c *command, g *Group, old int64, oldAddr string) {
	if s.Elections == nil {
		s.Elections = map[string][]protocol.Election{}
	}
	e := protocol.Election{Group: g.BrokerName, OldMaster: old, OldMasterAddr: oldAddr, NewMaster: g.MasterID,
		NewMasterAddr: g.MasterAddr(), Epoch: g.MasterEpoch, Reason: c.Reason, SyncStateSet: slices.Clone(g.SyncStateSet)}
	if c.Time > 0 {
		e.Time = time.UnixMilli(c.Time).UTC()
	}
	h := append(s.Elections[g.BrokerName], e)
	if n := len(h) - protocol.MaxElectionHistory; n > 0 {
		h = slices.Clone(h[n:]) // a fresh array: the dropped entries are freed
	}
	s.Elections[g.BrokerName] = h
}

// elections returns a copy of the history of group name (every group's
// when name is empty), oldest first; several groups are ordered by time,
// then group and epoch.
func (f *fsm) elections(name string) []protocol.Election {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []protocol.Election
	for g, h := range f.state.Elections {
		if name == "" || g == name {
			for _, e := range h {
				e.SyncStateSet = slices.Clone(e.SyncStateSet)
				out = append(out, e)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b protocol.Election) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		if a.Group != b.Group {
			if a.Group < b.Group {
				return -1
			}
			return 1
		}
		return int(a.Epoch - b.Epoch)
	})
	return out
}
