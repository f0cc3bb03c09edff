package store

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/tidemq/tide/broker/internal/store/commitlog"
	"github.com/tidemq/tide/broker/internal/store/consumequeue"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// The dispatcher (RocketMQ's ReputMessageService) follows the commit log
// from reputFrom and, for each record, writes its consume-queue unit,
// indexes its keys and calls the dispatch listener. It is woken by every
// append and also polls, so a lost wake-up only delays it. Wake-ups
// coalesce: the appender's signal is a non-blocking send on a 1-slot
// channel, and each pass dispatches everything written when it looks, so
// appends made during a pass cost one more pass, not one each. A pass
// allocates nothing per record: one RecordView (Store.view) serves every
// record, which is why the hooks must not retain it, and the channel
// WaitDispatched waits on is replaced only when someone waited on it.

func (s *Store) wakeDispatcher() {
	select {
	case s.dwake <- struct{}{}:
	default:
	}
}

func newTicker(d time.Duration) *time.Ticker { return time.NewTicker(d) }

func (s *Store) dispatchLoop() {
	defer s.wg.Done()
	// A write to a page of a sparse consume-queue or index file that the
	// file system cannot back (disk full) faults (SIGBUS); with this, the
	// fault is a panic dispatchRecordSafe recovers from, not a crash.
	debug.SetPanicOnFault(true)
	t := newTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.dwake:
		case <-t.C:
		}
		s.runMu.Lock()
		s.dispatchAvailable()
		s.runMu.Unlock()
	}
}

// dispatchEnd is the commit log offset the dispatcher may reach: the end
// of what is written, or less under SetDispatchLimit.
func (s *Store) dispatchEnd() int64 {
	end := s.cl.MaxOffset()
	if fn := s.limit.Load(); fn != nil {
		end = min(end, (*fn)())
	}
	return end
}

// dispatchAvailable dispatches everything written so far (up to the
// dispatch limit). Dispatcher goroutine, Open and Close only.
func (s *Store) dispatchAvailable() {
	for end := s.dispatchEnd(); s.reputFrom < end; end = s.dispatchEnd() {
		from := s.reputFrom
		err := s.cl.View(from, func(b []byte) error {
			if rest := end - from; int64(len(b)) > rest {
				b = b[:rest] // a record crossing the limit waits like a partial one
			}
			pos := 0
			for pos < len(b) {
				v := &s.view // one view for every record: hooks do not retain it
				var err error
				*v, err = protocol.ViewRecord(b[pos:], false)
				if errors.Is(err, protocol.ErrBlank) {
					s.reputFrom = s.cl.NextSegment(from)
					return nil
				}
				if err != nil {
					// A replicated append may end inside a record: wait
					// for the rest unless the segment is already full.
					full := (from+int64(len(b)))%s.cl.FileSize() == 0
					if errors.Is(err, protocol.ErrTruncated) && !full {
						return errPartial
					}
					return err
				}
				if err := s.dispatchRecordSafe(from+int64(pos), v); err != nil {
					return err
				}
				pos += int(v.Size)
				s.reputFrom = from + int64(pos)
			}
			return nil
		})
		switch {
		case errors.Is(err, errPartial), errors.Is(err, errMappedFault):
		case errors.Is(err, commitlog.ErrOffsetRemoved):
			s.reputFrom = s.cl.MinOffset()
		case err != nil:
			// The appender only publishes whole records, so this is
			// corruption under a live store: skip to the next segment
			// rather than stall every consumer.
			s.corrupt.Add(1)
			s.log.Error("dispatch: invalid record, skipping to the next segment", "offset", s.reputFrom, "err", err)
			s.reputFrom = s.cl.NextSegment(s.reputFrom)
		}
		s.view = protocol.RecordView{} // drop the references into the mapped log
		s.dispatched.Store(s.reputFrom)
		s.dmu.Lock()
		if s.dwaited { // a new channel only when someone waits on the old one
			close(s.ddone)
			s.ddone = make(chan struct{})
			s.dwaited = false
		}
		s.dmu.Unlock()
		if errors.Is(err, errMappedFault) {
			// Retried from the same record on the next wake or tick; the
			// unit or index entry written twice is the same one.
			if !s.dispatchFaulted {
				s.log.Error("dispatch: cannot write a consume-queue or index page (disk full?); dispatching paused until it can", "offset", s.reputFrom, "err", err)
			}
			s.dispatchFaulted = true
			return
		}
		if s.dispatchFaulted {
			s.dispatchFaulted = false
			s.log.Info("dispatch: writing consume-queue and index pages again; dispatching resumed", "offset", s.reputFrom)
		}
		if errors.Is(err, errPartial) {
			return
		}
	}
}

var errPartial = errors.New("partial record at the end of the written data")

// errMappedFault: a write to a mapped consume-queue or index page faulted.
var errMappedFault = errors.New("store: fault writing a mapped page")

// dispatchRecordSafe is dispatchRecord, except that a memory fault on a
// mapped page (with debug.SetPanicOnFault, which dispatchLoop sets: a
// sparse file the full file system cannot extend) is returned as
// errMappedFault instead of crashing the broker. Any other panic is
// re-raised.
func (s *Store) dispatchRecordSafe(phy int64, v *protocol.RecordView) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(interface{ Addr() uintptr }); ok {
				err = fmt.Errorf("%w at %#x (record at %d): %v", errMappedFault, f.Addr(), phy, r)
				return
			}
			panic(r)
		}
	}()
	s.dispatchRecord(phy, v)
	return nil
}

func (s *Store) dispatchRecord(phy int64, v *protocol.RecordView) {
	// Consecutive records mostly share a topic: reuse its string.
	topic := s.lastTopic
	if topic != string(v.Topic) {
		topic = string(v.Topic)
		s.lastTopic = topic
	}
	if fn := s.records.Load(); fn != nil {
		(*fn)(phy, v)
	}
	tx := protocol.TxType(v.SysFlag)
	if tx != protocol.SysFlagTxPrepared && tx != protocol.SysFlagTxRollback {
		tags := s.tagsCode(topic, v)
		if q := s.queue(topic, v.QueueID, true); q != nil {
			added, err := q.Put(v.QueueOffset, consumequeue.Unit{Offset: phy, Size: v.Size, TagsCode: tags})
			if err != nil {
				s.log.Error("dispatch: consume queue put", "topic", topic, "queue", v.QueueID, "err", err)
			}
			if added {
				if fn := s.listener.Load(); fn != nil {
					(*fn)(topic, v.QueueID, v.QueueOffset, tags, v.Properties)
				}
			}
		}
	}
	if s.idx != nil && tx != protocol.SysFlagTxRollback && phy >= s.indexFrom {
		if id, ok := protocol.PropertyBytes(v.Properties, protocol.PropUniqKey); ok && len(id) > 0 {
			s.index(topic, id, phy, v.StoreTimestamp)
		}
		if keys, ok := protocol.PropertyBytes(v.Properties, protocol.PropKeys); ok {
			s.indexKeys(topic, keys, phy, v.StoreTimestamp)
		}
	}
}

// tagsHash is protocol.TagsHashCode without allocating for ASCII tags.
func tagsHash(tag []byte) int64 {
	var h int32
	for _, c := range tag {
		if c >= 0x80 {
			return protocol.TagsHashCode(string(tag))
		}
		h = 31*h + int32(c)
	}
	return int64(h)
}

func (s *Store) index(topic string, key []byte, phy, ts int64) {
	if err := s.idx.PutTopicKey(topic, key, phy, ts); err != nil {
		s.log.Error("dispatch: index put", "err", err)
	}
}

// indexKeys indexes each of the space-separated KEYS of the record at phy.
func (s *Store) indexKeys(topic string, keys []byte, phy, ts int64) {
	eachField(keys, func(k []byte) { s.index(topic, k, phy, ts) })
}

// eachField calls fn with each field of b as strings.Fields splits it,
// without allocating when b is ASCII. fn must not retain its argument.
func eachField(b []byte, fn func([]byte)) {
	for _, c := range b {
		if c >= 0x80 { // strings.Fields also splits on Unicode spaces
			for _, f := range strings.Fields(string(b)) {
				fn([]byte(f))
			}
			return
		}
	}
	for len(b) > 0 {
		i := 0
		for i < len(b) && asciiSpace(b[i]) {
			i++
		}
		j := i
		for j < len(b) && !asciiSpace(b[j]) {
			j++
		}
		if j > i {
			fn(b[i:j])
		}
		b = b[j:]
	}
}

// asciiSpace is unicode.IsSpace for ASCII bytes (strings.Fields' set).
func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// tagsCode is what the TagsCoder registered for the record's topic
// returns (WithTagsCoder), else TagsHashCode(TAGS), else 0.
func (s *Store) tagsCode(topic string, v *protocol.RecordView) int64 {
	for _, c := range s.coders {
		if c.topic == topic {
			if code, ok := c.fn(v); ok {
				return code
			}
			break
		}
	}
	if t, ok := protocol.PropertyBytes(v.Properties, protocol.PropTags); ok {
		return tagsHash(t)
	}
	return 0
}

// DispatchedOffset returns the commit log offset up to which consume
// queues and index are built.
func (s *Store) DispatchedOffset() int64 { return s.dispatched.Load() }

// WaitDispatched blocks until everything below phy is dispatched or ctx
// ends. Pass MaxPhyOffset() to wait for everything appended so far.
func (s *Store) WaitDispatched(ctx context.Context, phy int64) error {
	for {
		s.dmu.Lock()
		done := s.ddone
		s.dwaited = true
		s.dmu.Unlock()
		if s.dispatched.Load() >= phy {
			return nil
		}
		s.wakeDispatcher()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
