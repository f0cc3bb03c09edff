package broker

import (
	"context"
	"slices"
	"time"

	"github.com/tidemq/tide/broker/internal/ha"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// The SyncStateSet a controller-mode master keeps (RocketMQ 5's
// AutoSwitchHAService): every brokerHeartbeatInterval the master compares
// its replicas' replication with the set the controller holds and, when
// they differ, proposes the new set with CONTROLLER_ALTER_SYNC_STATE_SET
// (fenced by its master epoch and the set's epoch). A replica is in sync
// while it caught up (its report covered everything the master had at its
// previous report) within haMaxTimeSlaveNotCatchup ms, counted across
// reconnects, and has reached the start of the master's epoch.
//
// While a change is in flight the master's ack rule and confirm offset use
// the union of the committed set and the proposal (RocketMQ 5's
// isSynchronizingSyncStateSet): a shrink takes effect for
// acknowledgements only once the controller accepted it, and a member
// being added counts from the moment it is proposed, before the
// controller can elect it. A grown member is proposed only once it has
// acknowledged the commit log end as it stood when the union took effect,
// so every write acknowledged under the old set is on it too. Together:
// every acknowledged write, and every record made visible, is on every
// replica the controller may elect.

// ackRule returns the replicas a SYNC_MASTER write waits for (the
// SyncStateSet without the master) and how many of them must have it.
func (cm *controllerMode) ackRule(o *Options) (ids []int64, need int) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if cm.syncSet == nil {
		return nil, 1 // not learnt yet: acknowledge nothing rather than too early
	}
	for _, id := range cm.effectiveSet() {
		if id != cm.id {
			ids = append(ids, id)
		}
	}
	if o.AllAckInSyncStateSet {
		return ids, len(ids)
	}
	return ids, o.InSyncReplicas - 1
}

// effectiveSet is the set the master acknowledges and confirms by: the
// committed set, joined by the proposal in flight if there is one. The
// caller holds cm.mu; the result may share the committed slice.
func (cm *controllerMode) effectiveSet() []int64 {
	if cm.proposed == nil {
		return cm.syncSet
	}
	set := slices.Clone(cm.syncSet)
	for _, id := range cm.proposed {
		if !slices.Contains(set, id) {
			set = append(set, id)
		}
	}
	return set
}

// setSyncStateSet records the set the controller holds, from its answer
// to an ALTER_SYNC_STATE_SET or to the role loop's poll. Either answer
// comes after the last proposal's request ended (the role loop sends them
// in turn), so it ends the proposal: what the controller holds is known.
// An answer older than the set already known changes nothing.
func (cm *controllerMode) setSyncStateSet(s *protocol.SyncStateSet) {
	if s == nil {
		return
	}
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if s.SyncStateSetEpoch >= cm.syncEpoch {
		cm.syncSet, cm.syncEpoch, cm.proposed = slices.Clone(s.SyncStateSet), s.SyncStateSetEpoch, nil
	}
}

// propose marks set as the proposal in flight (nil: none) and returns the
// commit log end at that moment, read after the mark: a write whose ack
// rule was taken before it ended at or below that end.
func (b *Broker) propose(cm *controllerMode, set []int64) int64 {
	cm.mu.Lock()
	cm.proposed = slices.Clone(set)
	cm.mu.Unlock()
	return b.store.MaxPhyOffset()
}

// maintainSyncStateSet proposes a new SyncStateSet when replication says
// it changed. Master only; called by the role loop.
func (b *Broker) maintainSyncStateSet(ctx context.Context, cm *controllerMode) {
	srv := b.haServer()
	if srv == nil {
		return
	}
	now := time.Now()
	grace := time.Duration(b.opts.HaMaxTimeSlaveNotCatchup) * time.Millisecond
	epochStart := int64(0)
	if last, ok := cm.epochs.Last(); ok {
		epochStart = last.StartOffset
	}
	cm.mu.Lock()
	if cm.running != "master" {
		cm.mu.Unlock()
		return
	}
	if cm.caughtUp == nil {
		cm.caughtUp = map[int64]time.Time{}
	}
	for _, r := range srv.Replicas() {
		if r.Acked >= epochStart && r.CaughtUp.After(cm.caughtUp[r.BrokerID]) {
			cm.caughtUp[r.BrokerID] = r.CaughtUp
		}
	}
	for _, id := range cm.syncSet {
		if _, ok := cm.caughtUp[id]; !ok && id != cm.id {
			cm.caughtUp[id] = now // a member this master never heard of yet: one grace period from now
		}
	}
	want := []int64{cm.id}
	for id, t := range cm.caughtUp {
		if id != cm.id && now.Sub(t) <= grace {
			want = append(want, id)
		}
	}
	slices.Sort(want)
	cur := slices.Sorted(slices.Values(cm.syncSet))
	set := &protocol.SyncStateSet{SyncStateSet: want, SyncStateSetEpoch: cm.syncEpoch}
	master := cm.master
	cm.mu.Unlock()
	if slices.Equal(want, cur) {
		return
	}
	if want = b.admitGrown(ctx, cm, srv, cur, want); slices.Equal(want, cur) {
		return
	}
	set.SyncStateSet = want
	got, err := cm.cli.AlterSyncStateSet(ctx, b.opts.BrokerName, cm.id, master.MasterEpoch, set)
	if err != nil {
		// The controller may still have committed it (an answer lost):
		// the proposal stays in force until the next poll says.
		b.log.Warn("controller mode: SyncStateSet change refused", "from", cur, "to", want, "err", err)
		return
	}
	cm.setSyncStateSet(got)
	b.log.Info("controller mode: SyncStateSet changed", "from", cur, "to", got.SyncStateSet, "sync_state_set_epoch", got.SyncStateSetEpoch)
}

// admitGrown makes the proposal want take effect for acknowledgements and
// waits, at most one heartbeat interval, until every member it adds has
// the commit log end as it stood then. Members that do not get there are
// left out of the returned proposal (and of the mark); they are proposed
// again on a later round. Members it drops stay in force until the
// controller commits the shrink.
func (b *Broker) admitGrown(ctx context.Context, cm *controllerMode, srv *ha.Server, cur, want []int64) []int64 {
	var grown []int64
	for _, id := range want {
		if !slices.Contains(cur, id) {
			grown = append(grown, id)
		}
	}
	end := b.propose(cm, want)
	if len(grown) == 0 {
		return want
	}
	wctx, cancel := context.WithTimeout(ctx, time.Duration(b.opts.BrokerHeartbeatInterval)*time.Millisecond)
	defer cancel()
	if err := srv.WaitAcks(wctx, end, grown, len(grown)); err == nil {
		return want
	}
	kept := slices.DeleteFunc(slices.Clone(want), func(id int64) bool {
		acked, _ := srv.Acked(id)
		return slices.Contains(grown, id) && acked < end
	})
	b.propose(cm, kept)
	b.log.Debug("controller mode: a replica to add has not reached the commit log end yet", "end", end, "proposal", kept)
	return kept
}

// confirmOffset is RocketMQ 5's confirm offset: the commit log end every
// SyncStateSet member has. The controller elects only from the set, so a
// record below it survives any failover; the store dispatches nothing
// above it (unless readUnCommitted), so consumers and the delay, timer
// and transaction services never act on a record a failover may truncate.
//
// A master computes it from its replicas' acks and sends it to its slaves
// in every HA transfer (ha.ServerOptions.ConfirmOffset). A slave that
// follows its master answers the last one received (ha.Client.ConfirmOffset),
// bounded by its own end: it serves a consumer nothing the master does
// not, so no read from a slave is undone by a failover (RocketMQ 5's
// AutoSwitchHAClient does the same). A slave that does not follow yet
// (just demoted, or started), or is being promoted (its HA client
// stopped), answers what it dispatched already: nothing new until it
// follows, or until it runs as master under the master's rule. A master
// that has not learnt the set yet answers what it dispatched already (no
// progress). A member the master has no connection from holds the offset
// back until the master shrinks the set (haMaxTimeSlaveNotCatchup).
// Called by the store's dispatcher: no store lock may be taken here.
func (b *Broker) confirmOffset(cm *controllerMode) int64 {
	end := b.store.MaxPhyOffset()
	cm.mu.Lock()
	running, set, following := cm.running, cm.effectiveSet(), cm.following
	cm.mu.Unlock()
	if running != "master" {
		cl := b.haClient()
		if following == "" || cl == nil {
			// Demoted (or started as a slave) and not yet truncated to
			// the new master's history: its tail may be its own
			// writes that no other member has, which the truncation
			// is about to drop. Making them visible now let consumers
			// read and commit past them, and skip the acknowledged
			// messages the new master stores at the same queue offsets
			// (chaos finding 5). Nothing new until it follows.
			return b.store.DispatchedOffset()
		}
		return max(b.store.DispatchedOffset(), min(end, cl.ConfirmOffset()))
	}
	if set == nil {
		return b.store.DispatchedOffset()
	}
	srv := b.haServer()
	for _, id := range set {
		if id == cm.id {
			continue
		}
		var acked int64 // a member with no connection holds the offset at 0
		if srv != nil {
			acked, _ = srv.Acked(id)
		}
		end = min(end, acked)
	}
	return end
}

// haConfirmOffset is the HA server's ConfirmOffset in controller mode:
// what its slaves may dispatch. With readUnCommitted the master
// dispatches everything, and so may they (nil: the commit log end).
func (b *Broker) haConfirmOffset() func() int64 {
	cm := b.ctl
	if cm == nil || b.opts.ReadUnCommitted {
		return nil
	}
	return func() int64 { return b.confirmOffset(cm) }
}

// onHAAck is the HA server's OnAck and the HA client's OnConfirm in
// controller mode: a slave's report may raise the master's confirm
// offset, a transfer the slave's, so the dispatcher looks again.
func (b *Broker) onHAAck() func() {
	if b.ctl == nil || b.opts.ReadUnCommitted {
		return nil
	}
	return b.store.WakeDispatcher
}
