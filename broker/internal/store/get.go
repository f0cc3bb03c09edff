package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tidemq/tide/broker/internal/store/consumequeue"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// GetStatus is the outcome of GetMessage (RocketMQ GetMessageStatus); see
// rocketmq-protocol.md §5.7 for the response codes they map to.
type GetStatus int

// Get statuses.
const (
	Found GetStatus = iota
	NoMatchedMessage
	MessageWasRemoving
	OffsetFoundNull
	OffsetOverflowBadly
	OffsetOverflowOne
	OffsetTooSmall
	NoMatchedLogicQueue
	NoMessageInQueue
)

var getStatusNames = [...]string{"FOUND", "NO_MATCHED_MESSAGE", "MESSAGE_WAS_REMOVING", "OFFSET_FOUND_NULL",
	"OFFSET_OVERFLOW_BADLY", "OFFSET_OVERFLOW_ONE", "OFFSET_TOO_SMALL", "NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE"}

func (s GetStatus) String() string {
	if int(s) < len(getStatusNames) {
		return getStatusNames[s]
	}
	return fmt.Sprintf("GetStatus(%d)", int(s))
}

// Filter selects messages during GetMessage. MatchTagsCode sees the
// consume-queue tags code; MatchProperties is asked only for messages that
// passed it and may call props (which decodes the record's properties) or
// return true without calling it.
type Filter interface {
	MatchTagsCode(tagsCode int64) bool
	MatchProperties(props func() map[string]string) bool
}

// QueueUnit is one consume-queue entry: commit log offset, record size
// (0 for a hole, which readers skip) and tags code.
type QueueUnit = consumequeue.Unit

// Record locates one message returned by GetMessage inside Data.
type Record struct {
	QueueOffset     int64
	CommitLogOffset int64
	Size            int32
	TagsCode        int64
}

// GetResult is what GetMessage found. Data holds the raw stored records
// back to back, in the order of Records, ready to be a pull response body;
// it is a copy owned by the caller.
type GetResult struct {
	Status          GetStatus
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	Records         []Record
	Data            []byte
}

// GetMessage reads up to maxMsgNums messages of topic/queueID from queue
// offset offset, at most maxBytes of records (0: the configured
// maxTransferBytesOnMessageInMemory), skipping those filter rejects. The
// first matching message is always returned, even with maxMsgNums 0 or a
// record larger than maxBytes. Each record is checked (magic, size, CRC,
// topic, queue, queue offset) before it is returned; a bad one is skipped
// and counted in Stats.CorruptRecords, never served. Safe for concurrent
// use; never blocks appends.
func (s *Store) GetMessage(topic string, queueID int32, offset int64, maxMsgNums, maxBytes int, filter Filter) GetResult {
	var r GetResult
	q := s.queue(topic, queueID, false)
	if q == nil {
		r.Status = NoMatchedLogicQueue
		return r
	}
	r.MinOffset, r.MaxOffset = q.MinOffset(), q.MaxOffset()
	switch {
	case r.MaxOffset == 0:
		r.Status = NoMessageInQueue
		return r
	case offset < r.MinOffset:
		r.Status, r.NextBeginOffset = OffsetTooSmall, r.MinOffset
		return r
	case offset == r.MaxOffset:
		r.Status, r.NextBeginOffset = OffsetOverflowOne, offset
		return r
	case offset > r.MaxOffset:
		r.Status, r.NextBeginOffset = OffsetOverflowBadly, r.MaxOffset
		return r
	}
	if maxBytes <= 0 || maxBytes > s.cfg.MaxTransferBytesOnMessageInMemory {
		maxBytes = s.cfg.MaxTransferBytesOnMessageInMemory
	}
	maxMsgNums = min(maxMsgNums, s.cfg.MaxTransferCountOnMessageInMemory)
	scanUnits := max(16000, maxMsgNums*20) / consumequeue.UnitSize
	units, err := q.Read(offset, scanUnits)
	if err != nil || len(units) == 0 {
		r.Status, r.NextBeginOffset = OffsetFoundNull, q.NextFileOffset(offset)
		return r
	}
	// Size the result once: growing it by appends was ~85% of GetMessage's
	// CPU on a 32-message pull. An upper bound of what the loop below takes
	// when nothing is filtered out (a filter only makes it smaller).
	need, n := 0, 0
	for _, u := range units {
		if n >= maxMsgNums || (n > 0 && need+int(u.Size) > maxBytes) {
			break
		}
		if u.Size > 0 {
			need += int(u.Size)
			n++
		}
	}
	r.Data = make([]byte, 0, need)
	r.Records = make([]Record, 0, n)
	clMin := s.cl.MinOffset()
	removed := false
	scanned := 0
	for i, u := range units {
		if len(r.Records) > 0 && (len(r.Records) >= maxMsgNums || len(r.Data)+int(u.Size) > maxBytes) {
			break
		}
		scanned = i + 1
		if u.Size <= 0 {
			continue // hole
		}
		if u.Offset < clMin {
			removed = true
			continue
		}
		if filter != nil && !filter.MatchTagsCode(u.TagsCode) {
			continue
		}
		qo := offset + int64(i)
		start := len(r.Data)
		data, err := s.cl.Read(r.Data, u.Offset, int(u.Size))
		if err != nil {
			if errors.Is(err, ErrOffsetRemoved) {
				removed = true
				continue
			}
			s.reportCorrupt(topic, queueID, qo, u, err)
			continue
		}
		rec := data[start:]
		if err := checkRecord(rec, topic, queueID, qo, u.Offset); err != nil {
			s.reportCorrupt(topic, queueID, qo, u, err)
			r.Data = data[:start]
			continue
		}
		if filter != nil && !filter.MatchProperties(func() map[string]string {
			v, _ := protocol.ViewRecord(rec, false)
			return protocol.DecodeProperties(string(v.Properties))
		}) {
			r.Data = data[:start]
			continue
		}
		r.Data = data
		r.Records = append(r.Records, Record{QueueOffset: qo, CommitLogOffset: u.Offset, Size: u.Size, TagsCode: u.TagsCode})
	}
	r.NextBeginOffset = offset + int64(scanned)
	switch {
	case len(r.Records) > 0:
		r.Status = Found
	case removed:
		r.Status = MessageWasRemoving
	default:
		r.Status = NoMatchedMessage
	}
	return r
}

func (s *Store) reportCorrupt(topic string, qid int32, qo int64, u QueueUnit, err error) {
	s.corrupt.Add(1)
	s.log.Error("corrupt message skipped", "topic", topic, "queue", qid, "queueOffset", qo,
		"commitLogOffset", u.Offset, "size", u.Size, "err", err)
}

// checkRecord verifies that rec is the intact record a consume-queue unit
// promises.
func checkRecord(rec []byte, topic string, qid int32, qo, phy int64) error {
	v, err := protocol.ViewRecord(rec, true)
	if err != nil {
		return err
	}
	if int(v.Size) != len(rec) || v.QueueID != qid || v.QueueOffset != qo || v.PhysicalOffset != phy || string(v.Topic) != topic {
		return fmt.Errorf("%w: record at %d is %s/%d@%d (%d bytes), unit expects %s/%d@%d (%d bytes)", protocol.ErrMalformed,
			phy, v.Topic, v.QueueID, v.QueueOffset, v.Size, topic, qid, qo, len(rec))
	}
	return nil
}

// MinOffset returns the smallest readable queue offset of topic/queueID
// (0 for an unknown queue).
func (s *Store) MinOffset(topic string, queueID int32) int64 {
	if q := s.queue(topic, queueID, false); q != nil {
		return q.MinOffset()
	}
	return 0
}

// MaxOffset returns the queue offset the next dispatched message of
// topic/queueID will have (0 for an unknown queue).
func (s *Store) MaxOffset(topic string, queueID int32) int64 {
	if q := s.queue(topic, queueID, false); q != nil {
		return q.MaxOffset()
	}
	return 0
}

// ReadQueue returns up to n consume-queue units of topic/queueID from
// queue offset offset (fewer at the end; holes have Size 0). The delay
// scheduler walks SCHEDULE_TOPIC_XXXX this way.
func (s *Store) ReadQueue(topic string, queueID int32, offset int64, n int) ([]QueueUnit, error) {
	q := s.queue(topic, queueID, false)
	if q == nil {
		return nil, nil
	}
	return q.Read(offset, n)
}

// ReadRecord returns a copy of the raw stored record at commitLogOffset,
// with its CRC checked.
func (s *Store) ReadRecord(commitLogOffset int64) ([]byte, error) {
	rec, err := s.cl.ReadRecord(nil, commitLogOffset)
	if err != nil {
		if errors.Is(err, ErrOffsetRemoved) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %d: %w", ErrNotFound, commitLogOffset, err)
	}
	v, err := protocol.ViewRecord(rec, true)
	if err != nil || v.PhysicalOffset != commitLogOffset {
		return nil, fmt.Errorf("%w: %d: corrupt record", ErrNotFound, commitLogOffset)
	}
	return rec, nil
}

// LookMessage decodes the message at commitLogOffset.
func (s *Store) LookMessage(commitLogOffset int64) (*protocol.MessageExt, error) {
	rec, err := s.ReadRecord(commitLogOffset)
	if err != nil {
		return nil, err
	}
	m, _, err := protocol.DecodeStored(rec, false)
	return m, err
}

// storeTime returns the store timestamp of the record at phy.
func (s *Store) storeTime(phy int64) (int64, error) {
	var ts int64
	err := s.cl.View(phy, func(b []byte) error {
		v, err := protocol.ViewRecord(b, false)
		ts = v.StoreTimestamp
		return err
	})
	return ts, err
}

// SearchOffsetByTimestamp returns the smallest queue offset of
// topic/queueID whose message was stored at or after ts (ms): MinOffset
// when ts precedes everything, MaxOffset when it follows everything.
func (s *Store) SearchOffsetByTimestamp(topic string, queueID int32, ts int64) int64 {
	q := s.queue(topic, queueID, false)
	if q == nil {
		return 0
	}
	lo, hi := q.MinOffset(), q.MaxOffset()
	timeAt := func(o int64) (int64, bool) {
		// Skip holes and removed records forward.
		for k := o; k < hi; k++ {
			u, err := q.Read(k, 1)
			if err != nil || len(u) == 0 {
				return 0, false
			}
			if u[0].Size > 0 {
				if t, err := s.storeTime(u[0].Offset); err == nil {
					return t, true
				}
			}
		}
		return 0, false
	}
	for lo < hi {
		m := lo + (hi-lo)/2
		t, ok := timeAt(m)
		if ok && t < ts {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// EarliestStoreTime returns the store time of the first readable message
// of topic/queueID, or an error when there is none.
func (s *Store) EarliestStoreTime(topic string, queueID int32) (int64, error) {
	q := s.queue(topic, queueID, false)
	if q == nil {
		return 0, fmt.Errorf("%w: no queue %s/%d", ErrNotFound, topic, queueID)
	}
	for o := q.MinOffset(); o < q.MaxOffset(); o++ {
		u, err := q.Read(o, 1)
		if err != nil || len(u) == 0 {
			break
		}
		if u[0].Size > 0 {
			if t, err := s.storeTime(u[0].Offset); err == nil {
				return t, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: queue %s/%d is empty", ErrNotFound, topic, queueID)
}

// EarliestMessageTime returns the store time of the first record in the
// commit log.
func (s *Store) EarliestMessageTime() (int64, error) {
	return s.storeTime(s.cl.MinOffset())
}

// QueryResult holds the messages QueryMessages found: raw records back to
// back in Data (a QUERY_MESSAGE response body), their offsets, and the
// index's last update (for the response header).
type QueryResult struct {
	Data                []byte
	Offsets             []int64
	LastUpdateTimestamp int64
	LastUpdatePhyOffset int64
}

// QueryMessages finds up to maxNum messages of topic whose KEYS contain
// key or whose UNIQ_KEY is key, stored in [beginMs, endMs]. Candidates
// from the index are verified against the records (hash collisions and
// entries left by recovery are dropped).
func (s *Store) QueryMessages(topic, key string, maxNum int, beginMs, endMs int64) QueryResult {
	var r QueryResult
	if s.idx == nil || maxNum <= 0 {
		return r
	}
	r.LastUpdateTimestamp, r.LastUpdatePhyOffset = s.indexTS.Load(), s.dispatched.Load()
	cands := s.idx.Query(topic+"#"+key, maxNum*4+16, beginMs, endMs)
	seen := map[int64]bool{}
	for _, phy := range cands {
		if len(r.Offsets) >= maxNum {
			break
		}
		if seen[phy] {
			continue
		}
		seen[phy] = true
		rec, err := s.ReadRecord(phy)
		if err != nil {
			continue
		}
		v, err := protocol.ViewRecord(rec, false)
		if err != nil || string(v.Topic) != topic || v.StoreTimestamp < beginMs || v.StoreTimestamp > endMs {
			continue
		}
		if !recordHasKey(string(v.Properties), key) {
			continue
		}
		r.Data = append(r.Data, rec...)
		r.Offsets = append(r.Offsets, phy)
	}
	return r
}

func recordHasKey(props, key string) bool {
	if id, ok := protocol.PropertyValue(props, protocol.PropUniqKey); ok && id == key {
		return true
	}
	keys, _ := protocol.PropertyValue(props, protocol.PropKeys)
	return slices.Contains(strings.Fields(keys), key)
}
