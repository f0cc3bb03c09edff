package broker

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/broker/internal/ha"
	"github.com/tidemq/tide/broker/internal/jsonfile"
	"github.com/tidemq/tide/broker/internal/timer"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// The slave metadata sync (RocketMQ's SlaveSynchronize) as a long poll.
// A slave asks its master for the metadata (TideGetMetadata), naming the
// topic and subscription group versions it has applied; the master holds
// the request until either table changes, or for one sync interval (10 s;
// 2 s in controller mode), and the slave asks again at once after an
// answer that changed something or that was held the whole interval. So a
// new topic reaches the slaves within one round trip, and the slave's next
// request confirms it has applied it.
//
// A master whose slaves could be elected or must hold what it
// acknowledges (controller mode: the SyncStateSet; 4.x: SYNC_MASTER and
// the slaves that polled it recently) answers a topic or group creation
// only once they confirmed the new version, bounded by slaveTimeout (3 s)
// like a SYNC_MASTER send; after that it answers SUCCESS anyway and logs
// it (the topic exists on the master, the slaves copy it at their next
// poll). Without the wait, a master killed right after a creation left a
// promoted slave without the topic: it auto-created it with the default
// queue count, and a producer pinned to a higher queue was refused.

// metaSync is the master side: the slaves' confirmations and the bell
// that wakes held polls and waiting creations.
type metaSync struct {
	mu   sync.Mutex
	bell chan struct{} // closed and replaced at every change or report
	seen map[int64]metaReport
	held map[int64]int // polls being held, by slave
}

// metaReport is what a slave last said it has applied.
type metaReport struct {
	topics, groups protocol.DataVersion
	at             time.Time
}

func newMetaSync() *metaSync {
	return &metaSync{bell: make(chan struct{}), seen: map[int64]metaReport{}, held: map[int64]int{}}
}

// ring wakes every waiter. Called by the topic table under its lock: it
// takes no other lock than m.mu.
func (m *metaSync) ring() {
	m.mu.Lock()
	defer m.mu.Unlock()
	close(m.bell)
	m.bell = make(chan struct{})
}

// wait returns a channel closed at the next ring. Take it before checking
// the condition waited for, so that no ring is missed.
func (m *metaSync) wait() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bell
}

// report records a slave's applied versions and rings.
func (m *metaSync) report(id int64, r metaReport) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seen[id] = r
	close(m.bell)
	m.bell = make(chan struct{})
}

// missing returns the ids of ids that have not confirmed versions at
// least topics and groups.
func (m *metaSync) missing(ids []int64, topics, groups protocol.DataVersion) []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int64
	for _, id := range ids {
		r, ok := m.seen[id]
		if !ok || !atLeast(r.topics, topics) || !atLeast(r.groups, groups) {
			out = append(out, id)
		}
	}
	return out
}

// hold counts a poll of slave id being held (+1) or ended (-1).
func (m *metaSync) hold(id int64, d int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.held[id] += d
	if m.held[id] <= 0 {
		delete(m.held, id)
	}
}

// polling returns the slaves that poll now: a poll of theirs is held, or
// they reported at or after t (between two polls). A slave that died
// closed its connection, which ended its held poll.
func (m *metaSync) polling(t time.Time) []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int64
	for id, r := range m.seen {
		if m.held[id] > 0 || !r.at.Before(t) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// atLeast reports whether version v is v0 or later. A master's versions
// grow in both fields (and a slave's are copies of its master's).
func atLeast(v, v0 protocol.DataVersion) bool {
	return v.Counter >= v0.Counter && v.Timestamp >= v0.Timestamp
}

// metadataSyncInterval is how often a slave copies the metadata at the
// latest (also the longest a master holds a poll).
func (b *Broker) metadataSyncInterval() time.Duration {
	if b.ctl != nil {
		return controllerModeMetadataSync
	}
	return ha.DefaultMetadataSyncInterval
}

// metadataReplicas returns the slaves a metadata change waits for: in
// controller mode the SyncStateSet without the master (any of them may
// be elected); in 4.x mode a SYNC_MASTER's slaves that poll it now (a
// held poll, or one within the last second); none for an ASYNC_MASTER (its slaves are told at once
// but it does not wait, as it does not wait for them on sends).
func (b *Broker) metadataReplicas() []int64 {
	if !b.isMaster() {
		return nil
	}
	if b.ctl != nil {
		ids, _ := b.ctl.ackRule(&b.opts)
		return ids
	}
	if b.brokerRole() != "SYNC_MASTER" {
		return nil
	}
	return b.meta.polling(time.Now().Add(-time.Second))
}

// awaitSlavesMetadata waits until the slaves metadataReplicas names have
// confirmed the master's current topic and group versions, at most
// slaveTimeout. what names the change for the log. It never fails: a
// slave that does not confirm in time copies the change at its next poll,
// and the caller answers SUCCESS (the change is on the master), as a
// SYNC_MASTER's bounded waits do.
func (b *Broker) awaitSlavesMetadata(ctx context.Context, what string) {
	b.meta.ring()
	ids := b.metadataReplicas()
	if len(ids) == 0 {
		return
	}
	topics, groups := b.topics.DataVersion(), b.groups.DataVersion()
	limit := time.Duration(b.opts.SyncFlushTimeoutSlave()) * time.Millisecond
	t := time.NewTimer(limit)
	defer t.Stop()
	for {
		bell := b.meta.wait()
		missing := b.meta.missing(ids, topics, groups)
		if len(missing) == 0 {
			return
		}
		select {
		case <-bell:
		case <-t.C:
			b.log.Warn("metadata change not confirmed by every in-sync slave in time; answering success, they copy it at their next poll",
				"change", what, "waited", limit, "missing", missing)
			return
		case <-ctx.Done():
			return
		case <-b.stop:
			return
		}
	}
}

// errNoMaster: a slave that does not know its master yet has nobody to
// copy the metadata from.
var errNoMaster = errors.New("broker: no master known yet")

// maxMetadataHold bounds a hold a slave asks for.
const maxMetadataHold = 30 * time.Second

// handleMetadata serves the master side of the slave metadata sync: it
// records the slave's confirmation, holds the request while asked to and
// nothing changed, then answers the whole metadata.
func (b *Broker) handleMetadata(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.GetMetadataRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad metadata header: %v", err)
	}
	topics := protocol.DataVersion{Counter: h.TopicsCounter, Timestamp: h.TopicsTimestamp}
	groups := protocol.DataVersion{Counter: h.GroupsCounter, Timestamp: h.GroupsTimestamp}
	if h.BrokerID != 0 {
		b.meta.report(h.BrokerID, metaReport{topics: topics, groups: groups, at: time.Now()})
	}
	if h.HoldMillis > 0 && b.isMaster() {
		b.meta.hold(h.BrokerID, 1)
		defer b.meta.hold(h.BrokerID, -1)
		b.holdMetadata(ctx, min(time.Duration(h.HoldMillis)*time.Millisecond, maxMetadataHold), topics, groups)
	}
	md := protocol.BrokerMetadata{Topics: b.topics.Wrapper(), Offsets: b.offsets.Snapshot(), Groups: b.groups.Wrapper(), DelayOffsets: map[string]int64{}}
	if s := b.sched(); s != nil {
		// Replicated progress only: a slave promoted with it has the
		// delivered copy of every message before it.
		for i, off := range s.Progress() {
			md.DelayOffsets[strconv.Itoa(i+1)] = off
		}
	}
	if t := b.timers(); t != nil && t.Running() {
		// Counts a timer as delivered only once its copy is replicated
		// (timer.Options.Replicated), as the delay progress above.
		md.TimerCheckpoint = t.Checkpoint()
	}
	md.ACL = b.masterACL()
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = md.Encode()
	return resp
}

// holdMetadata returns once the topic or group table's version differs
// from the slave's, the ACL changed by an admin request (aclsync.go),
// after hold, or when the connection or broker closes.
func (b *Broker) holdMetadata(ctx context.Context, hold time.Duration, topics, groups protocol.DataVersion) {
	t := time.NewTimer(hold)
	defer t.Stop()
	acl := b.aclChecksum()
	for {
		bell := b.meta.wait()
		if b.topics.DataVersion() != topics || b.groups.DataVersion() != groups || b.aclChecksum() != acl {
			return
		}
		select {
		case <-bell:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		case <-b.stop:
			return
		}
	}
}

// syncMetadataLoop copies topics, offsets, groups, delay progress, the
// timer checkpoint and the ACL (aclsync.go) from the master: a long poll held up to one interval
// (10 s; 2 s in controller mode), so the slave can serve consumers and
// hold the state a promotion needs. A master that does not hold (or is
// unreachable) is asked once per interval.
func (b *Broker) syncMetadataLoop(end <-chan struct{}) {
	defer b.wg.Done()
	every := b.metadataSyncInterval()
	t := time.NewTicker(every)
	defer t.Stop()
	now := false
	for {
		hold := every
		if now {
			hold = 0 // asked for (SyncMetadataNow): the current state, at once
		}
		begin := time.Now()
		changed, woken, err := b.syncMetadata(end, hold)
		now = woken
		if woken || (err == nil && (changed || time.Since(begin) >= every/2)) {
			// Confirm what changed with the next poll, or poll again
			// after a hold that lasted: no tick to wait for.
			select {
			case <-b.stop:
				return
			case <-end:
				return
			default:
				continue
			}
		}
		select {
		case <-b.stop:
			return
		case <-end:
			return
		case <-t.C:
		case <-b.syncNow:
			now = true
		}
	}
}

// syncMetadata asks the master once (held up to hold) and applies the
// answer. changed: the topic or group table changed; woken: a
// SyncMetadataNow cut the hold short.
func (b *Broker) syncMetadata(end <-chan struct{}, hold time.Duration) (changed, woken bool, err error) {
	master, _ := b.masterAddr.Load().(string)
	if master == "" {
		return false, false, errNoMaster
	}
	ctx, cancel := context.WithTimeout(context.Background(), hold+5*time.Second)
	defer cancel()
	var cut atomic.Bool
	if hold > 0 {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
				return
			case <-b.stop:
			case <-end:
			case <-b.syncNow:
				cut.Store(true)
			}
			cancel()
		}()
	}
	id := b.brokerID() // a slave's: its brokerId, or its controller id in controller mode
	topics, groups := b.topics.DataVersion(), b.groups.DataVersion()
	h := protocol.GetMetadataRequestHeader{BrokerID: id, TopicsCounter: topics.Counter, TopicsTimestamp: topics.Timestamp,
		GroupsCounter: groups.Counter, GroupsTimestamp: groups.Timestamp, HoldMillis: hold.Milliseconds()}
	req := protocol.NewRequest(protocol.TideGetMetadata, h.Encode(), nil)
	b.signInner(req)
	resp, err := b.nsClient.Invoke(ctx, master, req)
	if err == nil {
		err = resp.Err()
	}
	if cut.Load() {
		return false, true, err
	}
	if err != nil {
		select {
		case <-b.stop:
			return false, false, err // cut short by the shutdown: nothing to report
		case <-end:
			return false, false, err // or by a role change
		default:
		}
		b.log.Warn("metadata sync from master failed", "master", master, "err", err)
		return false, false, err
	}
	md, err := ha.DecodeMetadata(resp.Body)
	if err != nil {
		b.log.Warn("metadata sync from master", "master", master, "err", err)
		return false, false, err
	}
	b.applyMetadata(master, md)
	return b.topics.DataVersion() != topics || b.groups.DataVersion() != groups, false, nil
}

// applyMetadata installs the metadata of the master at addr on a slave.
func (b *Broker) applyMetadata(master string, md *ha.Metadata) {
	if md.Topics.DataVersion != b.topics.DataVersion() {
		if err := b.topics.Replace(md.Topics); err != nil {
			b.log.Error("apply master topics", "err", err)
		}
	}
	b.offsets.Replace(md.Offsets)
	b.groups.Replace(md.Groups)
	delay := struct {
		OffsetTable map[string]int64 `json:"offsetTable"`
	}{md.DelayOffsets}
	if err := jsonfile.Save(filepath.Join(b.opts.Store.StorePathRootDir, "config", "delayOffset.json"), delay); err != nil {
		b.log.Error("save master delay offsets", "err", err)
	}
	// The file of a timer service that runs is its own: a slave's does not
	// (a master answering its own sync at a role change keeps its file).
	if t := b.timers(); len(md.TimerCheckpoint) > 0 && (t == nil || !t.Running()) {
		if err := timer.ReplaceCheckpoint(b.timerCheckpointPath(), md.TimerCheckpoint); err != nil {
			b.log.Error("save master timer checkpoint", "err", err)
		}
	}
	b.applyMasterACL(master, md.ACL)
	b.metaSynced.Add(1)
}

// SyncMetadataNow asks a slave to copy its master's metadata now instead
// of at the end of the current poll (tests, operators, a new master). It
// does not block.
func (b *Broker) SyncMetadataNow() {
	select {
	case b.syncNow <- struct{}{}:
	default:
	}
}
