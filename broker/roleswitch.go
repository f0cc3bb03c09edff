package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tidemq/tide/broker/internal/store/epoch"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Runtime role switches in controller mode (RocketMQ 5's ReplicasManager
// changeToMaster / changeToSlave). The role loop asks the controller
// leader for its group's master every brokerHeartbeatInterval, and at
// once when NOTIFY_BROKER_ROLE_CHANGED arrives (the notification is only a
// hint: the answer of CONTROLLER_GET_REPLICA_INFO decides, so a forged or
// stale notification changes nothing). Then:
//
//   - named master while a slave: promote. Stop replicating, dispatch what
//     the old master had confirmed, drop a torn tail and set the queue
//     offset counters past every replicated record (store.TakeWrites;
//     the rest is dispatched once the new master's confirm offset covers
//     it, which the new SyncStateSet of one makes at once), append
//     (master epoch, commit log end) to the epoch file, start the HA
//     server, take writes, start the delay-level, timer and transaction
//     services from the progress copied from the old master, and register
//     with every NameServer as broker id 0 with the HA address.
//   - another master named while master: demote. Refuse writes at once
//     (read only; in-flight SYNC sends answer FLUSH_SLAVE_TIMEOUT), close
//     the HA server, stop the services, register as a slave, then follow.
//   - a slave with a new master: follow. Stop replicating, fetch the new
//     master's epoch entries (GET_BROKER_EPOCH_CACHE), truncate the commit
//     log and consume queues to the last offset both histories agree on
//     (epoch.File.ConsistentPoint), adopt the master's epoch entries, and
//     only then replicate from it (its HA address comes from the
//     NameServers' answer to this broker's registration).
//   - no master (the controller found no in-sync replica alive): a master
//     that hears this is fenced the same way as a demoted one.
//
// Every switch holds roleMu, so request paths see either role completely
// (they read b.role and the HA pointers, never b.opts).

// controllerModeMetadataSync is how often a controller-mode slave copies
// topics, offsets, subscription groups and delay progress from its master
// (a promotion starts from the last copy).
const controllerModeMetadataSync = 2 * time.Second

// controllerLoop follows the controller's decisions until Shutdown.
func (b *Broker) controllerLoop(cm *controllerMode) {
	defer b.wg.Done()
	every := time.Duration(b.opts.BrokerHeartbeatInterval) * time.Millisecond
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), max(every, 3*time.Second))
		h, set, err := cm.cli.ReplicaInfo(ctx, b.opts.BrokerName)
		if err == nil {
			cm.setSyncStateSet(set)
			b.reconcile(ctx, cm, h.MasterInfo)
			b.maintainSyncStateSet(ctx, cm)
		} else {
			b.log.Debug("controller mode: replica info", "err", err)
		}
		cancel()
		select {
		case <-b.stop:
			return
		case <-t.C:
		case <-cm.wake:
		}
	}
}

// reconcile brings the running role in line with the controller's master.
func (b *Broker) reconcile(ctx context.Context, cm *controllerMode, m protocol.MasterInfo) {
	cm.mu.Lock()
	if m.MasterEpoch < cm.master.MasterEpoch {
		cm.mu.Unlock()
		return // an answer older than what this broker already acted on
	}
	cm.master = m
	running, following, followEpoch := cm.running, cm.following, cm.followEpoch
	cm.mu.Unlock()
	switch {
	case m.MasterBrokerID == cm.id && running != "master":
		if err := b.promote(ctx, cm, m); err != nil {
			b.log.Error("controller mode: promotion failed; staying read only, retrying", "master_epoch", m.MasterEpoch, "err", err)
		}
	case m.MasterBrokerID == cm.id:
		if err := cm.recordEpoch(m.MasterEpoch, b.store.MaxPhyOffset()); err != nil {
			b.log.Error("controller mode: epoch file", "err", err)
		}
	default:
		if running == "master" {
			b.demote(cm, m)
		}
		if m.MasterBrokerID != protocol.NoBrokerID && (following != m.MasterAddress || followEpoch != m.MasterEpoch) {
			if err := b.follow(ctx, cm, m); err != nil {
				// retried every brokerHeartbeatInterval: say it once per
				// master epoch at WARN, then at DEBUG
				level := slog.LevelDebug
				if cm.followFailedEpoch.Swap(m.MasterEpoch) != m.MasterEpoch {
					level = slog.LevelWarn
				}
				b.log.Log(ctx, level, "controller mode: cannot follow the new master yet; retrying", "master", m.MasterAddress,
					"master_epoch", m.MasterEpoch, "err", err)
			}
		}
	}
}

// promote makes this slave its group's master (see the file comment).
func (b *Broker) promote(ctx context.Context, cm *controllerMode, m protocol.MasterInfo) error {
	start := time.Now()
	b.roleMu.Lock()
	if b.stopping() {
		b.roleMu.Unlock()
		return nil
	}
	b.stopHAClient()
	end, err := b.store.TakeWrites()
	if err != nil {
		b.store.SetReadOnly(true)
		b.roleMu.Unlock()
		return fmt.Errorf("take writes: %w", err)
	}
	if err := cm.recordEpoch(m.MasterEpoch, end); err != nil {
		b.store.SetReadOnly(true)
		b.roleMu.Unlock()
		return err
	}
	haAddr, err := b.startHAServer()
	if err != nil {
		b.store.SetReadOnly(true)
		b.roleMu.Unlock()
		return fmt.Errorf("ha server: %w", err)
	}
	if b.sched().Stopped() || b.timers().Stopped() {
		// Demoted earlier in this process: the services it stopped then
		// do not start again, so build new ones from the persisted
		// progress (the slave's copy of the master's), as a start does.
		if sched, timers, err := b.newDelays(); err != nil {
			b.log.Error("controller mode: delay-level and timer services not rebuilt; they stay stopped", "err", err)
		} else {
			b.schedP.Store(sched)
			b.timersP.Store(timers)
		}
	} else {
		// Built at start from the files then; the metadata sync has
		// since copied the master's progress into them.
		if err := b.sched().Reload(); err != nil {
			b.log.Error("controller mode: delay-level progress", "err", err)
		}
		if err := b.timers().Reload(); err != nil {
			b.log.Error("controller mode: timer checkpoint", "err", err)
		}
	}
	b.sched().Start()
	b.timers().Start()
	b.restartTransactions() // before taking sends: a half message sent now reaches the new service
	b.setRole(cm.masterRole, 0)
	b.masterAddr.Store("")
	cm.mu.Lock()
	cm.running, cm.following, cm.caughtUp, cm.proposed = "master", "", nil, nil
	cm.mu.Unlock()
	b.store.WakeDispatcher() // the master's rule now bounds dispatch, not the old master's confirm offset
	b.roleMu.Unlock()
	b.log.Warn("controller mode: PROMOTED to master", "id", cm.id, "master_epoch", m.MasterEpoch, "epoch_start", end,
		"role", cm.masterRole, "took", time.Since(start))
	if b.registry != nil {
		b.registry.SetRole(0, haAddr)
		if err := b.registry.RegisterAll(ctx); err != nil {
			b.log.Warn("controller mode: registration as master incomplete; retrying in the background", "err", err)
			b.registry.Trigger()
		}
	}
	return nil
}

// restartTransactions replaces the slave's transaction service, built at
// start from the half and op queues as they were then, by one recovered
// from the queues as replicated now (half messages that arrived by
// replication were never announced to it), and starts it: check-backs of
// transactions in flight at the failover come from the new master.
func (b *Broker) restartTransactions() {
	old := b.tx()
	if err := old.Stop(); err != nil {
		b.log.Error("controller mode: stopping the slave's transaction service", "err", err)
	}
	tx, err := b.newTransactions()
	if err != nil {
		b.log.Error("controller mode: transaction service not recovered; check-backs stay stopped", "err", err)
		return
	}
	b.txs.Store(tx)
	tx.Start()
}

// demote fences a master the controller no longer names: no write is
// accepted or acknowledged after it returns.
func (b *Broker) demote(cm *controllerMode, m protocol.MasterInfo) {
	b.roleMu.Lock()
	defer b.roleMu.Unlock()
	if b.stopping() {
		return
	}
	b.store.SetReadOnly(true)
	b.setRole("SLAVE", cm.id)
	if srv := b.haSrv.Swap(nil); srv != nil {
		srv.Close() // releases SYNC waiters: FLUSH_SLAVE_TIMEOUT, never SEND_OK
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := errors.Join(b.tx().Stop(), b.sched().Stop(ctx), b.timers().Stop(ctx)); err != nil {
		b.log.Error("controller mode: stopping master services", "err", err)
	}
	if err := b.startHAClient(""); err != nil {
		b.log.Error("controller mode: ha client", "err", err)
	}
	cm.mu.Lock()
	cm.running, cm.following, cm.proposed = "slave", "", nil
	cm.mu.Unlock()
	b.log.Warn("controller mode: DEMOTED to slave: writes refused", "id", cm.id, "new_master", m.MasterBrokerID,
		"master_epoch", m.MasterEpoch)
	if b.registry != nil {
		b.registry.SetRole(cm.id, "")
		b.registry.Trigger()
	}
}

// follow truncates the store to the point it shares with master m and
// lets replication follow m.
func (b *Broker) follow(ctx context.Context, cm *controllerMode, m protocol.MasterInfo) error {
	cm.mu.Lock()
	cm.following = ""
	cm.mu.Unlock()
	if cl := b.haClient(); cl != nil {
		cl.SetMasterAddress("") // nothing is appended while the histories are compared
	}
	b.masterAddr.Store("")
	req := protocol.NewRequest(protocol.GetBrokerEpochCache, nil, nil)
	b.signInner(req) // admin-only on an ACL master
	resp, err := b.nsClient.Invoke(ctx, m.MasterAddress, req)
	if err == nil {
		err = resp.Err()
	}
	if err != nil {
		return fmt.Errorf("epoch cache of %s: %w", m.MasterAddress, err)
	}
	peer, err := protocol.DecodeEpochEntryCache(resp.Body)
	if err != nil {
		return fmt.Errorf("epoch cache of %s: %w", m.MasterAddress, err)
	}
	if peer.BrokerID != m.MasterBrokerID {
		return fmt.Errorf("%s answers as broker %d, the controller named %d", m.MasterAddress, peer.BrokerID, m.MasterBrokerID)
	}
	entries := make([]epoch.Entry, 0, len(peer.EpochList))
	for _, e := range peer.EpochList {
		entries = append(entries, epoch.Entry{Epoch: e.Epoch, StartOffset: e.StartOffset, EndOffset: e.EndOffset})
	}
	b.roleMu.Lock()
	defer b.roleMu.Unlock()
	if b.stopping() || !b.isSlaveOf(cm, m) {
		return nil
	}
	local := b.store.MaxPhyOffset()
	point := cm.consistentPoint(local, entries, peer.MaxOffset)
	if point < local {
		b.log.Warn("controller mode: truncating what the new master does not have", "from", local, "to", point,
			"master", m.MasterAddress, "master_epoch", m.MasterEpoch)
		if err := b.store.Truncate(point); err != nil {
			return fmt.Errorf("truncate to %d: %w (the store may have to be rebuilt from the master)", point, err)
		}
		b.idem.follower.Truncated(point)
	}
	if err := cm.epochs.Reset(entries); err != nil {
		return fmt.Errorf("adopt the master's epochs: %w", err)
	}
	cm.mu.Lock()
	cm.following, cm.followEpoch = m.MasterAddress, m.MasterEpoch
	cm.mu.Unlock()
	b.log.Info("controller mode: following master", "master", m.MasterAddress, "id", m.MasterBrokerID,
		"master_epoch", m.MasterEpoch, "from", min(point, local))
	if b.registry != nil {
		b.registry.Trigger() // the answer names the master's HA address (onRegistered)
	}
	return nil
}

// isSlaveOf reports whether the broker still runs as a slave and m is
// still the master the controller named.
func (b *Broker) isSlaveOf(cm *controllerMode, m protocol.MasterInfo) bool {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.running == "slave" && cm.master.MasterEpoch == m.MasterEpoch && cm.master.MasterBrokerID == m.MasterBrokerID
}

// consistentPoint is where this replica's commit log (ending at local)
// stops agreeing with the master's epochs (RocketMQ 5's rule): the end of
// the newest epoch both have with the same start offset, bounded by both
// ends. A replica without epoch entries (it ran before controller mode)
// keeps what it has up to the master's end.
func (cm *controllerMode) consistentPoint(local int64, peer []epoch.Entry, peerMax int64) int64 {
	mine := cm.epochs.Entries()
	if len(mine) == 0 {
		return min(local, peerMax)
	}
	f, err := epoch.NewMemory(mine)
	if err != nil {
		return 0
	}
	f.SetLastEndOffset(local)
	p, err := epoch.NewMemory(peer)
	if err != nil {
		return 0
	}
	p.SetLastEndOffset(peerMax)
	point := f.ConsistentPoint(p.Entries())
	return max(0, min(point, local))
}

// recordEpoch appends (epoch, start) to the epoch file unless it holds
// that epoch already. An epoch that ended without data (its start equals
// start) is replaced, since entries' start offsets strictly increase.
func (cm *controllerMode) recordEpoch(e int32, start int64) error {
	if cm.epochs.LastEpoch() >= e {
		return nil
	}
	if last, ok := cm.epochs.Last(); ok && last.StartOffset >= start {
		if err := cm.epochs.TruncateSuffixByOffset(start); err != nil {
			return fmt.Errorf("epoch file: %w", err)
		}
	}
	if err := cm.epochs.Append(e, start); err != nil {
		return fmt.Errorf("epoch file: %w", err)
	}
	return nil
}

// mayFollow reports whether replication may follow the master at addr
// (the NameServers' answer): only the master the controller named, and
// only once the store was truncated against it.
func (cm *controllerMode) mayFollow(addr string) bool {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return addr != "" && addr == cm.following
}
