// Package transaction implements RocketMQ's transactional (half) messages
// in the broker: a prepared message is parked in RMQ_SYS_TRANS_HALF_TOPIC,
// invisible to consumers, until its producer commits or rolls it back with
// END_TRANSACTION, or until a check-back (CHECK_TRANSACTION_STATE sent to a
// live producer of its group) resolves it.
//
// Guarantee: a message becomes visible if and only if a COMMIT decision was
// taken for it, and at most one visible copy is produced per half message.
// The first decision wins; a later, conflicting or repeated decision is
// ignored and logged.
//
// Durability: every decision is first appended to RMQ_SYS_TRANS_OP_HALF_TOPIC
// (the op record, tag "d", body = the half queue offset, property
// TIDE_TX_DECISION), then applied. A COMMIT record also names the topic
// the committed copy is stored in (property TIDE_TX_COMMIT_TOPIC): the
// real topic, or the timer or delay-level topic the Divert step chose; the
// copy is built and diverted before the record is written, so the record
// is the one owner of that fact. On start the service rebuilds its
// decisions from the op queue, re-applies a COMMIT whose committed message
// is missing from the recorded topic (a crash between the two appends;
// found through the index by UNIQ_KEY and preparedTransactionOffset), and
// rebuilds the pending set from the half queue. Check counts and the scan progress are kept in a small
// JSON state file.
//
// Timing: a half message is first checked transactionTimeOut after the
// broker received it (or CHECK_IMMUNITY_TIME_IN_SECONDS when the producer
// set it), then every transactionCheckInterval (with ±10% jitter), at most
// transactionCheckMax times; then it is parked: a copy goes to the visible
// topic TRANS_CHECK_MAX_TIME_TOPIC, an op record PARKED is written, and no
// more checks are sent until an operator resumes checks or forces a
// decision. A producer's END_TRANSACTION still decides a parked message.
// When no producer of the group is connected nothing is sent and the
// message is re-examined with exponential backoff (capped at four check
// intervals), so an outage causes no check storm; checks per producer group
// are also rate limited.
package transaction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/netip"
	"sort"
	"strconv"
	"sync"
	"time"

	wallclock "github.com/tidemq/tide/broker/internal/clock"
	"github.com/tidemq/tide/broker/internal/jsonfile"
	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Topics of the transaction machinery.
const (
	HalfTopic        = protocol.TransHalfTopic
	OpTopic          = protocol.TransOpHalfTopic
	CheckMaxTopic    = protocol.TransCheckMaxTimeTopic
	opTag            = "d"
	propDecision     = "TIDE_TX_DECISION"
	propCommitTopic  = "TIDE_TX_COMMIT_TOPIC"
	propHalfQueueOff = protocol.PropTranPreparedQueueOffset
)

// Decision is the state of a half message.
type Decision string

// Decisions. Parked and Resumed are operator-visible states, not final.
const (
	Pending  Decision = ""
	Commit   Decision = "COMMIT"
	Rollback Decision = "ROLLBACK"
	Parked   Decision = "PARKED"
	Resumed  Decision = "RESUMED"
)

// Errors.
var (
	// ErrNotFound: no half message matches the END_TRANSACTION header.
	ErrNotFound = errors.New("transaction: half message not found")
	// ErrMismatch: the half message exists but the producer group, queue
	// offset or commit log offset of the request do not match it.
	ErrMismatch = errors.New("transaction: request does not match the half message")
	// ErrNoProducer: no live producer of the group to check with.
	ErrNoProducer = errors.New("transaction: no live producer of the group")
	// ErrBadDecision: the decision value is not commit or rollback.
	ErrBadDecision = errors.New("transaction: bad decision")
	// ErrNotReady: the service has not finished recovering its state
	// after a start (or was stopped first); no decision was taken.
	ErrNotReady = errors.New("transaction: state still being recovered")
)

// Store is what the service needs from the message store.
type Store interface {
	PutMessage(ctx context.Context, m *protocol.MessageExt) (store.PutResult, error)
	LookMessage(commitLogOffset int64) (*protocol.MessageExt, error)
	ReadQueue(topic string, queueID int32, offset int64, n int) ([]store.QueueUnit, error)
	MinOffset(topic string, queueID int32) int64
	MaxOffset(topic string, queueID int32) int64
	QueryMessages(topic, key string, maxNum int, beginMs, endMs int64) store.QueryResult
	MaxPhyOffset() int64
	WaitDispatched(ctx context.Context, phyOffset int64) error
}

// Checker sends CHECK_TRANSACTION_STATE for a half message to one live
// producer of group. It returns ErrNoProducer when none is connected.
type Checker func(ctx context.Context, group string, req *protocol.Command) error

// Options configures the service.
type Options struct {
	Store     Store
	Check     Checker
	StatePath string // config/transaction.json
	StoreHost netip.AddrPort
	// Timeout is transactionTimeOut: the age at which a half message is
	// first checked. Interval is transactionCheckInterval. MaxChecks is
	// transactionCheckMax.
	Timeout   time.Duration
	Interval  time.Duration
	MaxChecks int
	// MaxChecksPerSecond bounds the checks sent per producer group per
	// second (default 200).
	MaxChecksPerSecond int
	// Divert, if set, is applied to a committed message before it is
	// stored (delay levels and timers of transactional messages). The topic
	// it leaves in the message is where the committed copy goes; the
	// service records it in the COMMIT op record and looks for the copy
	// there after a restart. Divert must not depend on anything but the
	// message and the current time.
	Divert func(*protocol.MessageExt)
	// Created, if set, is called for a system topic the service writes to
	// for the first time (the broker creates and registers it).
	Created func(topic string)
	// BeforeRecover, if set, is called on the service goroutine before
	// each recovery attempt (tests stall recovery with it).
	BeforeRecover func()
	Logger        *slog.Logger
	Now           func() time.Time
}

type pending struct {
	queueOffset int64
	phyOffset   int64
	group       string
	uniqKey     string
	storeTime   time.Time
	checks      int
	nextCheck   time.Time
	misses      int // rounds without a live producer
	parked      bool
}

// Stats are counters for metrics.
type Stats struct {
	Pending, Parked                   int
	ChecksSent, Commits, Rollbacks    int64
	Duplicates, Conflicts, NoProducer int64
}

// Service is the transaction manager. It is safe for concurrent use.
type Service struct {
	o   Options
	log *slog.Logger

	mu      sync.Mutex
	decided map[int64]Decision // half queue offset -> final decision (Commit/Rollback)
	pend    map[int64]*pending
	// unapplied: COMMITs whose decision is written but whose committed
	// copy could not be stored (disk full, shutting down): half queue
	// offset -> commit topic, re-applied by each round until stored.
	unapplied map[int64]string
	scanned   int64 // half queue offset scanned up to (exclusive)
	opScanned int64
	stats     Stats
	tokens    map[string]*bucket

	endMu sync.Mutex // serialises decisions so that the first one wins

	loaded state         // the state file as read by New, applied by recover
	ready  chan struct{} // closed once recover has succeeded

	stop    chan struct{}
	done    chan struct{}
	started bool
}

type state struct {
	Checks map[string]int `json:"checks"` // half queue offset -> checks sent
}

// New builds the service and reads its state file. It does not read the
// store: Start recovers the decisions and pending half messages from the
// op and half queues in the background, so that a broker can take
// writes (half messages included) while it runs; End, Resume and Force
// wait for it (Recovered, ErrNotReady).
func New(o Options) (*Service, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = wallclock.Now
	}
	if o.MaxChecksPerSecond <= 0 {
		o.MaxChecksPerSecond = 200
	}
	if o.Timeout <= 0 || o.Interval <= 0 || o.MaxChecks <= 0 {
		return nil, errors.New("transaction: timeout, interval and max checks must be positive")
	}
	s := &Service{o: o, log: o.Logger.With("component", "transaction"), decided: map[int64]Decision{},
		pend: map[int64]*pending{}, unapplied: map[int64]string{}, tokens: map[string]*bucket{}, ready: make(chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{})}
	if _, err := jsonfile.Load(o.StatePath, &s.loaded); err != nil {
		return nil, err
	}
	return s, nil
}

// Recovered reports whether the service has recovered its state (Start
// recovers it in the background).
func (s *Service) Recovered() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

// await blocks until the service has recovered, ctx ends (ErrNotReady) or
// the service stops (ErrNotReady). A decision taken before recovery could
// not tell whether the transaction was decided before the restart.
func (s *Service) await(ctx context.Context) error {
	select {
	case <-s.ready:
		return nil
	default:
	}
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrNotReady, ctx.Err())
	case <-s.stop:
		return fmt.Errorf("%w: service stopped", ErrNotReady)
	}
}

// recoverUntilDone runs recover until it succeeds (closing ready) or the
// service stops; it reports whether it succeeded.
func (s *Service) recoverUntilDone() bool {
	for {
		if s.o.BeforeRecover != nil {
			s.o.BeforeRecover()
		}
		start := time.Now()
		err := s.recover(s.loaded)
		if err == nil {
			s.mu.Lock()
			decided, pend := len(s.decided), len(s.pend)
			s.mu.Unlock()
			s.log.Info("transactions recovered", "decided", decided, "pending", pend, "took", time.Since(start).Round(time.Millisecond))
			close(s.ready)
			return true
		}
		s.log.Error("transaction recovery failed; decisions wait, retrying", "err", err)
		select {
		case <-s.stop:
			return false
		case <-time.After(time.Second):
		}
	}
}

// recover replays the op queue, re-applies lost commits, and loads the
// undecided half messages. It runs on the service goroutine before the
// check loop, concurrently with Added (half messages stored meanwhile) but
// never with End, Resume or Force, which wait for it; a retry starts over.
func (s *Service) recover(st state) error {
	// Consume queues and the index are built asynchronously: recovery
	// reads them, so wait until they cover the whole commit log.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := s.o.Store.WaitDispatched(ctx, s.o.Store.MaxPhyOffset()); err != nil {
		return fmt.Errorf("transaction: wait for dispatch: %w", err)
	}
	s.opScanned = 0
	decided := map[int64]Decision{}
	parked := map[int64]bool{}
	commits := map[int64]string{} // half queue offset -> recorded commit topic ("" for old records)
	if err := s.readOps(func(half int64, d Decision, commitTopic string) {
		switch d {
		case Commit, Rollback:
			if _, ok := decided[half]; !ok {
				decided[half] = d
				if d == Commit {
					commits[half] = commitTopic
				}
			}
		case Parked:
			parked[half] = true
		case Resumed:
			delete(parked, half)
		}
	}); err != nil {
		return err
	}
	s.mu.Lock()
	s.decided = decided
	for off := range decided {
		delete(s.pend, off)
	}
	s.mu.Unlock()
	s.scanned = s.o.Store.MinOffset(HalfTopic, 0)
	if err := s.scanHalf(); err != nil {
		return err
	}
	s.mu.Lock()
	for off, p := range s.pend {
		if parked[off] {
			p.parked = true
		}
		if n, ok := st.Checks[strconv.FormatInt(off, 10)]; ok {
			p.checks = n
		}
	}
	s.mu.Unlock()
	// Re-apply commits whose visible message is missing (crash between the
	// op record and the committed message).
	for half, topic := range commits {
		if err := s.ensureCommitted(half, topic); err != nil {
			s.log.Error("re-apply commit after restart", "halfQueueOffset", half, "err", err)
		}
	}
	return nil
}

// readOps calls fn for every op record not yet read, with the commit
// topic a COMMIT record names.
func (s *Service) readOps(fn func(half int64, d Decision, commitTopic string)) error {
	if s.opScanned < s.o.Store.MinOffset(OpTopic, 0) {
		s.opScanned = s.o.Store.MinOffset(OpTopic, 0)
	}
	max := s.o.Store.MaxOffset(OpTopic, 0)
	for s.opScanned < max {
		units, err := s.o.Store.ReadQueue(OpTopic, 0, s.opScanned, 256)
		if err != nil {
			return fmt.Errorf("transaction: read op queue: %w", err)
		}
		if len(units) == 0 {
			break
		}
		for _, u := range units {
			s.opScanned++
			if u.Size == 0 {
				continue
			}
			m, err := s.o.Store.LookMessage(u.Offset)
			if err != nil {
				s.log.Warn("unreadable op record", "offset", u.Offset, "err", err)
				continue
			}
			half, err := strconv.ParseInt(string(m.Body), 10, 64)
			if err != nil {
				continue
			}
			d := Decision(m.Property(propDecision))
			if d == "" {
				d = Rollback // an op record without a decision (RocketMQ's form): resolved
			}
			fn(half, d, m.Property(propCommitTopic))
		}
	}
	return nil
}

// scanHalf loads half messages appended since the last scan. It takes
// s.mu for each map access only (Added runs concurrently); the scan
// offset is the service goroutine's.
func (s *Service) scanHalf() error {
	max := s.o.Store.MaxOffset(HalfTopic, 0)
	for s.scanned < max {
		units, err := s.o.Store.ReadQueue(HalfTopic, 0, s.scanned, 256)
		if err != nil {
			return fmt.Errorf("transaction: read half queue: %w", err)
		}
		if len(units) == 0 {
			break
		}
		for _, u := range units {
			off := s.scanned
			s.scanned++
			if u.Size == 0 || s.known(off) {
				continue
			}
			m, err := s.o.Store.LookMessage(u.Offset)
			if err != nil {
				s.log.Warn("unreadable half message", "queueOffset", off, "err", err)
				continue
			}
			s.mu.Lock()
			if _, ok := s.decided[off]; !ok && s.pend[off] == nil {
				s.pend[off] = s.newPending(off, m)
			}
			s.mu.Unlock()
		}
	}
	return nil
}

// known reports whether the half message at queue offset off is decided
// or already pending.
func (s *Service) known(off int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, decided := s.decided[off]
	return decided || s.pend[off] != nil
}

// newPending builds the pending entry of a half message.
func (s *Service) newPending(queueOffset int64, m *protocol.MessageExt) *pending {
	st := time.UnixMilli(m.StoreTimestamp)
	first := s.o.Timeout
	if v := m.Property(protocol.PropCheckImmunityTimeSeconds); v != "" {
		if sec, err := strconv.Atoi(v); err == nil && sec > 0 {
			first = time.Duration(sec) * time.Second
		}
	}
	return &pending{queueOffset: queueOffset, phyOffset: m.CommitLogOffset, group: m.Property(protocol.PropProducerGroup),
		uniqKey: m.Property(protocol.PropUniqKey), storeTime: st, nextCheck: st.Add(first)}
}

// IsHalf reports whether a send is a prepared transactional message.
func IsHalf(sysFlag int32, props map[string]string) bool {
	return protocol.TxType(sysFlag) == protocol.SysFlagTxPrepared || props[protocol.PropTransactionPrepared] == "true"
}

// Prepare rewrites a prepared message for storage in the half topic: its
// real topic and queue are kept in properties and the transaction bits are
// cleared so the half record gets a queue offset (as RocketMQ does).
func Prepare(m *protocol.MessageExt) {
	m.SetProperty(protocol.PropRealTopic, m.Topic)
	m.SetProperty(protocol.PropRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.SetProperty(protocol.PropTransactionPrepared, "true")
	m.SysFlag = m.SysFlag &^ protocol.SysFlagTxMask
	m.Topic, m.QueueID = HalfTopic, 0
}

// Added registers a half message right after it was stored, so it is
// checked even before the next scan.
func (s *Service) Added(m *protocol.MessageExt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.decided[m.QueueOffset]; ok {
		return
	}
	if _, ok := s.pend[m.QueueOffset]; !ok {
		s.pend[m.QueueOffset] = s.newPending(m.QueueOffset, m)
	}
}

// EndRequest is a decision for a half message.
type EndRequest struct {
	ProducerGroup        string
	TranStateTableOffset int64 // half queue offset
	CommitLogOffset      int64 // half record offset
	Decision             Decision
	FromCheck            bool
	Operator             string // set for forced decisions (audit)
}

// Outcome tells what End did.
type Outcome int

// Outcomes of End.
const (
	Applied   Outcome = iota // the decision was taken
	Duplicate                // the same decision was already taken: nothing done
	Conflict                 // another decision was taken first: ignored
)

// End applies a COMMIT or ROLLBACK decision. The first decision for a half
// message wins; End never produces a second visible copy.
func (s *Service) End(ctx context.Context, r EndRequest) (Outcome, error) {
	if r.Decision != Commit && r.Decision != Rollback {
		return 0, fmt.Errorf("%w: %q", ErrBadDecision, r.Decision)
	}
	if err := s.await(ctx); err != nil {
		return 0, err
	}
	half, err := s.o.Store.LookMessage(r.CommitLogOffset)
	if err != nil {
		return 0, fmt.Errorf("%w: commit log offset %d: %v", ErrNotFound, r.CommitLogOffset, err)
	}
	if half.Topic != HalfTopic || half.QueueOffset != r.TranStateTableOffset ||
		(r.ProducerGroup != "" && half.Property(protocol.PropProducerGroup) != r.ProducerGroup) {
		return 0, fmt.Errorf("%w: topic %s, queue offset %d (request %d), group %q (request %q)", ErrMismatch,
			half.Topic, half.QueueOffset, r.TranStateTableOffset, half.Property(protocol.PropProducerGroup), r.ProducerGroup)
	}
	s.endMu.Lock()
	defer s.endMu.Unlock()
	s.mu.Lock()
	prev, done := s.decided[half.QueueOffset]
	s.mu.Unlock()
	if done {
		if prev == r.Decision {
			s.count(func(st *Stats) { st.Duplicates++ })
			s.log.Info("duplicate transaction decision ignored", "decision", r.Decision, "halfQueueOffset", half.QueueOffset, "msgId", half.Property(protocol.PropUniqKey), "fromCheck", r.FromCheck)
			return Duplicate, nil
		}
		s.count(func(st *Stats) { st.Conflicts++ })
		s.log.Warn("conflicting transaction decision ignored: the first decision stands", "first", prev, "late", r.Decision,
			"halfQueueOffset", half.QueueOffset, "msgId", half.Property(protocol.PropUniqKey), "producerGroup", r.ProducerGroup, "fromCheck", r.FromCheck)
		return Conflict, nil
	}
	// Decision first (durable, with where the committed copy goes), then
	// its effect: a crash in between is repaired by recover.
	var visible *protocol.MessageExt
	var commitTopic string
	if r.Decision == Commit {
		visible = s.committedCopy(half)
		commitTopic = visible.Topic
	}
	if err := s.writeOp(ctx, half.QueueOffset, r.Decision, commitTopic); err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.decided[half.QueueOffset] = r.Decision
	delete(s.pend, half.QueueOffset)
	s.mu.Unlock()
	if r.Decision == Commit {
		if _, err := s.o.Store.PutMessage(ctx, visible); err != nil {
			// The decision stands (its op record is written) and no
			// later check asks again: store the copy in the next rounds,
			// not only at the next recovery (chaos finding 9: a commit
			// decided while the disk was full stayed invisible until
			// the broker restarted).
			s.mu.Lock()
			s.unapplied[half.QueueOffset] = commitTopic
			s.mu.Unlock()
			s.log.Warn("committed message not stored; retried every round until it is", "halfQueueOffset", half.QueueOffset,
				"msgId", half.Property(protocol.PropUniqKey), "err", err)
			return 0, fmt.Errorf("transaction: store committed message: %w", err)
		}
		s.count(func(st *Stats) { st.Commits++ })
	} else {
		s.count(func(st *Stats) { st.Rollbacks++ })
	}
	lvl := slog.LevelDebug
	if r.Operator != "" {
		lvl = slog.LevelWarn
	}
	s.log.Log(ctx, lvl, "transaction decided", "decision", r.Decision, "halfQueueOffset", half.QueueOffset,
		"msgId", half.Property(protocol.PropUniqKey), "topic", half.Property(protocol.PropRealTopic), "fromCheck", r.FromCheck, "operator", r.Operator)
	return Applied, nil
}

// writeOp appends an op record; commitTopic (COMMIT only) is the topic the
// committed copy is stored in.
func (s *Service) writeOp(ctx context.Context, halfQueueOffset int64, d Decision, commitTopic string) error {
	op := &protocol.MessageExt{StoreHost: s.o.StoreHost, BornHost: s.o.StoreHost, BornTimestamp: s.o.Now().UnixMilli()}
	op.Topic, op.QueueID = OpTopic, 0
	op.Body = []byte(strconv.FormatInt(halfQueueOffset, 10))
	op.Properties = map[string]string{protocol.PropTags: opTag, propDecision: string(d)}
	if commitTopic != "" {
		op.Properties[propCommitTopic] = commitTopic
	}
	if _, err := s.o.Store.PutMessage(ctx, op); err != nil {
		return fmt.Errorf("transaction: write op record: %w", err)
	}
	return nil
}

// committedCopy builds the visible message of a half message, diverted:
// its topic is where it is to be stored.
func (s *Service) committedCopy(half *protocol.MessageExt) *protocol.MessageExt {
	m := &protocol.MessageExt{
		SysFlag:                   half.SysFlag&^protocol.SysFlagTxMask | protocol.SysFlagTxCommit,
		BornTimestamp:             half.BornTimestamp,
		BornHost:                  half.BornHost,
		StoreHost:                 s.o.StoreHost,
		ReconsumeTimes:            half.ReconsumeTimes,
		PreparedTransactionOffset: half.CommitLogOffset,
	}
	m.Body, m.Flag = half.Body, half.Flag
	m.Properties = make(map[string]string, len(half.Properties))
	for k, v := range half.Properties {
		m.Properties[k] = v
	}
	m.Topic = half.Property(protocol.PropRealTopic)
	qid, _ := strconv.Atoi(half.Property(protocol.PropRealQueueID))
	m.QueueID = int32(qid)
	delete(m.Properties, protocol.PropRealTopic)
	delete(m.Properties, protocol.PropRealQueueID)
	delete(m.Properties, protocol.PropTransactionPrepared)
	delete(m.Properties, protocol.PropTransactionCheckTimes)
	m.Properties[propHalfQueueOff] = strconv.FormatInt(half.QueueOffset, 10)
	if s.o.Divert != nil {
		s.o.Divert(m)
	}
	return m
}

// ensureCommitted re-applies a COMMIT whose visible message is missing
// from commitTopic, the topic the op record names. Op records written
// before the topic was recorded name none: then the copy is looked for
// in every topic a commit can go to.
func (s *Service) ensureCommitted(halfQueueOffset int64, commitTopic string) error {
	units, err := s.o.Store.ReadQueue(HalfTopic, 0, halfQueueOffset, 1)
	if err != nil || len(units) == 0 || units[0].Size == 0 {
		return err // half record gone (retention): nothing to repair
	}
	half, err := s.o.Store.LookMessage(units[0].Offset)
	if err != nil {
		return err
	}
	key := half.Property(protocol.PropUniqKey)
	if key == "" {
		return nil // cannot tell; do not risk a duplicate
	}
	topics := []string{commitTopic}
	if commitTopic == "" {
		topics = []string{half.Property(protocol.PropRealTopic), protocol.ScheduleTopic, protocol.TimerTopic}
	}
	for _, topic := range topics {
		res := s.o.Store.QueryMessages(topic, key, 32, half.StoreTimestamp-1, math.MaxInt64)
		found, _ := protocol.DecodeMessages(res.Data)
		for _, m := range found {
			if m.PreparedTransactionOffset == half.CommitLogOffset {
				return nil
			}
		}
	}
	s.log.Warn("re-applying a commit lost by a crash", "halfQueueOffset", halfQueueOffset, "msgId", key, "topics", topics)
	if _, err := s.o.Store.PutMessage(context.Background(), s.committedCopy(half)); err != nil {
		return fmt.Errorf("transaction: store committed message: %w", err)
	}
	return nil
}

// Start recovers the state in the background (see New), then runs the
// check loop until Stop.
func (s *Service) Start() {
	tick := s.o.Interval / 4
	if t := s.o.Timeout / 4; t < tick {
		tick = t
	}
	tick = max(tick, 10*time.Millisecond)
	tick = min(tick, time.Second)
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	go s.loop(tick)
}

func (s *Service) loop(tick time.Duration) {
	defer close(s.done)
	if !s.recoverUntilDone() {
		return
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	persist := time.NewTicker(5 * time.Second)
	defer persist.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-persist.C:
			if err := s.persist(); err != nil {
				s.log.Error("persist transaction state", "err", err)
			}
		case <-t.C:
			s.round()
		}
	}
}

// reapply stores the committed copies End could not store.
func (s *Service) reapply() {
	s.mu.Lock()
	todo := make(map[int64]string, len(s.unapplied))
	for off, topic := range s.unapplied {
		todo[off] = topic
	}
	s.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	// ensureCommitted finds half records and copies through the consume
	// queues and the index: wait until they cover what is stored.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err := s.o.Store.WaitDispatched(ctx, s.o.Store.MaxPhyOffset())
	cancel()
	if err != nil {
		return
	}
	for off, topic := range todo {
		if err := s.ensureCommitted(off, topic); err != nil {
			continue // still failing: the next round tries again
		}
		s.mu.Lock()
		delete(s.unapplied, off)
		s.mu.Unlock()
		s.log.Info("committed message stored after an earlier failure", "halfQueueOffset", off)
	}
}

// round scans for new half messages and sends the checks that are due,
// after storing the committed copies that failed before.
func (s *Service) round() {
	s.reapply()
	if err := s.scanHalf(); err != nil {
		s.log.Error("scan half queue", "err", err)
	}
	s.mu.Lock()
	_ = s.readOps(func(half int64, d Decision, _ string) {
		if d == Commit || d == Rollback {
			if _, ok := s.decided[half]; !ok {
				s.decided[half] = d
			}
			delete(s.pend, half)
		}
	})
	now := s.o.Now()
	var due []*pending
	for _, p := range s.pend {
		if !p.parked && !now.Before(p.nextCheck) {
			due = append(due, p)
		}
	}
	s.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].queueOffset < due[j].queueOffset })
	for _, p := range due {
		s.checkOne(p, now)
	}
}

func (s *Service) checkOne(p *pending, now time.Time) {
	if !s.take(p.group, now) {
		return // rate limited: stays due for the next round
	}
	half, err := s.o.Store.LookMessage(p.phyOffset)
	if err != nil {
		s.log.Warn("half message unreadable; dropped from checks", "halfQueueOffset", p.queueOffset, "err", err)
		s.mu.Lock()
		delete(s.pend, p.queueOffset)
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	if _, ok := s.decided[p.queueOffset]; ok {
		delete(s.pend, p.queueOffset)
		s.mu.Unlock()
		return
	}
	if p.checks >= s.o.MaxChecks {
		s.mu.Unlock()
		s.park(p, half)
		return
	}
	s.mu.Unlock()

	req := s.checkRequest(half, p.checks+1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	err = s.o.Check(ctx, p.group, req)
	cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		p.misses++
		backoff := s.o.Interval << min(p.misses, 2)
		p.nextCheck = now.Add(backoff)
		if errors.Is(err, ErrNoProducer) {
			s.stats.NoProducer++
			s.log.Debug("no live producer for check-back", "group", p.group, "halfQueueOffset", p.queueOffset, "retryIn", backoff)
		} else {
			s.log.Warn("check-back send failed", "group", p.group, "halfQueueOffset", p.queueOffset, "err", err)
		}
		return
	}
	p.misses = 0
	p.checks++
	s.stats.ChecksSent++
	jitter := time.Duration((rand.Float64()*0.2 - 0.1) * float64(s.o.Interval))
	p.nextCheck = now.Add(s.o.Interval + jitter)
}

// checkRequest builds CHECK_TRANSACTION_STATE for a half message: the body
// is the half record with its real topic and queue restored.
func (s *Service) checkRequest(half *protocol.MessageExt, checks int) *protocol.Command {
	m := *half
	m.Properties = make(map[string]string, len(half.Properties)+1)
	for k, v := range half.Properties {
		m.Properties[k] = v
	}
	m.Properties[protocol.PropTransactionCheckTimes] = strconv.Itoa(checks)
	m.Topic = half.Property(protocol.PropRealTopic)
	qid, _ := strconv.Atoi(half.Property(protocol.PropRealQueueID))
	m.QueueID = int32(qid)
	body, err := protocol.AppendStored(nil, &m, protocol.EncodeProperties(m.Properties))
	if err != nil {
		body = nil
	}
	uniq := half.Property(protocol.PropUniqKey)
	h := protocol.CheckTransactionStateRequestHeader{
		TranStateTableOffset: half.QueueOffset,
		CommitLogOffset:      half.CommitLogOffset,
		MsgID:                uniq,
		TransactionID:        uniq,
		OffsetMsgID:          protocol.OffsetMsgID(half.StoreHost, half.CommitLogOffset),
	}
	req := protocol.NewRequest(protocol.CheckTransactionState, h.Encode(), body)
	req.Flag |= protocol.FlagOneway
	return req
}

// park moves a half message past its check limit to the visible
// TRANS_CHECK_MAX_TIME_TOPIC and stops checking it.
func (s *Service) park(p *pending, half *protocol.MessageExt) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s.o.Created != nil {
		s.o.Created(CheckMaxTopic)
	}
	cp := *half
	cp.Topic, cp.QueueID = CheckMaxTopic, 0
	cp.StoreHost = s.o.StoreHost
	if _, err := s.o.Store.PutMessage(ctx, &cp); err != nil {
		s.log.Error("park half message", "halfQueueOffset", p.queueOffset, "err", err)
		return
	}
	if err := s.writeOp(ctx, p.queueOffset, Parked, ""); err != nil {
		s.log.Error("park half message", "halfQueueOffset", p.queueOffset, "err", err)
		return
	}
	s.mu.Lock()
	p.parked = true
	checks := p.checks
	s.mu.Unlock()
	s.log.Warn("half message parked after the maximum number of checks; resume or force a decision with mqadmin",
		"halfQueueOffset", p.queueOffset, "msgId", p.uniqKey, "group", p.group, "checks", checks, "topic", CheckMaxTopic)
}

// Resume restarts checks of a parked (or pending) half message with a
// fresh check count.
func (s *Service) Resume(ctx context.Context, halfQueueOffset int64, operator string) error {
	if err := s.await(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	p, ok := s.pend[halfQueueOffset]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: no pending half message at queue offset %d", ErrNotFound, halfQueueOffset)
	}
	if err := s.writeOp(ctx, halfQueueOffset, Resumed, ""); err != nil {
		return err
	}
	s.mu.Lock()
	p.parked, p.checks, p.misses, p.nextCheck = false, 0, 0, s.o.Now()
	s.mu.Unlock()
	s.log.Warn("half message checks resumed by operator", "halfQueueOffset", halfQueueOffset, "operator", operator)
	return nil
}

// Force decides a pending or parked half message by operator order.
func (s *Service) Force(ctx context.Context, halfQueueOffset int64, d Decision, operator string) (Outcome, error) {
	if err := s.await(ctx); err != nil {
		return 0, err
	}
	s.mu.Lock()
	p, ok := s.pend[halfQueueOffset]
	s.mu.Unlock()
	if !ok {
		return 0, fmt.Errorf("%w: no pending half message at queue offset %d", ErrNotFound, halfQueueOffset)
	}
	return s.End(ctx, EndRequest{TranStateTableOffset: halfQueueOffset, CommitLogOffset: p.phyOffset, Decision: d, Operator: operator})
}

// List returns the pending and parked half messages, oldest first. The
// fields of each are read under s.mu (the check loop updates checks and
// nextCheck under it); the real topics are read from the store after.
func (s *Service) List() []protocol.HalfMessage {
	s.mu.Lock()
	out := make([]protocol.HalfMessage, 0, len(s.pend))
	for _, p := range s.pend {
		out = append(out, protocol.HalfMessage{QueueOffset: p.queueOffset, CommitLogOffset: p.phyOffset, ProducerGroup: p.group,
			MsgID: p.uniqKey, StoreTime: p.storeTime, Checks: p.checks, NextCheck: p.nextCheck, Parked: p.parked})
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].QueueOffset < out[j].QueueOffset })
	for i := range out {
		if m, err := s.o.Store.LookMessage(out[i].CommitLogOffset); err == nil {
			out[i].Topic = m.Property(protocol.PropRealTopic)
		}
	}
	return out
}

// Decision returns the decision taken for a half queue offset.
func (s *Service) Decision(halfQueueOffset int64) Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decided[halfQueueOffset]
}

// Stats returns counters.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Pending = len(s.pend)
	for _, p := range s.pend {
		if p.parked {
			st.Parked++
		}
	}
	return st
}

func (s *Service) count(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

func (s *Service) persist() error {
	if !s.Recovered() {
		return nil // the file still holds what New read; pend is incomplete
	}
	s.mu.Lock()
	st := state{Checks: make(map[string]int, len(s.pend))}
	for off, p := range s.pend {
		if p.checks > 0 {
			st.Checks[strconv.FormatInt(off, 10)] = p.checks
		}
	}
	s.mu.Unlock()
	return jsonfile.Save(s.o.StatePath, st)
}

// Stop ends the check loop and persists the check counts.
func (s *Service) Stop() error {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	select {
	case <-s.stop:
	default:
		close(s.stop)
		if started {
			<-s.done
		}
	}
	return s.persist()
}

// bucket is a per-group token bucket for check-backs.
type bucket struct {
	tokens float64
	last   time.Time
}

func (s *Service) take(group string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rate := float64(s.o.MaxChecksPerSecond)
	b := s.tokens[group]
	if b == nil {
		b = &bucket{tokens: rate, last: now}
		s.tokens[group] = b
	}
	// a wall clock stepped back refills nothing (and drains nothing):
	// without the max, a step back of X would stall the group's
	// check-backs for X
	b.tokens = min(rate, b.tokens+max(0, now.Sub(b.last).Seconds())*rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
