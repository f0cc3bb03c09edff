package controller

import (
	"strings"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Election triggers, for logs and metrics.
const (
	triggerBroker     = "broker"     // a broker's CONTROLLER_ELECT_MASTER
	triggerAdmin      = "admin"      // an operator's designated election
	triggerController = "controller" // the leader's scan found a dead master
)

// electResult is the outcome of one election attempt.
type electResult struct {
	Code   int16
	Remark string
	Group  *Group // the group after the attempt (nil when not registered)
}

// electMaster runs one election for a group on the leader. prefer is the
// broker that asks (broker trigger: it wins a group's first election) or
// the designated one (admin trigger), NoBrokerID for the controller's own
// trigger. It serialises with every other decision of this node.
func (c *Controller) electMaster(name string, prefer int64, designate bool, trigger string) (*electResult, error) {
	c.propose.Lock()
	defer c.propose.Unlock()
	g := c.fsm.group(name)
	if g == nil {
		return &electResult{Code: protocol.ControllerBrokerNeedToBeRegistered, Remark: "broker group " + name + " is not registered"}, nil
	}
	alive := func(id int64) bool { return c.live.alive(name, id) }
	info := func(id int64) liveInfo { return c.live.info(name, id) }
	newMaster := protocol.NoBrokerID
	firstTime := !g.HasMaster() && g.MasterEpoch == 0
	if firstTime && prefer != protocol.NoBrokerID && g.Replicas[prefer] != nil {
		newMaster = prefer
	} else {
		var p int64 = protocol.NoBrokerID
		if designate {
			p = prefer
		}
		newMaster = elect(g, alive, info, p, c.opts.EnableElectUncleanMaster)
	}
	switch {
	case newMaster != protocol.NoBrokerID && newMaster == g.MasterID:
		return &electResult{Code: protocol.ControllerMasterStillExist, Group: g,
			Remark: "the master is alive, no election needed"}, nil
	case newMaster != protocol.NoBrokerID:
		res, err := c.apply(&command{Kind: cmdElectMaster, BrokerName: name, BrokerID: newMaster,
			MasterEpoch: g.MasterEpoch, SyncStateSetEpoch: g.SyncStateSetEpoch, Time: time.Now().UnixMilli(), Reason: trigger})
		if err != nil {
			return nil, err
		}
		c.electionDone(trigger, res, g)
		return &electResult{Code: res.Code, Remark: res.Remark, Group: res.Group}, nil
	case prefer == protocol.NoBrokerID || trigger == triggerController:
		// nobody can take over: the group loses its dead master (once)
		if g.HasMaster() {
			res, err := c.apply(&command{Kind: cmdElectMaster, BrokerName: name, BrokerID: protocol.NoBrokerID,
				MasterEpoch: g.MasterEpoch, SyncStateSetEpoch: g.SyncStateSetEpoch, Time: time.Now().UnixMilli(), Reason: trigger})
			if err != nil {
				return nil, err
			}
			c.electionDone(trigger, res, g)
			if res.Group != nil {
				g = res.Group
			}
		}
		return &electResult{Code: protocol.ControllerMasterNotAvailable, Group: g,
			Remark: "the master is down and no in-sync replica is alive to take over"}, nil
	}
	return &electResult{Code: protocol.ControllerElectMasterFailed, Group: g, Remark: "no replica can be elected"}, nil
}

// electionDone logs, counts and announces an applied election.
func (c *Controller) electionDone(trigger string, res *result, before *Group) {
	if res.Code != protocol.Success {
		c.metrics.election(trigger, "refused")
		c.log.Warn("election refused by the log", "broker", before.BrokerName, "code", res.Code, "remark", res.Remark)
		return
	}
	g := res.Group
	outcome := "elected"
	if !g.HasMaster() {
		outcome = "no_master"
	}
	c.metrics.election(trigger, outcome)
	c.log.Warn("broker group master changed", "trigger", trigger, "broker", g.BrokerName,
		"old_master", before.MasterID, "new_master", g.MasterID, "master_epoch", g.MasterEpoch,
		"sync_state_set", g.SyncStateSet)
	c.notifyRoleChanged(g)
}

// scanLoop is the leader's watch over masters: every ScanInterval it
// elects a new master for each group whose master is dead, and for each
// group without a master whose in-sync replica came back. A tick that
// comes late by more than half the heartbeat timeout (this node was
// stalled) restarts the liveness grace instead (liveTable.scanned).
func (c *Controller) scanLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.opts.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			stalled := c.live.scanned(c.opts.ScanInterval)
			if !c.IsLeader() {
				continue
			}
			if stalled {
				c.log.Warn("the scan for dead masters ran late (this node was stalled): broker liveness grace restarted", "scan_interval", c.opts.ScanInterval)
				continue
			}
			c.scan()
		}
	}
}

func (c *Controller) scan() {
	for _, g := range c.fsm.groups() {
		needed := false
		if g.HasMaster() {
			needed = !c.live.alive(g.BrokerName, g.MasterID)
		} else if g.MasterEpoch > 0 {
			for _, id := range g.SyncStateSet {
				needed = needed || c.live.alive(g.BrokerName, id)
			}
		}
		if !needed {
			continue
		}
		res, err := c.electMaster(g.BrokerName, protocol.NoBrokerID, false, triggerController)
		if err != nil {
			c.log.Warn("election failed", "broker", g.BrokerName, "err", err)
			continue
		}
		if res.Code == protocol.ControllerMasterNotAvailable && !g.HasMaster() {
			continue // already without a master; logged when it lost it
		}
		if res.Code != protocol.Success {
			c.log.Warn("no new master", "broker", g.BrokerName, "code", protocol.CodeName(res.Code), "remark", res.Remark)
		}
	}
}

// alterSyncStateSet validates a master's new SyncStateSet (every member
// registered and alive, the master's epochs current) and commits it.
func (c *Controller) alterSyncStateSet(name string, master int64, masterEpoch int32, set *protocol.SyncStateSet) (*result, error) {
	c.propose.Lock()
	defer c.propose.Unlock()
	g := c.fsm.group(name)
	if g == nil {
		return fail(protocol.ControllerAlterSyncStateSetFailed, "broker group %s is not registered", name), nil
	}
	if alterApplied(g, master, masterEpoch, set.SyncStateSetEpoch, set.SyncStateSet) {
		return &result{Code: protocol.Success, Group: g}, nil // a retry: nothing to commit
	}
	if code, remark := checkAlter(g, master, masterEpoch, set.SyncStateSetEpoch, set.SyncStateSet); code != protocol.Success {
		return &result{Code: code, Remark: remark}, nil
	}
	for _, id := range set.SyncStateSet {
		if !c.live.alive(name, id) {
			return fail(protocol.ControllerBrokerNotAlive, "replica %d of %s is not alive", id, name), nil
		}
	}
	return c.apply(&command{Kind: cmdAlterSyncStateSet, BrokerName: name, BrokerID: master, NewSet: set.SyncStateSet,
		MasterEpoch: masterEpoch, SyncStateSetEpoch: set.SyncStateSetEpoch})
}

// applyBrokerID commits a broker's id (RegisterCheckCode is
// "address;timestamp").
func (c *Controller) applyBrokerID(h *protocol.ApplyBrokerIDRequestHeader) (*result, error) {
	c.propose.Lock()
	defer c.propose.Unlock()
	addr, _, _ := strings.Cut(h.RegisterCheckCode, ";")
	return c.apply(&command{Kind: cmdApplyBrokerID, Cluster: h.ClusterName, BrokerName: h.BrokerName,
		BrokerID: h.AppliedBrokerID, Addr: addr, CheckCode: h.RegisterCheckCode})
}

// registerBroker records a registered broker's address (committing it if
// it changed) and returns its group.
func (c *Controller) registerBroker(h *protocol.RegisterBrokerToControllerRequestHeader) (*result, error) {
	c.propose.Lock()
	defer c.propose.Unlock()
	g := c.fsm.group(h.BrokerName)
	if g == nil || g.Replicas[h.BrokerID] == nil {
		return fail(protocol.ControllerBrokerNeedToBeRegistered, "broker %s/%d has not applied for its id",
			h.BrokerName, h.BrokerID), nil
	}
	c.live.touch(h.BrokerName, h.BrokerID, h.BrokerAddress)
	if g.Replicas[h.BrokerID].Addr == h.BrokerAddress {
		return &result{Code: protocol.Success, Group: g}, nil
	}
	return c.apply(&command{Kind: cmdUpdateAddr, BrokerName: h.BrokerName, BrokerID: h.BrokerID, Addr: h.BrokerAddress})
}
