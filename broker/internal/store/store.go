package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/broker/internal/clock"
	"github.com/tidemq/tide/broker/internal/store/checkpoint"
	"github.com/tidemq/tide/broker/internal/store/commitlog"
	"github.com/tidemq/tide/broker/internal/store/consumequeue"
	"github.com/tidemq/tide/broker/internal/store/index"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Sentinel errors of the store.
var (
	// ErrUnknownKey: Config.Set got a key that is not a store setting.
	ErrUnknownKey = errors.New("store: unknown config key")
	// ErrShuttingDown: the store is closing or closed; writes are refused.
	ErrShuttingDown = errors.New("store: shutting down")
	// ErrDiskFull: disk usage passed diskSpaceWarningLevelRatio; writes are
	// refused until retention frees space.
	ErrDiskFull = errors.New("store: disk nearly full, writes refused")
	// ErrMessageTooLarge: the stored record would exceed maxMessageSize.
	ErrMessageTooLarge = errors.New("store: message exceeds maxMessageSize")
	// ErrBadMessage: topic, queue id or properties cannot be stored.
	ErrBadMessage = errors.New("store: message cannot be stored")
	// ErrNotFound: no message at the commit log offset.
	ErrNotFound = errors.New("store: no message at offset")
	// ErrOffsetRemoved: the commit log offset was deleted by retention.
	ErrOffsetRemoved = commitlog.ErrOffsetRemoved
)

// PutStatus is the outcome of a successful append.
type PutStatus int

// Put statuses.
const (
	PutOK PutStatus = iota
	// PutFlushDiskTimeout: the message is written but SYNC_FLUSH did not
	// confirm the fsync within syncFlushTimeout (response code 10).
	PutFlushDiskTimeout
)

func (s PutStatus) String() string {
	if s == PutFlushDiskTimeout {
		return "FLUSH_DISK_TIMEOUT"
	}
	return "PUT_OK"
}

// PutResult describes an append. For a batch, offsets are the first
// message's; the others follow consecutively (queue offsets) and by their
// sizes (commit log offsets, also set in each MessageExt).
type PutResult struct {
	Status          PutStatus
	CommitLogOffset int64
	QueueOffset     int64
	StoreTimestamp  int64
	WroteBytes      int
	Count           int
}

// DispatchListener is called by the dispatcher after each consume-queue
// unit is written (to wake long-polling pulls). props aliases the mapped
// commit log and is valid only during the call. It runs on the dispatcher
// goroutine and must not block.
type DispatchListener func(topic string, queueID int32, queueOffset, tagsCode int64, props []byte)

// RecordListener is called by the dispatcher for every record it
// dispatches (prepared and rolled-back transactional records included),
// in commit log order, before the record's consume-queue unit is
// written; phy is the record's commit log offset. v aliases the mapped
// commit log and is valid only during the call: the dispatcher reuses
// the same *RecordView for the next record, so a hook must not retain v
// or its slices; it copies what it keeps. It runs on the
// dispatcher goroutine and must not block. It lets a service that keeps
// state derived from the log follow it without reading it a second time.
type RecordListener func(phy int64, v *protocol.RecordView)

// Stats are cumulative counters.
type Stats struct {
	Appends        int64 // append calls (a batch counts once)
	Messages       int64 // messages appended
	Flushes        int64 // commit log fdatasync rounds
	FlushTime      time.Duration
	Dispatched     int64 // commit log offset dispatched up to
	CorruptRecords int64 // records or units found invalid on read and skipped
}

type queueKey struct {
	topic string
	id    int32
}

// Store is the message store. All exported methods are safe for concurrent
// use. PutMessage/PutMessages serialize on the commit log append lock and,
// in SYNC_FLUSH, block until the group commit covering them; reads never
// wait for appends.
type Store struct {
	cfg Config
	log *slog.Logger
	cl  *commitlog.Log
	idx *index.Service
	// coders compute the tags codes of some topics (WithTagsCoder); a
	// slice: the dispatcher scans it for every record, and it holds two.
	coders []topicCoder

	cqMu sync.RWMutex
	cqs  map[queueKey]*consumequeue.Queue

	offMu sync.Mutex
	qoff  map[queueKey]int64

	gate     sync.RWMutex // puts hold it shared while appending; Close takes it
	closing  atomic.Bool
	diskFull atomic.Bool
	readOnly atomic.Bool

	listener  atomic.Pointer[DispatchListener]
	records   atomic.Pointer[RecordListener]
	limit     atomic.Pointer[func() int64] // SetDispatchLimit; nil: dispatch all that is written
	reputFrom int64                        // dispatcher goroutine only (and Open)
	// dispatchFaulted: the last dispatch stopped at a faulting page (disk
	// full); dispatcher goroutine only.
	dispatchFaulted bool
	indexFrom       int64  // records below are already indexed (set by recovery)
	lastTopic       string // dispatcher goroutine only
	// view is the record being dispatched, one for all records so that
	// dispatching allocates none: the hooks (RecordListener, TagsCoder)
	// must not retain it. Only dispatchAvailable's callers, which never
	// run at once (the dispatcher and Truncate under runMu, Open before
	// and Close after the dispatcher goroutine).
	view       protocol.RecordView
	dispatched atomic.Int64
	dmu        sync.Mutex
	ddone      chan struct{} // closed (and replaced) after a pass if dwaited
	dwaited    bool          // WaitDispatched holds ddone; dmu
	// runMu is held by the dispatcher while it dispatches and by the
	// flush goroutine while it flushes queues and moves the checkpoint;
	// Truncate takes it to stop both.
	runMu sync.Mutex
	dwake chan struct{}

	indexTS  atomic.Int64 // store time of the last checkpointed index flush
	messages atomic.Int64
	corrupt  atomic.Int64

	usage     func() (int, error) // disk usage percent of the commit log's file system
	now       func() time.Time
	lastCP    checkpoint.Checkpoint
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating if needed) the store, recovers it and starts its
// background goroutines (flush, dispatch, checkpoint, retention). After an
// abnormal shutdown (abort file present) it validates the commit log from
// the checkpoint on, truncates a torn tail, drops consume-queue units that
// point past the valid end and re-dispatches what the consume queues and
// index may have lost.
func Open(cfg Config, logger *slog.Logger, opts ...Option) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	s := &Store{
		cfg: cfg, log: logger.With("component", "store"),
		cqs: map[queueKey]*consumequeue.Queue{}, qoff: map[queueKey]int64{},
		ddone: make(chan struct{}), dwake: make(chan struct{}, 1), stop: make(chan struct{}),
		now: clock.Now,
	}
	s.usage = func() (int, error) { return diskUsage(cfg.commitLogDir()) }
	for _, o := range opts {
		o(s)
	}
	if openHook != nil {
		openHook(s)
	}
	if err := os.MkdirAll(cfg.StorePathRootDir, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	var err error
	s.cl, err = commitlog.Open(commitlog.Options{
		Dir: cfg.commitLogDir(), FileSize: cfg.MappedFileSizeCommitLog, SyncFlush: cfg.FlushDiskType == SyncFlush,
		Interval: ms(cfg.FlushIntervalCommitLog), LeastPages: cfg.FlushCommitLogLeastPages,
		Thorough: ms(cfg.FlushCommitLogThoroughInterval), Logger: s.log,
		// SYNC_FLUSH always warms: see the segment package comment.
		Warm:          cfg.WarmMapedFileEnable || cfg.FlushDiskType == SyncFlush,
		PretouchAhead: cfg.CommitLogPretouchAhead,
		OnAppend:      s.wakeDispatcher,
	})
	if err != nil {
		return nil, err
	}
	if cfg.MessageIndexEnable {
		s.idx, err = index.Open(index.Options{Dir: cfg.indexDir(), SlotNum: cfg.MaxHashSlotNum, IndexNum: cfg.MaxIndexNum})
		if err != nil {
			s.cl.Close()
			return nil, err
		}
	}
	if err := s.openQueues(); err != nil {
		s.closeFiles()
		return nil, err
	}
	if err := s.recover(); err != nil {
		s.closeFiles()
		return nil, err
	}
	if err := os.WriteFile(cfg.abortPath(), nil, 0o644); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("store: create abort file: %w", err)
	}
	s.checkDisk()
	s.cl.Start()
	s.wg.Add(3)
	go s.dispatchLoop()
	go s.flushLogicsLoop()
	go s.cleanLoop()
	return s, nil
}

// TagsCoder computes the consume-queue tags code of a record of the topic
// it was registered for; ok false falls back to the hash of its TAGS. It
// runs on the dispatcher goroutine for every record of that topic, also
// when recovery re-dispatches: it must be quick and must not block. v is
// valid only during the call, as for RecordListener: it must not be
// retained.
type TagsCoder func(v *protocol.RecordView) (code int64, ok bool)

type topicCoder struct {
	topic string
	fn    TagsCoder
}

// Option configures Open.
type Option func(*Store)

// WithTagsCoder makes fn compute the tags codes of topic's records
// instead of the tags hash. The broker's delay-level and timer topics
// store delivery times there, which their services read back; the store
// knows nothing of either. It is an Open option because dispatching (and
// re-dispatching after a crash) starts inside Open.
func WithTagsCoder(topic string, fn TagsCoder) Option {
	return func(s *Store) { s.coders = append(s.coders, topicCoder{topic, fn}) }
}

// WithDispatchLimit sets the dispatch limit (SetDispatchLimit) before
// recovery, so that recovery's re-dispatch respects it too: a broker that
// starts in controller mode holds back the records it cannot prove
// confirmed (a returning old master's divergent tail) until its role is
// known, instead of exposing them between Open and SetDispatchLimit. The
// records recovery leaves undispatched still count for the queue offset
// counters, so a write taken before they are dispatched does not reuse
// their queue offsets.
func WithDispatchLimit(fn func() int64) Option {
	return func(s *Store) {
		if fn != nil {
			s.limit.Store(&fn)
		}
	}
}

// SetDispatchListener installs (or with nil removes) the dispatch hook.
func (s *Store) SetDispatchListener(fn DispatchListener) {
	if fn == nil {
		s.listener.Store(nil)
		return
	}
	s.listener.Store(&fn)
}

// SetRecordListener installs (or with nil removes) the per-record hook.
func (s *Store) SetRecordListener(fn RecordListener) {
	if fn == nil {
		s.records.Store(nil)
		return
	}
	s.records.Store(&fn)
}

// SetDispatchLimit bounds what the dispatcher makes visible: records are
// dispatched (consume queues, index, dispatch listener) only while they
// end at or below fn() (RocketMQ 5's confirm offset in controller mode:
// what every SyncStateSet member has, so nothing a failover may truncate
// is ever served to a consumer or acted on by the delay, timer and
// transaction services). nil removes the bound. fn is called by the
// dispatcher goroutine with the store's dispatch lock held: it must be
// cheap and must not call back into the store except MaxPhyOffset and
// DispatchedOffset. Call WakeDispatcher when the limit rises.
func (s *Store) SetDispatchLimit(fn func() int64) {
	if fn == nil {
		s.limit.Store(nil)
	} else {
		s.limit.Store(&fn)
	}
	s.wakeDispatcher()
}

// WakeDispatcher makes the dispatcher look for records to dispatch now
// (it also polls every 100 ms). Never blocks; safe for concurrent use.
func (s *Store) WakeDispatcher() { s.wakeDispatcher() }

// SetReadOnly makes the store refuse PutMessage/PutMessages with
// ErrShuttingDown-like ErrReadOnly semantics (a slave); AppendRaw still works.
func (s *Store) SetReadOnly(ro bool) { s.readOnly.Store(ro) }

// ErrReadOnly: the store is a slave and takes only replicated appends.
var ErrReadOnly = errors.New("store: read only")

// PutMessage appends one message. The caller sets topic, queue id, body,
// properties, flag, sysFlag, born time and host, store host, reconsume
// times and prepared transaction offset; the store assigns and writes
// back CommitLogOffset, QueueOffset, StoreTimestamp, StoreSize and
// BodyCRC. Half and rollback transaction records get queue offset 0 and no
// consume-queue unit. In SYNC_FLUSH it returns after the fsync covering
// the message (unless its WAIT property is "false"), or with status
// PutFlushDiskTimeout after syncFlushTimeout. m must not be modified
// concurrently.
func (s *Store) PutMessage(ctx context.Context, m *protocol.MessageExt) (PutResult, error) {
	return s.put(ctx, []*protocol.MessageExt{m}, nil)
}

// PutMessages appends a batch to one topic and queue as one contiguous
// run with consecutive queue offsets and a single flush wait.
func (s *Store) PutMessages(ctx context.Context, msgs []*protocol.MessageExt) (PutResult, error) {
	return s.put(ctx, msgs, nil)
}

// PutEncoded is PutMessages (one message or a batch) with each message's
// property string already encoded: props[i] is written as msgs[i]'s
// properties, and their Properties maps are not read (the caller keeps
// them nil or equal to props). The SYNC_FLUSH wait reads WAIT from
// props[0]. len(props) must be len(msgs).
func (s *Store) PutEncoded(ctx context.Context, msgs []*protocol.MessageExt, props []string) (PutResult, error) {
	if len(props) != len(msgs) {
		return PutResult{}, fmt.Errorf("%w: %d property strings for %d messages", ErrBadMessage, len(props), len(msgs))
	}
	return s.put(ctx, msgs, props)
}

// openHook lets tests replace the clock and the disk usage probe before
// any goroutine reads them.
var openHook func(*Store)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// put appends msgs; props, when not nil, holds their encoded property
// strings (PutEncoded).
func (s *Store) put(ctx context.Context, msgs []*protocol.MessageExt, props []string) (PutResult, error) {
	var res PutResult
	if len(msgs) == 0 {
		return res, fmt.Errorf("%w: empty batch", ErrBadMessage)
	}
	if s.readOnly.Load() {
		return res, ErrReadOnly
	}
	if s.diskFull.Load() {
		return res, ErrDiskFull
	}
	first := msgs[0]
	if first.Topic == "" || len(first.Topic) > protocol.MaxTopicLength || first.QueueID < 0 {
		return res, fmt.Errorf("%w: topic %q queue %d", ErrBadMessage, first.Topic, first.QueueID)
	}
	bp := bufPool.Get().(*[]byte)
	buf := (*bp)[:0]
	defer func() {
		if cap(buf) <= 8<<20 {
			*bp = buf[:0]
			bufPool.Put(bp)
		}
	}()
	starts := make([]int, len(msgs))
	for i, m := range msgs {
		if m.Topic != first.Topic || m.QueueID != first.QueueID {
			return res, fmt.Errorf("%w: batch mixes queues", ErrBadMessage)
		}
		starts[i] = len(buf)
		var err error
		var ps string
		if props != nil {
			ps = props[i]
		} else {
			ps = protocol.EncodeProperties(m.Properties)
		}
		buf, err = protocol.AppendStored(buf, m, ps)
		if err != nil {
			return res, fmt.Errorf("%w: %w", ErrBadMessage, err)
		}
		if int(m.StoreSize) > s.cfg.MaxMessageSize {
			return res, fmt.Errorf("%w: %d bytes > %d", ErrMessageTooLarge, m.StoreSize, s.cfg.MaxMessageSize)
		}
	}
	if int64(len(buf))+8 > s.cfg.MappedFileSizeCommitLog {
		return res, fmt.Errorf("%w: batch of %d bytes exceeds a segment", ErrMessageTooLarge, len(buf))
	}
	tx := protocol.TxType(first.SysFlag)
	half := tx == protocol.SysFlagTxPrepared || tx == protocol.SysFlagTxRollback
	key := queueKey{first.Topic, first.QueueID}

	s.gate.RLock()
	if s.closing.Load() {
		s.gate.RUnlock()
		return res, ErrShuttingDown
	}
	phy, err := s.cl.Append(buf, func(phy int64, data []byte) error {
		now := s.now().UnixMilli()
		s.offMu.Lock()
		qo := s.qoff[key]
		if !half {
			s.qoff[key] = qo + int64(len(msgs))
		}
		s.offMu.Unlock()
		for i, m := range msgs {
			r := data[starts[i]:]
			m.CommitLogOffset = phy + int64(starts[i])
			m.StoreTimestamp = now
			m.QueueOffset = 0
			if !half {
				m.QueueOffset = qo + int64(i)
			}
			putInt64(r[protocol.RecordQueueOffsetPos:], m.QueueOffset)
			putInt64(r[protocol.RecordPhyOffsetPos:], m.CommitLogOffset)
			putInt64(r[storeTimestampPos(m.SysFlag):], now)
		}
		res.QueueOffset = first.QueueOffset
		res.StoreTimestamp = now
		return nil
	})
	s.gate.RUnlock()
	if err != nil {
		if errors.Is(err, commitlog.ErrClosed) {
			return res, ErrShuttingDown
		}
		return res, err
	}
	s.messages.Add(int64(len(msgs)))
	res.CommitLogOffset = phy
	res.WroteBytes = len(buf)
	res.Count = len(msgs)
	wait := ""
	if s.cfg.FlushDiskType == SyncFlush {
		if props != nil {
			wait, _ = protocol.PropertyValue(props[0], protocol.PropWaitStoreMsgOK)
		} else {
			wait = first.Property(protocol.PropWaitStoreMsgOK)
		}
	}
	if s.cfg.FlushDiskType == SyncFlush && wait != "false" {
		err := s.cl.WaitFlushed(ctx, phy+int64(len(buf)), ms(s.cfg.SyncFlushTimeout))
		switch {
		case errors.Is(err, commitlog.ErrFlushTimeout):
			res.Status = PutFlushDiskTimeout
		case errors.Is(err, commitlog.ErrClosed):
			res.Status = PutFlushDiskTimeout
		case err != nil:
			return res, err
		}
	}
	return res, nil
}

func putInt64(b []byte, v int64) {
	_ = b[7]
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

// storeTimestampPos is where storeTimestamp sits: after the born host,
// which is 8 bytes for IPv4 and 20 for IPv6.
func storeTimestampPos(sysFlag int32) int {
	if sysFlag&protocol.SysFlagBornHostV6 != 0 {
		return 68
	}
	return 56
}

// AppendRaw appends bytes replicated from a master's commit log at offset
// (which must be MaxPhyOffset) and dispatches them. Safe concurrently with
// reads; not meant to be mixed with PutMessage.
func (s *Store) AppendRaw(offset int64, data []byte) error {
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.closing.Load() {
		return ErrShuttingDown
	}
	if err := s.cl.AppendRaw(offset, data); err != nil {
		return err
	}
	return nil
}

// ReadCommitLog returns a copy of up to max bytes of the commit log from
// offset, never crossing a segment end (for replication).
func (s *Store) ReadCommitLog(offset int64, max int) ([]byte, error) {
	return s.cl.ReadRaw(offset, max)
}

// ViewCommitLog calls fn with up to max bytes of the commit log from
// offset, never crossing a segment end, without copying them: b aliases
// the mapped segment and is valid only during fn, which must not keep it
// or write to it. For readers that parse and copy what they need (the
// idempotent producers' follower), where a copy per read is pure cost.
func (s *Store) ViewCommitLog(offset int64, max int, fn func(b []byte) error) error {
	return s.cl.View(offset, func(b []byte) error { return fn(b[:min(len(b), max)]) })
}

// MaxPhyOffset returns the end of the written commit log.
func (s *Store) MaxPhyOffset() int64 { return s.cl.MaxOffset() }

// MinPhyOffset returns the first retained commit log offset.
func (s *Store) MinPhyOffset() int64 { return s.cl.MinOffset() }

// ConfirmedOffset returns the commit log end known durable locally.
func (s *Store) ConfirmedOffset() int64 { return s.cl.FlushedOffset() }

// Stats returns the counters.
func (s *Store) Stats() Stats {
	return Stats{
		Appends: s.cl.Appends.Load(), Messages: s.messages.Load(), Flushes: s.cl.Flushes.Load(),
		FlushTime: time.Duration(s.cl.FlushDur.Load()), Dispatched: s.dispatched.Load(), CorruptRecords: s.corrupt.Load(),
	}
}

// Close stops accepting writes, waits for appends in progress, flushes the
// commit log, dispatches and flushes consume queues and index, writes the
// checkpoint and removes the abort marker, so the next Open takes the fast
// path. Readers in flight finish on their mapped files. Idempotent; it
// blocks until all of that is done.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.shutdown() })
	return s.closeErr
}

func (s *Store) shutdown() error {
	s.closing.Store(true)
	s.gate.Lock() // waits for appends in progress
	defer s.gate.Unlock()
	var errs []error
	if err := s.cl.Shutdown(); err != nil {
		errs = append(errs, err)
	}
	close(s.stop)
	s.wg.Wait()
	s.dispatchAvailable()
	if err := s.flushLogics(true); err != nil {
		errs = append(errs, err)
	}
	if err := s.saveCheckpoint(true); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := os.Remove(s.cfg.abortPath()); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	s.closeFiles()
	return errors.Join(errs...)
}

func (s *Store) closeFiles() {
	s.cl.Close()
	if s.idx != nil {
		s.idx.Close()
	}
	s.cqMu.Lock()
	for _, q := range s.cqs {
		q.Close()
	}
	s.cqMu.Unlock()
}

func itoa(v int32) string { return strconv.Itoa(int(v)) }
