package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/broker/internal/clock"
	"github.com/tidemq/tide/broker/internal/jsonfile"
	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Topic is where delayed messages wait: queue level-1 holds the messages
// of delay level level.
const Topic = protocol.ScheduleTopic

// TagsCoder returns the store hook (store.WithTagsCoder for Topic) that
// makes a delayed message's consume-queue tags code its delivery time:
// store time plus the delay of its level (DELAY, else queueId+1), clamped
// to levels, which must be the store's messageDelayLevel. Service reads it
// back to know when a message is due.
func TagsCoder(levels []time.Duration) store.TagsCoder {
	return func(v *protocol.RecordView) (int64, bool) {
		if len(levels) == 0 {
			return 0, false
		}
		level := int(v.QueueID) + 1
		if d, ok := protocol.PropertyBytes(v.Properties, protocol.PropDelayLevel); ok {
			if n, err := strconv.Atoi(string(d)); err == nil && n > 0 {
				level = n
			}
		}
		level = max(1, min(level, len(levels)))
		return v.StoreTimestamp + levels[level-1].Milliseconds(), true
	}
}

// Sentinel errors.
var (
	// ErrInvalidOptions: Options.Validate failed.
	ErrInvalidOptions = errors.New("schedule: invalid options")
	// ErrBadRecord: a record in the schedule topic lacks REAL_TOPIC/REAL_QID.
	ErrBadRecord = errors.New("schedule: record is not a delayed message")
)

// Store is what the service needs from the message store (*store.Store
// implements it).
type Store interface {
	PutMessage(ctx context.Context, m *protocol.MessageExt) (store.PutResult, error)
	ReadQueue(topic string, queueID int32, offset int64, n int) ([]store.QueueUnit, error)
	LookMessage(commitLogOffset int64) (*protocol.MessageExt, error)
	MinOffset(topic string, queueID int32) int64
	MaxOffset(topic string, queueID int32) int64
}

// Options configure a Service. Zero durations take the defaults.
type Options struct {
	Store Store
	// Levels are the delays of levels 1..len(Levels); they must be the
	// store's messageDelayLevel (the store computes the due time in the
	// consume queue from its own table; the service waits for the later of
	// that and store time + Levels[level-1]).
	Levels []time.Duration
	// OffsetPath is config/delayOffset.json: per-level progress.
	OffsetPath string
	// FlushInterval is how often progress is persisted (default 10s,
	// RocketMQ's flushDelayOffsetInterval). Stop persists too.
	FlushInterval time.Duration
	// PollInterval bounds every wait: a level whose queue is empty re-checks
	// after it (default 100ms); Notify wakes it sooner.
	PollInterval time.Duration
	// RetryBackoff is the wait after a failed put before retrying the same
	// message (default 1s).
	RetryBackoff time.Duration
	// BatchSize is the number of consume-queue units read at once (default 64).
	BatchSize int
	Logger    *slog.Logger
	// Now is the wall clock (default clock.Now). Due times are compared in Unix ms.
	Now func() time.Time
	// Replicated, if set, returns the commit log offset below which
	// records survive a failover (controller mode: the confirm offset).
	// Progress, and so the persisted and the replicated progress, then
	// never passes a message whose delivered copy ends above it: a
	// replica promoted with that progress has every copy before it, and
	// delivers the ones after it again rather than losing them. Nil: every
	// stored record counts (progress is the delivery position).
	Replicated func() int64
}

func (o *Options) defaults() {
	if o.FlushInterval <= 0 {
		o.FlushInterval = 10 * time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 100 * time.Millisecond
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = time.Second
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 64
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = clock.Now
	}
}

// Validate reports missing or inconsistent options.
func (o *Options) Validate() error {
	switch {
	case o.Store == nil:
		return fmt.Errorf("%w: no store", ErrInvalidOptions)
	case len(o.Levels) == 0:
		return fmt.Errorf("%w: no delay levels", ErrInvalidOptions)
	case o.OffsetPath == "":
		return fmt.Errorf("%w: no offset path", ErrInvalidOptions)
	}
	for i, d := range o.Levels {
		if d < 0 {
			return fmt.Errorf("%w: level %d has negative delay %v", ErrInvalidOptions, i+1, d)
		}
	}
	return nil
}

// Divert turns a message with a DELAY level > 0 into its schedule-topic
// form: the level is clamped to levels (the number of configured levels)
// and written back to DELAY, the real topic and queue are saved in
// REAL_TOPIC/REAL_QID, and Topic/QueueID become SCHEDULE_TOPIC_XXXX /
// level-1. It reports whether m was changed. Half (prepared) and rollback
// transaction records are never diverted: their delay applies when they
// are committed. The caller stores m afterwards; the store sets the
// consume-queue tags code to store time + delay (TagsCoder).
func Divert(m *protocol.MessageExt, levels int) bool {
	if tx := protocol.TxType(m.SysFlag); tx == protocol.SysFlagTxPrepared || tx == protocol.SysFlagTxRollback {
		return false
	}
	lv := m.Property(protocol.PropDelayLevel)
	if lv == "" { // most messages: no parse (and no error to allocate)
		return false
	}
	level, err := strconv.Atoi(lv)
	if err != nil || level <= 0 || levels <= 0 {
		return false
	}
	level = min(level, levels)
	m.SetProperty(protocol.PropDelayLevel, strconv.Itoa(level))
	m.SetProperty(protocol.PropRealTopic, m.Topic)
	m.SetProperty(protocol.PropRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.Topic = Topic
	m.QueueID = int32(level - 1)
	return true
}

// Restore builds the message to deliver from a stored schedule-topic
// message: topic and queue from REAL_TOPIC/REAL_QID, DELAY and REAL_*
// removed, everything else (body, flag, other properties, sysFlag, born
// time and host, store host, reconsume times, prepared transaction
// offset) kept. Offsets and store time are left for the store to assign.
func Restore(m *protocol.MessageExt) (*protocol.MessageExt, error) {
	topic := m.Property(protocol.PropRealTopic)
	qid, err := strconv.ParseInt(m.Property(protocol.PropRealQueueID), 10, 32)
	if topic == "" || err != nil || qid < 0 {
		return nil, fmt.Errorf("%w: REAL_TOPIC %q REAL_QID %q", ErrBadRecord, topic, m.Property(protocol.PropRealQueueID))
	}
	props := make(map[string]string, len(m.Properties))
	for k, v := range m.Properties {
		switch k {
		case protocol.PropDelayLevel, protocol.PropRealTopic, protocol.PropRealQueueID:
		default:
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

// offsetFile is config/delayOffset.json, RocketMQ's shape: level -> the
// next queue offset of SCHEDULE_TOPIC_XXXX queue level-1 to deliver.
type offsetFile struct {
	OffsetTable map[string]int64 `json:"offsetTable"`
}

// level is the state of one delay level.
type level struct {
	n      int // 1-based
	delay  time.Duration
	offset atomic.Int64 // next queue offset to deliver
	wake   chan struct{}

	delivered   atomic.Int64
	skipped     atomic.Int64
	lastLate    atomic.Int64 // ns
	maxLate     atomic.Int64 // ns
	putFailures atomic.Int64

	// With Options.Replicated: the positions delivered to whose copies may
	// not be replicated yet, in delivery order (their ends never
	// decrease), and the progress known to be replicated.
	mu      sync.Mutex
	marks   []mark
	safe    int64
	lastEnd int64
}

// mark is one step of a level's progress: next is the queue offset to
// deliver after it, end the commit log offset where the copy delivered in
// it (or in an earlier step) ends.
type mark struct{ next, end int64 }

// maxMarks bounds a level's marks; beyond it the older half is dropped,
// which only holds the replicated progress back until a later mark is
// replicated (a duplicate at worst, never a loss).
const maxMarks = 1 << 16

// step records that l moved to next after a copy ending at end (0: no
// copy was put, e.g. a skipped record).
func (l *level) step(next, end int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastEnd = max(l.lastEnd, end)
	if len(l.marks) >= maxMarks {
		l.marks = append(l.marks[:0], l.marks[len(l.marks)/2:]...)
	}
	l.marks = append(l.marks, mark{next: next, end: l.lastEnd})
}

// replicated returns l's progress as far as every copy before it ends at
// or below bound, and forgets the marks that are now below it.
func (l *level) replicated(bound int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := 0
	for i < len(l.marks) && l.marks[i].end <= bound {
		l.safe = l.marks[i].next
		i++
	}
	l.marks = append(l.marks[:0], l.marks[i:]...)
	return l.safe
}

// reset starts l's progress at off, with nothing delivered yet.
func (l *level) reset(off int64) {
	l.offset.Store(off)
	l.mu.Lock()
	l.marks, l.safe, l.lastEnd = nil, off, 0
	l.mu.Unlock()
}

// Service delivers delayed messages when they are due: one goroutine per
// level walks its queue in order (all messages of a level have the same
// delay, so the queue is in due order). All methods are safe for
// concurrent use.
type Service struct {
	opts   Options
	log    *slog.Logger
	levels []*level

	persistMu sync.Mutex // serialises saves of OffsetPath
	saved     map[string]int64

	startOnce sync.Once
	stopOnce  sync.Once
	stop      chan struct{}
	wg        sync.WaitGroup
}

// New validates opts and loads the persisted progress (a missing file
// means every level starts at offset 0).
func New(opts Options) (*Service, error) {
	opts.defaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Service{opts: opts, log: opts.Logger.With("component", "schedule"), stop: make(chan struct{})}
	var f offsetFile
	if _, err := jsonfile.Load(opts.OffsetPath, &f); err != nil {
		return nil, fmt.Errorf("schedule: load progress: %w", err)
	}
	for i, d := range opts.Levels {
		l := &level{n: i + 1, delay: d, wake: make(chan struct{}, 1)}
		l.reset(max(0, f.OffsetTable[strconv.Itoa(i+1)]))
		s.levels = append(s.levels, l)
	}
	return s, nil
}

// Reload reads the persisted progress again (a slave's copy of its
// master's, refreshed by the metadata sync) so that a replica promoted to
// master resumes where the old master was. It only has an effect before
// Start.
func (s *Service) Reload() error {
	var f offsetFile
	if _, err := jsonfile.Load(s.opts.OffsetPath, &f); err != nil {
		return fmt.Errorf("schedule: load progress: %w", err)
	}
	for _, l := range s.levels {
		l.reset(max(0, f.OffsetTable[strconv.Itoa(l.n)]))
	}
	return nil
}

// Start launches one goroutine per level and the periodic persister.
// Offsets are first clamped into the queues' current [min, max] range
// (retention may have removed the start; an ASYNC_FLUSH crash may have
// lost the end). Calling Start twice has no further effect.
func (s *Service) Start() {
	s.startOnce.Do(func() {
		for _, l := range s.levels {
			q := int32(l.n - 1)
			off := l.offset.Load()
			if lo := s.opts.Store.MinOffset(Topic, q); off < lo {
				s.log.Warn("delay level progress below the queue minimum, skipping removed messages", "level", l.n, "offset", off, "min", lo)
				off = lo
			}
			if hi := s.opts.Store.MaxOffset(Topic, q); off > hi {
				s.log.Warn("delay level progress beyond the queue end, rewinding", "level", l.n, "offset", off, "max", hi)
				off = hi
			}
			l.reset(off)
			s.wg.Add(1)
			go s.run(l)
		}
		s.wg.Add(1)
		go s.flushLoop()
	})
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

// Stop stops the level goroutines (a put in progress finishes first),
// then persists progress. It returns ctx's error if the goroutines do not
// finish in time (progress is then persisted as far as known).
func (s *Service) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stop) })
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	return errors.Join(err, s.Persist())
}

// Notify wakes the goroutine of level (1-based) early, e.g. from the
// store's dispatch listener when SCHEDULE_TOPIC_XXXX queue level-1 got a
// unit. It never blocks; an unknown level is ignored.
func (s *Service) Notify(level int) {
	if level < 1 || level > len(s.levels) {
		return
	}
	select {
	case s.levels[level-1].wake <- struct{}{}:
	default:
	}
}

// Progress returns each level's progress (level 1 first): the next queue
// offset to deliver, held back with Options.Replicated to the first
// delivery whose copy may not survive a failover. It is what Persist
// writes and what a replica should copy.
func (s *Service) Progress() []int64 {
	out := make([]int64, len(s.levels))
	if s.opts.Replicated == nil {
		for i, l := range s.levels {
			out[i] = l.offset.Load()
		}
		return out
	}
	bound := s.opts.Replicated()
	for i, l := range s.levels {
		out[i] = l.replicated(bound)
	}
	return out
}

// Persist writes the progress (Progress) to OffsetPath if it changed.
func (s *Service) Persist() error {
	s.persistMu.Lock()
	defer s.persistMu.Unlock()
	f := offsetFile{OffsetTable: map[string]int64{}}
	changed := s.saved == nil
	progress := s.Progress()
	for i, l := range s.levels {
		k := strconv.Itoa(l.n)
		f.OffsetTable[k] = progress[i]
		if s.saved[k] != f.OffsetTable[k] {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := jsonfile.Save(s.opts.OffsetPath, f); err != nil {
		return fmt.Errorf("schedule: persist progress: %w", err)
	}
	s.saved = f.OffsetTable
	return nil
}

func (s *Service) flushLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.Persist(); err != nil {
				s.log.Error("persist delay progress", "err", err)
			}
		}
	}
}

// sleep waits for d (capped at PollInterval), a Notify of l, or Stop; it
// reports false on Stop.
func (s *Service) sleep(l *level, d time.Duration) bool {
	d = min(max(d, time.Millisecond), s.opts.PollInterval)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.stop:
		return false
	case <-l.wake:
	case <-t.C:
	}
	return true
}

func (s *Service) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// run walks level l's queue. Invariant: l.offset only moves past a unit
// after its message was put (or found unreadable), so a crash redelivers
// at most the messages between the last persisted offset and the crash.
func (s *Service) run(l *level) {
	defer s.wg.Done()
	q := int32(l.n - 1)
	for !s.stopping() {
		off := l.offset.Load()
		units, err := s.opts.Store.ReadQueue(Topic, q, off, s.opts.BatchSize)
		if err != nil || len(units) == 0 {
			if lo := s.opts.Store.MinOffset(Topic, q); off < lo {
				s.log.Warn("delayed messages removed by retention before delivery", "level", l.n, "from", off, "to", lo)
				l.skipped.Add(lo - off)
				l.offset.Store(lo)
				continue
			}
			if !s.sleep(l, s.opts.PollInterval) {
				return
			}
			continue
		}
		for _, u := range units {
			wait, end, ok := s.deliver(l, off, u)
			if !ok {
				return
			}
			if wait > 0 {
				if !s.sleep(l, wait) {
					return
				}
				break // re-read from the same offset
			}
			off++
			if s.opts.Replicated != nil {
				l.step(off, end)
			}
			l.offset.Store(off)
		}
	}
}

// deliver handles the unit at queue offset off: it returns how long to
// wait when the message is not due yet (0 once the unit is done), where
// the delivered copy ends in the commit log (0 if none was put), and
// false when the service is stopping with the unit not done.
func (s *Service) deliver(l *level, off int64, u store.QueueUnit) (time.Duration, int64, bool) {
	if u.Size <= 0 {
		return 0, 0, true // hole
	}
	now := s.opts.Now().UnixMilli()
	if u.TagsCode > now {
		return time.Duration(u.TagsCode-now) * time.Millisecond, 0, true
	}
	m, err := s.opts.Store.LookMessage(u.Offset)
	if err != nil {
		l.skipped.Add(1)
		s.log.Error("delayed message unreadable, skipped", "level", l.n, "queueOffset", off, "commitLogOffset", u.Offset, "err", err)
		return 0, 0, true
	}
	// Never early, even if the store's level table differs from ours.
	due := max(u.TagsCode, m.StoreTimestamp+l.delay.Milliseconds())
	if due > now {
		return time.Duration(due-now) * time.Millisecond, 0, true
	}
	out, err := Restore(m)
	if err != nil {
		l.skipped.Add(1)
		s.log.Error("delayed message skipped", "level", l.n, "queueOffset", off, "commitLogOffset", u.Offset, "err", err)
		return 0, 0, true
	}
	var end int64
	for {
		// Not cancelled by Stop: a put that may have been written must
		// report back, or the offset would lag what was delivered.
		r, err := s.opts.Store.PutMessage(context.Background(), out)
		if err == nil {
			end = r.CommitLogOffset + int64(r.WroteBytes)
			break
		}
		l.putFailures.Add(1)
		s.log.Error("deliver delayed message, will retry", "level", l.n, "queueOffset", off, "topic", out.Topic, "err", err)
		t := time.NewTimer(s.opts.RetryBackoff)
		select {
		case <-s.stop:
			t.Stop()
			return 0, 0, false
		case <-t.C:
		}
	}
	late := time.Duration(s.opts.Now().UnixMilli()-due) * time.Millisecond
	l.delivered.Add(1)
	l.lastLate.Store(int64(late))
	for {
		cur := l.maxLate.Load()
		if int64(late) <= cur || l.maxLate.CompareAndSwap(cur, int64(late)) {
			break
		}
	}
	return 0, end, true
}

// LevelStats describes one delay level for metrics.
type LevelStats struct {
	Level     int
	Delay     time.Duration
	Offset    int64 // next queue offset to deliver
	MaxOffset int64 // end of the level's queue
	Pending   int64 // MaxOffset - Offset: stored, not yet delivered
	Delivered int64 // since New
	Skipped   int64 // unreadable (removed by retention) or malformed, since New
	// PutFailures counts failed delivery puts (each is retried).
	PutFailures int64
	// LastLateness and MaxLateness: delivery store time minus due time.
	LastLateness time.Duration
	MaxLateness  time.Duration
}

// Stats returns one entry per level, level 1 first.
func (s *Service) Stats() []LevelStats {
	out := make([]LevelStats, len(s.levels))
	for i, l := range s.levels {
		off := l.offset.Load()
		hi := s.opts.Store.MaxOffset(Topic, int32(i))
		out[i] = LevelStats{
			Level: l.n, Delay: l.delay, Offset: off, MaxOffset: hi, Pending: max(0, hi-off),
			Delivered: l.delivered.Load(), Skipped: l.skipped.Load(), PutFailures: l.putFailures.Load(),
			LastLateness: time.Duration(l.lastLate.Load()), MaxLateness: time.Duration(l.maxLate.Load()),
		}
	}
	return out
}
