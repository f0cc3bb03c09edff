package broker

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/broker/internal/clock"
	"github.com/tidemq/tide/broker/internal/pidstate"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Idempotent sends (docs/broker.md "Idempotent sends"): a stamped send
// (protocol.PropProducerStamp) is checked against the producer's state
// for its queue before it is stored. A retry of a stored message is
// answered SEND_OK with the original offsets and stores nothing; an older
// epoch is refused TideProducerFenced; a sequence below the remembered
// window TideSequenceOutOfOrder.
//
// The state is never fsynced on the send path: a follower applies the
// stamped records of the commit log as the store's dispatcher passes them
// (on masters and slaves alike; it reads the log itself only for what the
// dispatcher has not passed yet, once a second), its snapshot is saved every pidSnapshotInterval and at
// shutdown with the offset it covers, and a start (or a promotion)
// applies the log from there to the end before the first stamped send is
// checked.

const (
	pidSnapshotInterval = 10 * time.Second
	pidFollowInterval   = time.Second
)

// idem is the broker's idempotent-producer state.
type idem struct {
	table    *pidstate.Table
	follower *pidstate.Follower
	path     string
	// ready is the commit log offset the follower must have applied
	// before a stamped send is checked: the end at start or promotion.
	ready atomic.Int64

	duplicates prometheus.Counter
	fenced     prometheus.Counter
	outOfOrder prometheus.Counter
}

// openIdem loads the snapshot and applies the commit log from its offset
// (from the first retained offset without one) to the end.
func (b *Broker) openIdem(cfgDir string) error {
	d := &idem{table: pidstate.New(), path: filepath.Join(cfgDir, "producerState.json")}
	from, found, err := d.table.Load(d.path)
	if err != nil {
		b.log.Error("idempotent producers: snapshot unreadable, rebuilding from the whole commit log", "err", err)
		d.table = pidstate.New()
		from, found = 0, false
	}
	if !found {
		from = b.store.MinPhyOffset()
	}
	d.follower = pidstate.NewFollower(d.table, b.store, b.opts.Store.MappedFileSizeCommitLog, from, b.log)
	start := time.Now()
	end := d.follower.CatchUp()
	b.log.Info("idempotent producers loaded", "snapshot", found, "from", from, "to", end, "producers", d.table.Len(), "took", time.Since(start))
	d.ready.Store(end)
	b.store.SetRecordListener(d.follower.Dispatched)
	d.duplicates = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tide", Subsystem: "broker", Name: "idempotent_duplicates_total",
		Help: "Messages of idempotent producers' retries answered with the original offsets instead of being stored again."})
	d.fenced = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tide", Subsystem: "broker", Name: "idempotent_fenced_total",
		Help: "Sends refused TIDE_PRODUCER_FENCED: an older instance of a stable producer after a newer one started."})
	d.outOfOrder = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tide", Subsystem: "broker", Name: "idempotent_out_of_order_total",
		Help: "Sends refused TIDE_SEQUENCE_OUT_OF_ORDER: a sequence below the window the broker remembers for its queue."})
	b.metrics.reg.MustRegister(d.duplicates, d.fenced, d.outOfOrder, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "tide", Subsystem: "broker", Name: "idempotent_producers",
		Help: "Producer ids the broker keeps state for."}, func() float64 { return float64(d.table.Len()) }))
	b.idem = d
	return nil
}

// becameMaster makes the next stamped send wait until the follower has
// applied everything the commit log holds now (a promoted slave's log).
func (d *idem) becameMaster(end int64) { d.ready.Store(end) }

// idemLoop follows the commit log, saves snapshots and expires idle
// producers until Shutdown, then saves a last snapshot.
func (b *Broker) idemLoop() {
	defer b.wg.Done()
	d := b.idem
	follow := time.NewTicker(pidFollowInterval)
	defer follow.Stop()
	snap := time.NewTicker(pidSnapshotInterval)
	defer snap.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-follow.C:
			d.follower.CatchUp()
		case <-d.follower.Kick():
			d.follower.Drain()
		case <-snap.C:
			if n := d.table.Expire(time.Duration(b.opts.ProducerIDExpirationMs) * time.Millisecond); n > 0 {
				b.log.Info("idempotent producers expired", "count", n)
			}
			b.saveIdem()
		}
	}
}

// saveIdem writes the snapshot covering what the follower applied.
func (b *Broker) saveIdem() {
	d := b.idem
	if err := d.table.Save(d.path, d.follower.CatchUp()); err != nil {
		b.log.Error("idempotent producers: save snapshot", "err", err)
	}
}

// handleInitProducerID serves TideInitProducerID.
func (b *Broker) handleInitProducerID(_ context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.InitProducerIDRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad init producer id header: %v", err)
	}
	if !b.isMaster() {
		return b.errorResponse(c, req, protocol.ServiceNotAvailable, "the broker[%s] is a slave and hands out no producer ids", b.addr)
	}
	id, epoch := b.idem.table.Init(h.ProducerGroup, h.InstanceName)
	b.log.Info("producer id handed out", "group", h.ProducerGroup, "instance", h.InstanceName, "producerId", id, "epoch", epoch, "conn", c.RemoteAddr())
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtFields = (&protocol.InitProducerIDResponseHeader{ProducerID: id, Epoch: epoch}).Encode()
	return resp
}

// sendStamp returns the stamp of a send's messages and how many they are;
// ok is false for an unstamped send (and with Tide extensions off, where
// the stamp is an ordinary property as on RocketMQ). Every message of a
// batch must carry the same producer id and epoch and consecutive
// sequences.
func (b *Broker) sendStamp(msgs []*protocol.MessageExt, enc []string) (st protocol.ProducerStamp, ok bool, err error) {
	if !b.opts.TideExtensions {
		return st, false, nil
	}
	v, ok := sendProperty(msgs, enc, 0, protocol.PropProducerStamp)
	if !ok {
		for i := range msgs[1:] {
			if _, has := sendProperty(msgs, enc, i+1, protocol.PropProducerStamp); has {
				return st, false, errors.New("only some messages of the batch carry a producer stamp")
			}
		}
		return st, false, nil
	}
	if st, err = protocol.ParseProducerStamp(v); err != nil {
		return st, false, err
	}
	for i := range msgs[1:] {
		v, _ := sendProperty(msgs, enc, i+1, protocol.PropProducerStamp)
		s, err := protocol.ParseProducerStamp(v)
		if err != nil {
			return st, false, err
		}
		if s.ProducerID != st.ProducerID || s.Epoch != st.Epoch || s.Sequence != st.Sequence+int64(i)+1 {
			return st, false, errors.New("the batch's producer stamps are not one producer's consecutive sequences")
		}
	}
	return st, true, nil
}

// putIdempotent runs put (which stores msgs and answers) under the
// producer's slot for (topic, queueID), unless the stamp shows a retry of
// stored messages (answered with their offsets), an old epoch or a
// forgotten sequence.
func (b *Broker) putIdempotent(c *remoting.Conn, req *protocol.Command, st protocol.ProducerStamp, topic string, queueID int32,
	msgs []*protocol.MessageExt, enc []string, put func() *protocol.Command) *protocol.Command {
	d := b.idem
	if d.follower.Scanned() < d.ready.Load() {
		d.follower.CatchUp()
	}
	slot, err := d.table.Acquire(st.ProducerID, st.Epoch, pidstate.QueueKey{Topic: topic, QueueID: queueID}, clock.Now().UnixMilli())
	if err != nil {
		d.fenced.Inc()
		return b.errorResponse(c, req, protocol.TideProducerFenced,
			"producer %d epoch %d is fenced: a newer instance of the producer started (a stopped or partitioned old instance must not send any more)", st.ProducerID, st.Epoch)
	}
	defer slot.Release()
	run, idx, err := slot.Lookup(st.Sequence, len(msgs))
	if errors.Is(err, pidstate.ErrForgotten) {
		run, err = b.findStored(topic, queueID, msgs, enc, st)
	}
	if err != nil {
		d.outOfOrder.Inc()
		return b.errorResponse(c, req, protocol.TideSequenceOutOfOrder,
			"producer %d sequence %d (+%d) of %s queue %d is below the window the broker remembers or overlaps a stored batch partly: it may be a retry of a stored message, so it is not stored", st.ProducerID, st.Sequence, len(msgs), topic, queueID)
	}
	if run != nil {
		if b.runStored(run, st.ProducerID, st.Epoch) {
			d.duplicates.Add(float64(len(msgs)))
			resp := b.duplicateResponse(req, run, idx, len(msgs), queueID)
			// As durable as a first answer: the stored copy may not be
			// on the slaves (its first answer was FLUSH_SLAVE_TIMEOUT,
			// or was lost), and SEND_OK would promise that it survives
			// a failover (chaos finding 8: retries answered SEND_OK for
			// copies the new master never had).
			// (waitReplicated is bounded by slaveTimeout, as for a first send)
			if code := b.waitReplicated(context.Background(), run.End); code != protocol.Success {
				resp.Code, resp.Remark = code, protocol.CodeName(code)
			}
			return resp
		}
		slot.Forget(run) // truncated by a failover: store it again
	}
	resp := put()
	switch resp.Code {
	case protocol.Success, protocol.FlushDiskTimeout, protocol.FlushSlaveTimeout, protocol.SlaveNotAvailable: // stored
		r := pidstate.Run{FirstSeq: st.Sequence, QueueOffset: msgs[0].QueueOffset, Born: msgs[0].BornTimestamp, Phys: make([]int64, 0, len(msgs))}
		for _, m := range msgs {
			r.Phys = append(r.Phys, m.CommitLogOffset)
		}
		last := msgs[len(msgs)-1]
		r.End = last.CommitLogOffset + int64(last.StoreSize)
		slot.Record(r)
	}
	return resp
}

// findStoredWait bounds the wait for the index to cover the commit log.
const findStoredWait = 2 * time.Second

// findStored looks for msgs stored by an earlier attempt whose sequence
// the window forgot (more than MaxRuns newer sends of the producer were
// stored in the queue since): by their UNIQ_KEY, which a producer keeps
// across retries, in the index, checking each record's stamp. It returns
// the run they were stored as, nil if they were never stored, or
// ErrOutOfOrder when it cannot tell (no index, no UNIQ_KEY, the index
// lagging, part of a batch found).
func (b *Broker) findStored(topic string, queueID int32, msgs []*protocol.MessageExt, enc []string, st protocol.ProducerStamp) (*pidstate.Run, error) {
	ctx, cancel := context.WithTimeout(context.Background(), findStoredWait)
	defer cancel()
	if err := b.store.WaitDispatched(ctx, b.store.MaxPhyOffset()); err != nil {
		return nil, pidstate.ErrOutOfOrder
	}
	var r pidstate.Run
	for i, m := range msgs {
		key, _ := sendProperty(msgs, enc, i, protocol.PropUniqKey)
		if key == "" {
			return nil, pidstate.ErrOutOfOrder
		}
		want := protocol.ProducerStamp{ProducerID: st.ProducerID, Epoch: st.Epoch, Sequence: st.Sequence + int64(i)}.String()
		phy, end, qo, found := b.findByKey(topic, queueID, key, want)
		switch {
		case found:
			if i == 0 {
				r = pidstate.Run{FirstSeq: st.Sequence, QueueOffset: qo, Born: m.BornTimestamp}
			}
			r.Phys = append(r.Phys, phy)
			r.End = max(r.End, end) // the duplicate answer waits for replication up to it
		case i == 0:
			return nil, nil // never stored
		default:
			return nil, pidstate.ErrOutOfOrder
		}
	}
	return &r, nil
}

// findByKey returns the commit log offset, end and queue offset of the
// record of (topic, queueID) with UNIQ_KEY key and stamp want.
func (b *Broker) findByKey(topic string, queueID int32, key, want string) (phy, end, qo int64, found bool) {
	res := b.store.QueryMessages(topic, key, 4, 0, clock.Now().Add(time.Minute).UnixMilli())
	pos := 0
	for _, off := range res.Offsets {
		v, err := protocol.ViewRecord(res.Data[pos:], false)
		if err != nil {
			return 0, 0, 0, false
		}
		pos += int(v.Size)
		if s, ok := protocol.PropertyBytes(v.Properties, protocol.PropProducerStamp); ok && string(s) == want && v.QueueID == queueID {
			return off, off + int64(v.Size), v.QueueOffset, true
		}
	}
	return 0, 0, 0, false
}

// runStored checks that the first record of a remembered run is still in
// the commit log with the stamp (a failover may have truncated it).
func (b *Broker) runStored(r *pidstate.Run, id, epoch int64) bool {
	if r.End > b.store.MaxPhyOffset() {
		return false
	}
	m, err := b.store.LookMessage(r.Phys[0])
	if err != nil {
		return false
	}
	return m.Properties[protocol.PropProducerStamp] == (protocol.ProducerStamp{ProducerID: id, Epoch: epoch, Sequence: r.FirstSeq}).String()
}

// duplicateResponse answers a retry of n stored messages from index idx
// of run with their offsets (the caller sets the replication status).
func (b *Broker) duplicateResponse(req *protocol.Command, r *pidstate.Run, idx, n int, queueID int32) *protocol.Command {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = protocol.OffsetMsgID(b.storeHost, r.Phys[idx+i])
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtFields = (&protocol.SendMessageResponseHeader{
		MsgID:       strings.Join(ids, ","),
		QueueID:     queueID,
		QueueOffset: r.QueueOffset + int64(idx),
		MsgRegion:   b.opts.RegionID,
		TraceOn:     b.opts.TraceOn,
	}).Encode()
	return resp
}
