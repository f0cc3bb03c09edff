package timer

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/broker/internal/clock"
	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Topic is where timer messages and recall markers wait (queue 0).
const Topic = protocol.TimerTopic

// TagsCode is the store hook (store.WithTagsCoder for Topic) that makes a
// timer message's consume-queue tags code its delivery time (PropOutMS);
// recall markers carry none and keep the tags hash.
func TagsCode(v *protocol.RecordView) (int64, bool) {
	if d, ok := protocol.PropertyBytes(v.Properties, PropOutMS); ok {
		if n, err := strconv.ParseInt(string(d), 10, 64); err == nil {
			return n, true
		}
	}
	return 0, false
}

// Property names. The first three come from producers (RocketMQ 5);
// PropOutMS is set by Accept on every timer message it handles (and stays
// on the delivered message, so consumers can measure lateness).
const (
	PropDeliverMS = protocol.PropTimerDeliverMS // absolute delivery time, Unix ms
	PropDelaySec  = protocol.PropTimerDelaySec  // delay in s after the broker received the message
	PropDelayMS   = protocol.PropTimerDelayMS   // delay in ms after the broker received the message
	PropOutMS     = protocol.PropTimerOutMS     // absolute delivery time computed by Accept
	// PropDelUniqKey on a message turns it into a recall of the pending
	// timer whose UNIQ_KEY it names (RocketMQ 5's TIMER_DEL_UNIQKEY).
	PropDelUniqKey = "TIMER_DEL_UNIQKEY"
)

// Sentinel errors.
var (
	// ErrInvalidOptions: Options.Validate failed.
	ErrInvalidOptions = errors.New("timer: invalid options")
	// ErrDelayTooLong: the delivery time is further than Options.MaxDelay
	// (timerMaxDelaySec) ahead; the broker answers MESSAGE_ILLEGAL.
	ErrDelayTooLong = errors.New("timer: delivery time beyond the maximum delay")
	// ErrBadTimer: a timer property is not a non-negative integer; the
	// broker answers MESSAGE_ILLEGAL.
	ErrBadTimer = errors.New("timer: malformed timer property")
	// ErrAlreadyDelivered: the recalled timer was delivered before the
	// recall was processed.
	ErrAlreadyDelivered = errors.New("timer: already delivered")
	// ErrNotFound: no pending timer has this handle, and the service does
	// not remember delivering or recalling one (see Recall).
	ErrNotFound = errors.New("timer: no pending timer with this handle")
	// ErrBadHandle: the handle is empty.
	ErrBadHandle = errors.New("timer: empty recall handle")
	// ErrStopped: the service is not running.
	ErrStopped = errors.New("timer: service not running")
	// ErrRunning: the operation needs a service that has not started.
	ErrRunning = errors.New("timer: service already started")
)

// Store is what the service needs from the message store (*store.Store
// implements it).
type Store interface {
	PutMessage(ctx context.Context, m *protocol.MessageExt) (store.PutResult, error)
	ReadQueue(topic string, queueID int32, offset int64, n int) ([]store.QueueUnit, error)
	ReadRecord(commitLogOffset int64) ([]byte, error)
	MinOffset(topic string, queueID int32) int64
	MaxOffset(topic string, queueID int32) int64
}

// Options configure a Service. Zero values take the defaults.
type Options struct {
	Store Store
	// CheckpointPath is the progress file (config/timerCheckpoint); the
	// previous version is kept as CheckpointPath+".bak".
	CheckpointPath string
	// MaxDelay bounds how far ahead a delivery time may be (default 3 days,
	// RocketMQ 5's timerMaxDelaySec). It should stay below the store's
	// fileReservedTime: see the package comment.
	MaxDelay time.Duration
	// FlushInterval is how often the checkpoint is written when something
	// changed (default 1s). It bounds the redelivery window after a crash.
	FlushInterval time.Duration
	// PollInterval bounds every wait (default 100ms): new timers are seen
	// after at most this long without Notify.
	PollInterval time.Duration
	// RetryBackoff is the wait after a failed delivery put (default 1s).
	RetryBackoff time.Duration
	// BatchSize is the number of consume-queue units read at once and of
	// deliveries between two scans (default 256).
	BatchSize int
	// OutcomeMemory is how many delivered or recalled handles are
	// remembered, to answer recalls that come too late (default 100000).
	OutcomeMemory int
	// StoreHost is the store host written into the recall markers Recall
	// stores.
	StoreHost netip.AddrPort
	// BeforeRestore, if set, is called on the service goroutine before it
	// restores the pending timers (tests stall the restore with it).
	BeforeRestore func()
	Logger        *slog.Logger
	// Now is the wall clock (default clock.Now), read in Unix ms.
	Now func() time.Time
	// Replicated, if set, returns the commit log offset below which
	// records survive a failover (the confirm offset in controller mode).
	// A timer whose delivered copy ends above it is written to the
	// checkpoint as still pending, so a replica promoted with a copy of
	// the checkpoint (Checkpoint) delivers it again rather than never:
	// it may not have the copy. nil: every delivered copy counts at once.
	Replicated func() int64
}

func (o *Options) defaults() {
	if o.MaxDelay <= 0 {
		o.MaxDelay = 3 * 24 * time.Hour
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 100 * time.Millisecond
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = time.Second
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 256
	}
	if o.OutcomeMemory <= 0 {
		o.OutcomeMemory = 100000
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = clock.Now
	}
}

// Validate reports missing options.
func (o *Options) Validate() error {
	switch {
	case o.Store == nil:
		return fmt.Errorf("%w: no store", ErrInvalidOptions)
	case o.CheckpointPath == "":
		return fmt.Errorf("%w: no checkpoint path", ErrInvalidOptions)
	case o.MaxDelay < 0:
		return fmt.Errorf("%w: negative max delay", ErrInvalidOptions)
	}
	return nil
}

type outcome uint8

const (
	delivered outcome = iota + 1
	recalled
)

// Service keeps the pending timers of the timer topic and delivers them
// when due. One goroutine owns all timer state: it scans new units of the
// timer queue (timers and recall markers, in store order), delivers due
// timers and writes the checkpoint; recalls are therefore serialised with
// deliveries and their outcome is exact. Exported methods are safe for
// concurrent use.
type Service struct {
	opts Options
	log  *slog.Logger
	seed maphash.Seed

	// Goroutine-owned state.
	p        *pending
	scanned  int64 // next queue offset to look at
	done     int64 // every timer below is finished
	cp       *checkpoint
	dirty    bool
	lastSave time.Time
	memory   map[uint64]outcome
	memRing  []uint64
	memNext  int
	// unconfirmed are the delivered timers whose copies end above
	// Options.Replicated, oldest first.
	unconfirmed []unconfirmed
	encoded     atomic.Pointer[[]byte] // the last checkpoint written

	waitMu  sync.Mutex
	waiters map[string]chan error
	seq     atomic.Int64
	epoch   int64

	wake      chan struct{}
	stop      chan struct{}
	exited    chan struct{}
	startOnce sync.Once
	stopOnce  sync.Once
	running   atomic.Bool

	// Stats.
	nPending    atomic.Int64
	nScanned    atomic.Int64
	nDone       atomic.Int64
	nDelivered  atomic.Int64
	nRecalled   atomic.Int64
	nSkipped    atomic.Int64
	nPutFailure atomic.Int64
	late        latenessRecorder
}

// New validates opts and reads the checkpoint (CheckpointPath, else its
// .bak). A checkpoint that exists but does not decode is an error wrapping
// ErrBadCheckpoint: deleting both files makes the service rescan the whole
// timer queue, redelivering every timer still in the store.
func New(opts Options) (*Service, error) {
	opts.defaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Service{
		opts: opts, log: opts.Logger.With("component", "timer"), seed: maphash.MakeSeed(),
		p: newPending(), memory: map[uint64]outcome{}, waiters: map[string]chan error{},
		epoch: time.Now().UnixNano(), wake: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{}),
	}
	cp, found, err := loadCheckpoint(opts.CheckpointPath)
	if err != nil {
		return nil, err
	}
	if found {
		s.cp = &cp
		b := cp.encode()
		s.encoded.Store(&b)
	}
	return s, nil
}

// unconfirmed is a delivered timer whose copy may not survive a failover:
// its record's commit log and queue offsets and the end of its copy.
type unconfirmed struct{ phy, qoff, end int64 }

// Checkpoint returns the last checkpoint the service wrote (encoded as in
// the file), or nil before the first. With Options.Replicated it never
// counts a timer as delivered before its copy is below the replicated
// offset. Safe for concurrent use; the caller must not modify the bytes.
func (s *Service) Checkpoint() []byte {
	if b := s.encoded.Load(); b != nil {
		return *b
	}
	return nil
}

// Start launches the service goroutine, which first restores the pending
// timers from the checkpoint. Calling it twice has no further effect.
func (s *Service) Start() {
	s.startOnce.Do(func() {
		s.running.Store(true)
		go s.run()
	})
}

// Running reports whether the service goroutine runs (started, not yet
// stopped).
func (s *Service) Running() bool { return s.running.Load() }

// Reload reads the checkpoint file again, for a service built on a slave
// and started on its promotion: the file then holds the master's latest
// checkpoint (ReplaceCheckpoint), not the one read by New. It fails once
// the service has started, and leaves the service as it was on an error.
func (s *Service) Reload() error {
	if s.running.Load() {
		return fmt.Errorf("timer: reload: %w", ErrRunning)
	}
	cp, found, err := loadCheckpoint(s.opts.CheckpointPath)
	if err != nil || !found {
		return err
	}
	b := cp.encode()
	s.cp = &cp
	s.encoded.Store(&b)
	return nil
}

// Stopped reports whether Stop was called: a stopped service never runs
// again (Start has no effect), so a broker promoted again builds a new one.
func (s *Service) Stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// Stop stops the goroutine (a delivery put in progress finishes first),
// which writes the checkpoint on its way out and fails pending Recall
// calls with ErrStopped. It returns ctx's error if that takes too long.
// Stop must be called before the store is closed.
func (s *Service) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stop) })
	s.startOnce.Do(func() { close(s.exited) }) // never started: nothing to wait for, and no later Start
	select {
	case <-s.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Notify wakes the service early, e.g. from the store's dispatch listener
// when the timer topic got a unit. It never blocks.
func (s *Service) Notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// memKey is the key of a recall or delivery outcome: a handle is only
// ever answered for the topic it was asked in.
func (s *Service) memKey(topic, key string) uint64 {
	if key == "" {
		return 0
	}
	return s.hash(topic + "\x00" + key)
}

// hash maps a UNIQ_KEY to the 64-bit key of the recall index (0 is
// reserved for "no key").
func (s *Service) hash(key string) uint64 {
	if key == "" {
		return 0
	}
	return max(maphash.String(s.seed, key), 1)
}

// Accept prepares a message for the send path; now is when the broker
// received it (relative delays count from it). The caller stores m
// afterwards, whatever Accept returns without error.
//
//   - A message with TIMER_DEL_UNIQKEY = K is a recall: it becomes a recall
//     marker in the timer topic (REAL_TOPIC/REAL_QID keep its topic and
//     queue) and handle is K. Once stored, the pending timer with UNIQ_KEY K
//     in the marker's topic is never delivered (a timer of another topic
//     with that key is left alone: sending to a topic is what a recall
//     proves the sender may do); the outcome is logged (use Recall to
//     learn it).
//   - A message with TIMER_DELAY_SEC, else TIMER_DELAY_MS, else
//     TIMER_DELIVER_MS is a timer with delivery time at = now + delay, or
//     the absolute time. Those three properties and DELAY are removed (the
//     timer replaces a delay level) and TIMER_OUT_MS = at is set. If at is
//     more than MaxDelay ahead it fails with ErrDelayTooLong; a malformed
//     value fails with ErrBadTimer. If at <= now the message is not
//     diverted and goes to its topic directly (never early, and no later
//     than needed). Otherwise its topic and queue move to
//     REAL_TOPIC/REAL_QID and it goes to the timer topic, queue 0.
//     handle is the message's UNIQ_KEY (the msgId the client gets back);
//     without one the timer cannot be recalled.
//   - Anything else, and half or rollback transaction records (a timer
//     applies when the transaction commits), is left alone.
func (s *Service) Accept(m *protocol.MessageExt, now time.Time) (handle string, diverted bool, err error) {
	if tx := protocol.TxType(m.SysFlag); tx == protocol.SysFlagTxPrepared || tx == protocol.SysFlagTxRollback {
		return "", false, nil
	}
	if key := m.Property(PropDelUniqKey); key != "" {
		divert(m)
		return key, true, nil
	}
	nowMS := now.UnixMilli()
	at, ok, err := deliveryTime(m, nowMS, s.opts.MaxDelay.Milliseconds())
	if !ok || err != nil {
		return "", false, err
	}
	for _, k := range []string{PropDelaySec, PropDelayMS, PropDeliverMS, protocol.PropDelayLevel} {
		delete(m.Properties, k)
	}
	m.SetProperty(PropOutMS, strconv.FormatInt(at, 10))
	handle = m.Property(protocol.PropUniqKey)
	if at <= nowMS {
		return handle, false, nil
	}
	divert(m)
	return handle, true, nil
}

func divert(m *protocol.MessageExt) {
	m.SetProperty(protocol.PropRealTopic, m.Topic)
	m.SetProperty(protocol.PropRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.Topic, m.QueueID = Topic, 0
}

// deliveryTime returns the requested delivery time of m in Unix ms, ok
// false when m has no timer property.
func deliveryTime(m *protocol.MessageExt, now, maxDelay int64) (at int64, ok bool, err error) {
	var v string
	var unit int64
	switch {
	case m.Property(PropDelaySec) != "":
		v, unit = m.Property(PropDelaySec), 1000
	case m.Property(PropDelayMS) != "":
		v, unit = m.Property(PropDelayMS), 1
	case m.Property(PropDeliverMS) != "":
		v = m.Property(PropDeliverMS)
	default:
		return 0, false, nil
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil || n < 0 {
		return 0, true, fmt.Errorf("%w: %q", ErrBadTimer, v)
	}
	if unit == 0 {
		at = n
	} else {
		if n > (math.MaxInt64-now)/unit {
			return 0, true, fmt.Errorf("%w: %s %d", ErrDelayTooLong, v, maxDelay)
		}
		at = now + n*unit
	}
	if at-now > maxDelay {
		return 0, true, fmt.Errorf("%w: delivery at %d is %d ms ahead, at most %d allowed", ErrDelayTooLong, at, at-now, maxDelay)
	}
	return at, true, nil
}

// Restore builds the message to deliver from a stored timer message:
// topic and queue from REAL_TOPIC/REAL_QID (removed), everything else
// kept, TIMER_OUT_MS included. Offsets and store time are the store's.
func Restore(m *protocol.MessageExt) (*protocol.MessageExt, error) {
	topic := m.Property(protocol.PropRealTopic)
	qid, err := strconv.ParseInt(m.Property(protocol.PropRealQueueID), 10, 32)
	if topic == "" || err != nil || qid < 0 {
		return nil, fmt.Errorf("timer: record without a valid REAL_TOPIC/REAL_QID (%q/%q)", topic, m.Property(protocol.PropRealQueueID))
	}
	props := make(map[string]string, len(m.Properties))
	for k, v := range m.Properties {
		if k != protocol.PropRealTopic && k != protocol.PropRealQueueID {
			props[k] = v
		}
	}
	out := &protocol.MessageExt{
		QueueID: int32(qid), SysFlag: m.SysFlag, BornTimestamp: m.BornTimestamp, BornHost: m.BornHost,
		StoreHost: m.StoreHost, ReconsumeTimes: m.ReconsumeTimes, PreparedTransactionOffset: m.PreparedTransactionOffset,
	}
	out.Topic, out.Flag, out.Properties, out.Body = topic, m.Flag, props, m.Body
	return out, nil
}

// Recall cancels the pending timer of topic whose UNIQ_KEY is handle (the
// msgId its producer got back); an empty topic recalls timers with that
// handle in any topic (an operator's recall). It stores a recall marker in
// the timer topic (so the recall survives restarts) and waits until the
// service has processed it, in store order after every timer stored before
// the call. Results:
//
//   - nil: no timer with this handle will be delivered by the service: it
//     was pending and is now recalled (or had been recalled before).
//   - ErrAlreadyDelivered: it was delivered before the marker was
//     processed; the recall had no effect.
//   - ErrNotFound: nothing pending and nothing remembered: the handle is
//     unknown (in this topic; with an empty topic, outcomes are not
//     remembered), was delivered directly by Accept (due time already past),
//     or finished before the last restart or more than OutcomeMemory
//     outcomes ago. Nothing will be delivered for it from now on either.
//   - ErrBadHandle, ErrStopped, a store error or ctx's error: the outcome
//     is unknown (a stored marker still takes effect later).
func (s *Service) Recall(ctx context.Context, topic, handle string) error {
	if handle == "" {
		return ErrBadHandle
	}
	if !s.running.Load() {
		return ErrStopped
	}
	token := fmt.Sprintf("recall-%x-%d", s.epoch, s.seq.Add(1))
	ch := make(chan error, 1)
	s.waitMu.Lock()
	s.waiters[token] = ch
	s.waitMu.Unlock()
	defer func() {
		s.waitMu.Lock()
		delete(s.waiters, token)
		s.waitMu.Unlock()
	}()
	m := &protocol.MessageExt{QueueID: 0, BornTimestamp: s.opts.Now().UnixMilli(), BornHost: s.opts.StoreHost, StoreHost: s.opts.StoreHost}
	m.Topic = Topic
	m.Properties = map[string]string{PropDelUniqKey: handle, protocol.PropUniqKey: token}
	if topic != "" {
		m.Properties[protocol.PropRealTopic] = topic
	}
	if _, err := s.opts.Store.PutMessage(ctx, m); err != nil {
		return fmt.Errorf("timer: store recall marker: %w", err)
	}
	s.Notify()
	select {
	case err := <-ch:
		return err
	case <-s.exited:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Service) answer(token string, err error) {
	if token == "" {
		return
	}
	s.waitMu.Lock()
	ch := s.waiters[token]
	s.waitMu.Unlock()
	if ch != nil {
		ch <- err // buffered, one answer per token
	}
}

func (s *Service) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

func (s *Service) run() {
	defer func() {
		s.running.Store(false)
		if err := s.persist(); err != nil {
			s.log.Error("write timer checkpoint at stop", "err", err)
		}
		close(s.exited)
	}()
	if s.opts.BeforeRestore != nil {
		s.opts.BeforeRestore()
	}
	s.restore()
	// Read the queue to the end it has now before delivering anything: a
	// recall marker stored after a due timer must cancel it first. A
	// promoted replica (whose timer checkpoint is not replicated) or a
	// start without a checkpoint scans from far back, where a timer due
	// long ago sits batches before its marker.
	for end := s.opts.Store.MaxOffset(Topic, 0); s.scanned < end && !s.stopping(); {
		if s.scan() == 0 {
			break
		}
	}
	s.lastSave = time.Now()
	for !s.stopping() {
		n := s.scan()
		wait, ok := s.deliverDue()
		if !ok {
			return
		}
		if s.confirm() {
			s.dirty = true // the checkpoint may now count them as delivered
		}
		if s.dirty && time.Since(s.lastSave) >= s.opts.FlushInterval {
			if err := s.persist(); err != nil {
				s.log.Error("write timer checkpoint", "err", err)
			}
			s.lastSave = time.Now()
		}
		if n == s.opts.BatchSize || wait == 0 {
			continue
		}
		t := time.NewTimer(min(max(wait, time.Millisecond), s.opts.PollInterval))
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// restore rebuilds the pending timers from the checkpoint: the listed
// timers between done and scan are re-read from the store; scanning then
// continues at scan. Without a checkpoint it starts at the queue minimum.
func (s *Service) restore() {
	lo, hi := s.opts.Store.MinOffset(Topic, 0), s.opts.Store.MaxOffset(Topic, 0)
	if s.cp == nil {
		s.scanned, s.done = lo, lo
		s.publish()
		return
	}
	cp := s.cp
	start, end := cp.done, cp.scan
	if end > hi {
		s.log.Warn("timer checkpoint beyond the end of the timer queue (store lost its tail?), rescanning from the end", "scan", end, "max", hi)
		end = hi
	}
	if start < lo {
		s.log.Warn("timer queue start removed by retention before every timer was finished", "done", start, "min", lo)
		start = lo
	}
	want := cp.pending
	restored := 0
	for off := start; off < end && len(want) > 0; {
		units, err := s.opts.Store.ReadQueue(Topic, 0, off, s.opts.BatchSize)
		if err != nil || len(units) == 0 {
			break
		}
		for _, u := range units {
			if off >= end {
				break
			}
			for len(want) > 0 && want[0] < u.Offset {
				s.lost(want[0], "its consume-queue unit is gone")
				want = want[1:]
			}
			if len(want) > 0 && want[0] == u.Offset && u.Size > 0 {
				want = want[1:]
				if s.scanUnit(off, u, true) {
					restored++
				}
			}
			off++
		}
	}
	for _, phy := range want {
		s.lost(phy, "not found in the timer queue")
	}
	s.scanned, s.done = max(end, start), start
	s.publish()
	s.log.Info("timers restored", "pending", restored, "scanFrom", s.scanned)
}

func (s *Service) lost(phy int64, why string) {
	s.nSkipped.Add(1)
	s.log.Error("pending timer lost", "commitLogOffset", phy, "reason", why)
}

func (s *Service) publish() {
	s.nPending.Store(int64(s.p.len()))
	s.nScanned.Store(s.scanned)
	s.nDone.Store(s.done)
}

// scan processes up to BatchSize new units of the timer queue and
// returns how many it looked at.
func (s *Service) scan() int {
	units, err := s.opts.Store.ReadQueue(Topic, 0, s.scanned, s.opts.BatchSize)
	if err != nil || len(units) == 0 {
		if lo := s.opts.Store.MinOffset(Topic, 0); s.scanned < lo {
			s.log.Error("timer queue units removed by retention before they were scanned", "from", s.scanned, "to", lo)
			s.nSkipped.Add(lo - s.scanned)
			s.scanned = lo
			s.dirty = true
			s.publish()
		}
		return 0
	}
	for _, u := range units {
		s.scanUnit(s.scanned, u, false)
		s.scanned++
	}
	s.dirty = true
	s.publish()
	return len(units)
}

// scanUnit adds the timer at u to the pending set or applies the recall
// marker at u (not when restoring: markers below the checkpoint's scan
// offset are already reflected in its pending list). It reports whether
// a timer was added.
func (s *Service) scanUnit(off int64, u store.QueueUnit, restoring bool) bool {
	if u.Size <= 0 {
		return false
	}
	rec, err := s.opts.Store.ReadRecord(u.Offset)
	if err != nil {
		s.nSkipped.Add(1)
		s.log.Error("timer record unreadable, skipped", "queueOffset", off, "commitLogOffset", u.Offset, "err", err)
		return false
	}
	v, err := protocol.ViewRecord(rec, false)
	if err != nil {
		s.nSkipped.Add(1)
		s.log.Error("timer record malformed, skipped", "queueOffset", off, "commitLogOffset", u.Offset, "err", err)
		return false
	}
	props := string(v.Properties)
	if key, ok := protocol.PropertyValue(props, PropDelUniqKey); ok && key != "" {
		if !restoring {
			token, _ := protocol.PropertyValue(props, protocol.PropUniqKey)
			topic, _ := protocol.PropertyValue(props, protocol.PropRealTopic)
			s.applyRecall(key, topic, token)
		}
		return false
	}
	out, _ := protocol.PropertyValue(props, PropOutMS)
	at, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		s.nSkipped.Add(1)
		s.log.Error("timer record without a delivery time, skipped", "queueOffset", off, "commitLogOffset", u.Offset, PropOutMS, out)
		return false
	}
	key, _ := protocol.PropertyValue(props, protocol.PropUniqKey)
	s.p.add(entry{at: at, phy: u.Offset, hash: s.hash(key)})
	return true
}

// keyAt returns the UNIQ_KEY and real topic of the timer record at phy
// (ok false if unreadable).
func (s *Service) keyAt(phy int64) (key, topic string, ok bool) {
	rec, err := s.opts.Store.ReadRecord(phy)
	if err != nil {
		return "", "", false
	}
	v, err := protocol.ViewRecord(rec, false)
	if err != nil {
		return "", "", false
	}
	key, _ = v.Property(protocol.PropUniqKey)
	topic, _ = v.Property(protocol.PropRealTopic)
	return key, topic, true
}

// applyRecall recalls the pending timers with UNIQ_KEY key in topic (any
// topic when topic is empty).
func (s *Service) applyRecall(key, topic, token string) {
	h := s.hash(key)
	n := 0
	for _, phy := range s.p.candidates(h) {
		// Verify: two keys may share a hash, and a marker only recalls
		// timers of its own topic. An unreadable record could not be
		// delivered anyway, so recalling it is harmless.
		k, t, ok := s.keyAt(phy)
		if ok && (k != key || (topic != "" && t != topic)) {
			continue
		}
		s.p.recall(phy, h)
		s.remember(s.memKey(t, key), recalled)
		n++
	}
	mk := s.memKey(topic, key)
	var res error
	switch {
	case n > 0:
		s.nRecalled.Add(int64(n))
		s.dirty = true
		s.log.Info("timer recalled", "handle", key, "topic", topic, "timers", n)
	case topic != "" && s.memory[mk] == delivered:
		res = ErrAlreadyDelivered
		s.log.Info("timer recall too late: already delivered", "handle", key, "topic", topic)
	case topic != "" && s.memory[mk] == recalled:
		s.log.Info("timer recall repeated: already recalled", "handle", key, "topic", topic)
	default:
		res = ErrNotFound
		s.log.Info("timer recall: no pending timer with this handle", "handle", key)
	}
	s.publish()
	s.answer(token, res)
}

// remember records the outcome under memKey h, evicting the oldest of
// OutcomeMemory entries.
func (s *Service) remember(h uint64, o outcome) {
	if h == 0 {
		return
	}
	if _, ok := s.memory[h]; !ok {
		if len(s.memRing) < s.opts.OutcomeMemory {
			s.memRing = append(s.memRing, h)
		} else {
			delete(s.memory, s.memRing[s.memNext])
			s.memRing[s.memNext] = h
			s.memNext = (s.memNext + 1) % len(s.memRing)
		}
	}
	s.memory[h] = o
}

// deliverDue delivers the timers due now, at most BatchSize before
// returning (so that scanning, recalls and checkpoints keep up during a
// storm). It returns how long until the next one is due (0: call again at
// once; PollInterval when none is pending) and false on Stop.
func (s *Service) deliverDue() (time.Duration, bool) {
	for range s.opts.BatchSize {
		e, ok := s.p.peek()
		if !ok {
			return s.opts.PollInterval, true
		}
		now := s.opts.Now().UnixMilli()
		if e.at > now {
			return time.Duration(e.at-now) * time.Millisecond, true
		}
		if !s.deliver(e) {
			return 0, false
		}
		s.p.pop()
		s.dirty = true
		s.publish()
	}
	return 0, true
}

// deliver puts the message of timer e into its real topic, retrying put
// failures until Stop (false). An unreadable or malformed record is
// logged and counted as skipped.
func (s *Service) deliver(e entry) bool {
	m, err := s.look(e.phy)
	var qoff int64 // the timer record's, for the checkpoint's done offset
	if err == nil {
		qoff = m.QueueOffset
		m, err = Restore(m)
	}
	if err != nil {
		s.nSkipped.Add(1)
		s.log.Error("timer message undeliverable, skipped", "commitLogOffset", e.phy, "err", err)
		return true
	}
	for {
		// Not cancelled by Stop: a put that may have been written must
		// report back before the timer counts as pending or delivered.
		res, err := s.opts.Store.PutMessage(context.Background(), m)
		if err == nil {
			if s.opts.Replicated != nil {
				s.unconfirmed = append(s.unconfirmed, unconfirmed{phy: e.phy, qoff: qoff, end: res.CommitLogOffset + int64(res.WroteBytes)})
			}
			break
		}
		s.nPutFailure.Add(1)
		s.log.Error("deliver timer message, will retry", "commitLogOffset", e.phy, "topic", m.Topic, "err", err)
		t := time.NewTimer(s.opts.RetryBackoff)
		select {
		case <-s.stop:
			t.Stop()
			return false
		case <-t.C:
		}
	}
	s.late.record(time.Duration(s.opts.Now().UnixMilli()-e.at) * time.Millisecond)
	s.nDelivered.Add(1)
	s.remember(s.memKey(m.Topic, m.Property(protocol.PropUniqKey)), delivered)
	return true
}

func (s *Service) look(phy int64) (*protocol.MessageExt, error) {
	rec, err := s.opts.Store.ReadRecord(phy)
	if err != nil {
		return nil, err
	}
	m, _, err := protocol.DecodeStored(rec, false)
	return m, err
}

// persist writes the checkpoint: done is the queue offset of the oldest
// pending timer (read from its record; if that fails the previous done,
// which is never wrong, only slower to restore from).
func (s *Service) persist() error {
	if !s.dirty && s.cp != nil {
		return nil
	}
	done := s.scanned
	if phy, ok := s.p.live.min(); ok {
		done = s.done
		if rec, err := s.opts.Store.ReadRecord(phy); err == nil {
			if v, err := protocol.ViewRecord(rec, false); err == nil {
				done = max(s.done, v.QueueOffset)
			}
		}
	}
	cp := &checkpoint{scan: s.scanned, done: done, pending: make([]int64, 0, s.p.len()+len(s.unconfirmed))}
	s.p.live.each(func(phy int64) { cp.pending = append(cp.pending, phy) })
	if len(s.unconfirmed) > 0 {
		// Delivered, but the copy may not survive a failover: pending in
		// the checkpoint (a restart from it delivers them again).
		for _, u := range s.unconfirmed {
			cp.pending = append(cp.pending, u.phy)
			cp.done = min(cp.done, u.qoff)
		}
		slices.Sort(cp.pending)
	}
	b := cp.encode()
	if err := writeCheckpoint(s.opts.CheckpointPath, b); err != nil {
		return err
	}
	s.cp, s.done, s.dirty = cp, cp.done, false
	s.encoded.Store(&b)
	s.publish()
	return nil
}

// confirm drops the unconfirmed deliveries whose copies are now below the
// replicated offset and reports whether it dropped any.
func (s *Service) confirm() bool {
	if len(s.unconfirmed) == 0 {
		return false
	}
	at := s.opts.Replicated()
	n := 0
	for n < len(s.unconfirmed) && s.unconfirmed[n].end <= at {
		n++ // copies are put in order, so their ends ascend
	}
	s.unconfirmed = s.unconfirmed[n:]
	return n > 0
}

// Stats describe the service for metrics.
type Stats struct {
	Pending     int64 // timers waiting (recalled ones excluded)
	ScanOffset  int64 // next timer-queue offset to scan
	DoneOffset  int64 // every timer below this queue offset is finished (as of the last checkpoint)
	MaxOffset   int64 // end of the timer queue
	Delivered   int64 // since start
	Recalled    int64 // since start
	Skipped     int64 // unreadable, malformed or lost timer records
	PutFailures int64 // failed delivery puts (each retried)
	Lateness    Lateness
}

// Stats returns a snapshot.
func (s *Service) Stats() Stats {
	return Stats{
		Pending: s.nPending.Load(), ScanOffset: s.nScanned.Load(), DoneOffset: s.nDone.Load(),
		MaxOffset: s.opts.Store.MaxOffset(Topic, 0), Delivered: s.nDelivered.Load(), Recalled: s.nRecalled.Load(),
		Skipped: s.nSkipped.Load(), PutFailures: s.nPutFailure.Load(), Lateness: s.late.snapshot(),
	}
}
