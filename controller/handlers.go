package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// registerHandlers wires the request codes. BROKER_HEARTBEAT and
// CONTROLLER_GET_METADATA_INFO are served by every node; the others only
// by the leader, and a follower answers them CONTROLLER_NOT_LEADER with
// the leader in a GetMetaDataResponseHeader (clients retry there).
func (c *Controller) registerHandlers() {
	h := func(code int16, f remoting.HandlerFunc) { c.server.HandleFunc(code, c.metrics.instrument(code, f)) }
	h(protocol.BrokerHeartbeat, c.handleHeartbeat)
	h(protocol.ControllerGetMetadataInfo, c.handleMetadata)
	h(protocol.TideGetElectionHistory, c.handleElectionHistory)
	h(protocol.ControllerApplyBrokerID, c.leaderOnly(c.handleApplyBrokerID))
	h(protocol.ControllerGetNextBrokerID, c.leaderOnly(c.handleNextBrokerID))
	h(protocol.ControllerRegisterBroker, c.leaderOnly(c.handleRegister))
	h(protocol.ControllerElectMaster, c.leaderOnly(c.handleElect))
	h(protocol.ControllerAlterSyncStateSet, c.leaderOnly(c.handleAlter))
	h(protocol.ControllerGetReplicaInfo, c.leaderOnly(c.handleReplicaInfo))
	h(protocol.ControllerGetSyncStateData, c.leaderOnly(c.handleSyncStateData))
}

func (c *Controller) metadata() *protocol.GetMetaDataResponseHeader {
	peers := make([]string, 0, len(c.opts.Peers))
	for _, p := range c.opts.Peers {
		peers = append(peers, p.Addr)
	}
	m := &protocol.GetMetaDataResponseHeader{Group: c.opts.Group, IsLeader: c.IsLeader(), Peers: strings.Join(peers, ",")}
	if l, ok := c.Leader(); ok {
		m.ControllerLeaderID, m.ControllerLeaderAddress = l.ID, l.Addr
	}
	return m
}

func (c *Controller) handleMetadata(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtFields = c.metadata().Encode()
	return resp
}

func (c *Controller) leaderOnly(f remoting.HandlerFunc) remoting.HandlerFunc {
	return func(ctx context.Context, conn *remoting.Conn, req *protocol.Command) *protocol.Command {
		if !c.IsLeader() {
			return c.notLeader(req)
		}
		return f(ctx, conn, req)
	}
}

func (c *Controller) notLeader(req *protocol.Command) *protocol.Command {
	m := c.metadata()
	remark := "this controller is not the leader; no leader is known"
	if m.ControllerLeaderAddress != "" {
		remark = "this controller is not the leader; the leader is " + m.ControllerLeaderAddress
	}
	resp := protocol.NewResponse(req, protocol.ControllerNotLeader, remark)
	resp.ExtFields = m.Encode()
	return resp
}

// failed turns an apply error into a response: a lost leadership is
// CONTROLLER_NOT_LEADER, anything else CONTROLLER_JRAFT_INTERNAL_ERROR.
func (c *Controller) failed(req *protocol.Command, err error) *protocol.Command {
	c.log.Warn("controller request failed", "code", req.Code, "err", err)
	if errors.Is(err, ErrNotLeader) {
		return c.notLeader(req)
	}
	return protocol.NewResponse(req, protocol.ControllerInternalError, err.Error())
}

func badRequest(req *protocol.Command, err error) *protocol.Command {
	return protocol.NewResponse(req, protocol.ControllerInvalidRequest, err.Error())
}

func (c *Controller) handleHeartbeat(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.BrokerHeartbeatRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	// Only registered replicas are tracked, so heartbeats with made-up
	// names cannot grow the table. A node that has not applied a fresh
	// registration yet refuses one heartbeat; the next one counts.
	g := c.fsm.group(h.BrokerName)
	id := h.BrokerID
	if id == protocol.NoBrokerID && g != nil { // older brokers: find the id by address
		for rid, r := range g.Replicas {
			if r.Addr == h.BrokerAddr {
				id = rid
			}
		}
	}
	if g == nil || g.Replicas[id] == nil {
		return protocol.NewResponse(req, protocol.ControllerBrokerNeedToBeRegistered,
			fmt.Sprintf("heartbeat from %s (%s/%d), which has not applied for a broker id", h.BrokerAddr, h.BrokerName, h.BrokerID))
	}
	c.live.heard(h.BrokerName, id, liveInfo{Addr: h.BrokerAddr, Timeout: millis(h.HeartbeatTimeoutMillis),
		Epoch: h.Epoch, MaxOffset: h.MaxOffset, ConfirmOffset: h.ConfirmOffset, Priority: h.ElectionPriority})
	return protocol.NewResponse(req, protocol.Success, "")
}

func (c *Controller) handleApplyBrokerID(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.ApplyBrokerIDRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	res, err := c.applyBrokerID(&h)
	if err != nil {
		return c.failed(req, err)
	}
	resp := protocol.NewResponse(req, res.Code, res.Remark)
	resp.ExtFields = (&protocol.ApplyBrokerIDResponseHeader{ClusterName: h.ClusterName, BrokerName: h.BrokerName}).Encode()
	return resp
}

func (c *Controller) handleNextBrokerID(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.GetNextBrokerIDRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	next := protocol.FirstBrokerControllerID
	if g := c.fsm.group(h.BrokerName); g != nil {
		next = g.nextID()
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtFields = (&protocol.GetNextBrokerIDResponseHeader{ClusterName: h.ClusterName, BrokerName: h.BrokerName,
		NextBrokerID: next}).Encode()
	return resp
}

func (c *Controller) handleRegister(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.RegisterBrokerToControllerRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	res, err := c.registerBroker(&h)
	if err != nil {
		return c.failed(req, err)
	}
	resp := protocol.NewResponse(req, res.Code, res.Remark)
	rh := &protocol.RegisterBrokerToControllerResponseHeader{ClusterName: h.ClusterName, BrokerName: h.BrokerName,
		MasterInfo: protocol.MasterInfo{MasterBrokerID: protocol.NoBrokerID}}
	if g := res.Group; g != nil {
		if g.HasMaster() && c.live.alive(g.BrokerName, g.MasterID) {
			rh.MasterInfo = g.masterInfo()
		}
		resp.Body = syncStateSetOf(g).Encode()
	}
	resp.ExtFields = rh.Encode()
	return resp
}

func (c *Controller) handleElect(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.ElectMasterRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	trigger := triggerBroker
	if h.DesignateElect {
		trigger = triggerAdmin
	}
	res, err := c.electMaster(h.BrokerName, h.BrokerID, h.DesignateElect, trigger)
	if err != nil {
		return c.failed(req, err)
	}
	resp := protocol.NewResponse(req, res.Code, res.Remark)
	if g := res.Group; g != nil {
		resp.ExtFields = (&protocol.ElectMasterResponseHeader{MasterInfo: g.masterInfo()}).Encode()
		members := map[int64]string{}
		for id, r := range g.Replicas {
			members[id] = r.Addr
		}
		resp.Body = (&protocol.ElectMasterResponseBody{SyncStateSet: g.SyncStateSet,
			BrokerMemberGroup: &protocol.BrokerMemberGroup{Cluster: g.Cluster, BrokerName: g.BrokerName, BrokerAddrs: members}}).Encode()
	}
	return resp
}

func (c *Controller) handleAlter(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.AlterSyncStateSetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	set, err := protocol.DecodeSyncStateSet(req.Body)
	if err != nil {
		return badRequest(req, err)
	}
	res, err := c.alterSyncStateSet(h.BrokerName, h.MasterBrokerID, h.MasterEpoch, set)
	if err != nil {
		return c.failed(req, err)
	}
	resp := protocol.NewResponse(req, res.Code, res.Remark)
	if res.Code == protocol.Success && res.Group != nil {
		resp.ExtFields = (&protocol.AlterSyncStateSetResponseHeader{NewSyncStateSetEpoch: res.Group.SyncStateSetEpoch}).Encode()
		resp.Body = syncStateSetOf(res.Group).Encode()
	}
	return resp
}

func (c *Controller) handleReplicaInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.GetReplicaInfoRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	g := c.fsm.group(h.BrokerName)
	if g == nil {
		return protocol.NewResponse(req, protocol.ControllerBrokerMetadataNotExist, "broker group "+h.BrokerName+" is not registered")
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtFields = (&protocol.GetReplicaInfoResponseHeader{MasterInfo: g.masterInfo()}).Encode()
	resp.Body = syncStateSetOf(g).Encode()
	return resp
}

func (c *Controller) handleSyncStateData(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	names, err := protocol.DecodeBrokerNames(req.Body)
	if err != nil {
		return badRequest(req, err)
	}
	out := &protocol.BrokerReplicasInfo{ReplicasInfoTable: map[string]protocol.ReplicasInfo{}}
	for _, name := range names {
		g := c.fsm.group(name)
		if g == nil {
			continue
		}
		ri := protocol.ReplicasInfo{MasterBrokerID: g.MasterID, MasterAddress: g.MasterAddr(), MasterEpoch: g.MasterEpoch,
			SyncStateSetEpoch: g.SyncStateSetEpoch, InSyncReplicas: []protocol.ReplicaIdentity{},
			NotInSyncReplicas: []protocol.ReplicaIdentity{}}
		for _, id := range g.ids() {
			r := protocol.ReplicaIdentity{BrokerName: name, BrokerID: id, BrokerAddress: g.Replicas[id].Addr,
				Alive: c.live.alive(name, id)}
			if g.InSync(id) {
				ri.InSyncReplicas = append(ri.InSyncReplicas, r)
			} else {
				ri.NotInSyncReplicas = append(ri.NotInSyncReplicas, r)
			}
		}
		out.ReplicasInfoTable[name] = ri
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = out.Encode()
	return resp
}

func syncStateSetOf(g *Group) *protocol.SyncStateSet {
	return &protocol.SyncStateSet{SyncStateSet: g.SyncStateSet, SyncStateSetEpoch: g.SyncStateSetEpoch}
}

// handleElectionHistory serves TideGetElectionHistory on every node, from
// the state this node has applied.
func (c *Controller) handleElectionHistory(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.GetElectionHistoryRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = (&protocol.ElectionHistory{Elections: c.fsm.elections(h.BrokerName)}).Encode()
	return resp
}
