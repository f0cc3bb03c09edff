package broker

import (
	"context"
	"slices"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// The SyncStateSet a controller-mode master keeps (RocketMQ 5's
// AutoSwitchHAService): every brokerHeartbeatInterval the master compares
// its replicas' replication with the set the controller holds and, when
// they differ, proposes the new set with CONTROLLER_ALTER_SYNC_STATE_SET
// (fenced by its master epoch and the set's epoch). A replica is in sync
// while it caught up (its report covered everything the master had at its
// previous report) within haMaxTimeSlaveNotCatchup ms, counted across
// reconnects, and has reached the start of the master's epoch. The ack
// rule of SYNC_MASTER uses the set the controller committed, never a
// proposal: a shrink takes effect for acknowledgements only once the
// controller accepted it, so every acknowledged write is on every replica
// the controller may elect.

// ackRule returns the replicas a SYNC_MASTER write waits for (the
// SyncStateSet without the master) and how many of them must have it.
func (cm *controllerMode) ackRule(o *Options) (ids []int64, need int) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if cm.syncSet == nil {
		return nil, 1 // not learnt yet: acknowledge nothing rather than too early
	}
	for _, id := range cm.syncSet {
		if id != cm.id {
			ids = append(ids, id)
		}
	}
	if o.AllAckInSyncStateSet {
		return ids, len(ids)
	}
	return ids, o.InSyncReplicas - 1
}

// setSyncStateSet records the set the controller holds (from its answers).
func (cm *controllerMode) setSyncStateSet(s *protocol.SyncStateSet) {
	if s == nil {
		return
	}
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if s.SyncStateSetEpoch >= cm.syncEpoch {
		cm.syncSet, cm.syncEpoch = slices.Clone(s.SyncStateSet), s.SyncStateSetEpoch
	}
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
	got, err := cm.cli.AlterSyncStateSet(ctx, b.opts.BrokerName, cm.id, master.MasterEpoch, set)
	if err != nil {
		b.log.Warn("controller mode: SyncStateSet change refused", "from", cur, "to", want, "err", err)
		return
	}
	cm.setSyncStateSet(got)
	b.log.Info("controller mode: SyncStateSet changed", "from", cur, "to", got.SyncStateSet, "sync_state_set_epoch", got.SyncStateSetEpoch)
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
	running, set, following := cm.running, cm.syncSet, cm.following
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
