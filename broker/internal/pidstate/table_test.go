package pidstate

import (
	"errors"
	"log/slog"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

var qk = QueueKey{Topic: "t", QueueID: 1}

// send plays the broker's send path: check, then record when new.
func send(t *testing.T, tb *Table, id, epoch, seq int64, n int, qo, phy int64) (dup *Run, err error) {
	t.Helper()
	s, err := tb.Acquire(id, epoch, qk, 0)
	if err != nil {
		return nil, err
	}
	defer s.Release()
	r, _, err := s.Lookup(seq, n)
	if err != nil || r != nil {
		return r, err
	}
	run := Run{FirstSeq: seq, QueueOffset: qo}
	for i := range n {
		run.Phys = append(run.Phys, phy+int64(i)*100)
	}
	run.End = phy + int64(n)*100
	s.Record(run)
	return nil, nil
}

func TestSequenceRules(t *testing.T) {
	tb := New()
	id, ep := tb.Init("g", "")
	steps := []struct {
		name    string
		seq     int64
		n       int
		wantDup bool
		wantErr error
	}{
		{"first", 0, 1, false, nil},
		{"retry of first", 0, 1, true, nil},
		{"next", 1, 1, false, nil},
		{"gap accepted (a retry moved elsewhere)", 5, 1, false, nil},
		{"gap filled late", 3, 1, false, nil},
		{"batch", 6, 3, false, nil},
		{"batch retry", 6, 3, true, nil},
		{"batch item retry", 7, 1, true, nil},
		{"partial overlap", 8, 2, false, ErrOutOfOrder},
		{"evicts 0", 10, 1, false, nil},
		{"below the window", 0, 1, false, ErrForgotten},
		{"old but remembered", 1, 1, true, nil},
	}
	for i, st := range steps {
		dup, err := send(t, tb, id, ep, st.seq, st.n, int64(i*10), int64(i*1000))
		if !errors.Is(err, st.wantErr) || (dup != nil) != st.wantDup {
			t.Fatalf("%s: dup=%v err=%v, want dup=%v err=%v", st.name, dup != nil, err, st.wantDup, st.wantErr)
		}
	}
	// the batch retry answers the original offsets
	dup, _ := send(t, tb, id, ep, 7, 1, 0, 0)
	if dup.FirstSeq != 6 || dup.QueueOffset != 50 || dup.Phys[1] != 5100 {
		t.Errorf("batch run %+v", dup)
	}
}

func TestFencing(t *testing.T) {
	tb := New()
	clock := time.UnixMilli(1000)
	tb.now = func() time.Time { return clock }
	id1, e1 := tb.Init("g", "inst")
	if _, err := send(t, tb, id1, e1, 0, 1, 0, 0); err != nil {
		t.Fatal(err)
	}
	id2, e2 := tb.Init("g", "inst") // same clock: the epoch still rises
	if id2 != id1 || e2 <= e1 {
		t.Fatalf("second init = %d/%d after %d/%d", id2, e2, id1, e1)
	}
	if _, err := send(t, tb, id1, e1, 1, 1, 1, 100); !errors.Is(err, ErrFenced) {
		t.Fatalf("zombie send: %v", err)
	}
	// the new epoch starts its sequences afresh
	if dup, err := send(t, tb, id2, e2, 0, 1, 1, 100); dup != nil || err != nil {
		t.Fatalf("new instance seq 0: dup=%v err=%v", dup, err)
	}
	other, _ := tb.Init("g", "other")
	fresh, _ := tb.Init("g", "")
	if other == id1 || fresh == id1 || fresh&(1<<62) != 0 || other&(1<<62) == 0 {
		t.Errorf("ids: stable %x other %x fresh %x", id1, other, fresh)
	}
}

func TestExpireAndSnapshot(t *testing.T) {
	tb := New()
	clock := time.UnixMilli(10_000_000)
	tb.now = func() time.Time { return clock }
	id, ep := tb.Init("g", "a")
	send(t, tb, id, ep, 0, 2, 0, 0)
	path := filepath.Join(t.TempDir(), "producers.json")
	if err := tb.Save(path, 4242); err != nil {
		t.Fatal(err)
	}
	back := New()
	off, found, err := back.Load(path)
	if err != nil || !found || off != 4242 {
		t.Fatalf("Load = %d %v %v", off, found, err)
	}
	if dup, err := send(t, back, id, ep, 1, 1, 0, 0); dup == nil || err != nil {
		t.Fatalf("retry after reload: dup=%v err=%v", dup, err)
	}
	if _, err := send(t, back, id, ep-1, 5, 1, 0, 0); !errors.Is(err, ErrFenced) {
		t.Fatalf("old epoch after reload: %v", err)
	}
	clock = clock.Add(time.Hour)
	tb.Truncate(50) // the run's first record ends at 100: all forgotten
	if dup, _ := send(t, tb, id, ep, 0, 1, 0, 0); dup != nil {
		t.Error("a truncated run still answers duplicates")
	}
	if n := tb.Expire(2 * time.Hour); n != 0 {
		t.Errorf("expired %d fresh producers", n)
	}
	clock = clock.Add(3 * time.Hour)
	if n := tb.Expire(2 * time.Hour); n != 1 || tb.Len() != 0 {
		t.Errorf("expired %d, %d left", n, tb.Len())
	}
}

// memLog is a commit log in memory for the follower.
type memLog struct{ b []byte }

func (l *memLog) ReadCommitLog(off int64, max int) ([]byte, error) {
	return append([]byte(nil), l.b[off:min(int64(len(l.b)), off+int64(max))]...), nil
}
func (l *memLog) MaxPhyOffset() int64 { return int64(len(l.b)) }
func (l *memLog) MinPhyOffset() int64 { return 0 }

func (l *memLog) append(t *testing.T, st protocol.ProducerStamp, qo int64) {
	t.Helper()
	m := &protocol.MessageExt{QueueID: 1, QueueOffset: qo, BornTimestamp: 5, StoreTimestamp: 6}
	m.Topic, m.Body = "t", []byte("x")
	m.Properties = map[string]string{protocol.PropProducerStamp: st.String()}
	m.CommitLogOffset = int64(len(l.b))
	m.BornHost = netip.MustParseAddrPort("127.0.0.1:1")
	m.StoreHost = m.BornHost
	rec, err := protocol.AppendStored(nil, m, protocol.EncodeProperties(m.Properties))
	if err != nil {
		t.Fatal(err)
	}
	l.b = append(l.b, rec...)
}

func TestFollowerRebuildsAndTruncates(t *testing.T) {
	log := &memLog{}
	st := protocol.ProducerStamp{ProducerID: 9, Epoch: 1}
	for i := range 3 { // one batch: same born time, adjacent, consecutive
		st.Sequence = int64(i)
		log.append(t, st, int64(i))
	}
	cut := int64(len(log.b))
	st.Sequence = 3
	log.append(t, st, 3)
	tb := New()
	f := NewFollower(tb, log, 1<<30, 0, slog.New(slog.DiscardHandler))
	if got := f.CatchUp(); got != int64(len(log.b)) {
		t.Fatalf("caught up to %d of %d", got, len(log.b))
	}
	if dup, _ := send(t, tb, 9, 1, 0, 3, 0, 0); dup == nil || dup.Count() != 4 {
		t.Fatalf("the batch read back record by record: %+v", dup)
	}
	f.Truncated(cut)
	if dup, _ := send(t, tb, 9, 1, 3, 1, 0, 0); dup != nil {
		t.Error("a truncated record still counts as stored")
	}
	if dup, _ := send(t, tb, 9, 1, 1, 1, 0, 0); dup == nil {
		t.Error("a record before the truncation point was forgotten")
	}
	if f.Scanned() != cut {
		t.Errorf("scanned %d after truncation to %d", f.Scanned(), cut)
	}
}

// record returns the view of the record the log holds at phy.
func (l *memLog) record(t *testing.T, phy int64) *protocol.RecordView {
	t.Helper()
	v, err := protocol.ViewRecord(l.b[phy:], false)
	if err != nil {
		t.Fatal(err)
	}
	return &v
}

func TestFollowerAppliesDispatchedRecords(t *testing.T) {
	log := &memLog{}
	st := protocol.ProducerStamp{ProducerID: 9, Epoch: 1}
	var phys []int64
	for i := range 3 {
		phys = append(phys, int64(len(log.b)))
		st.Sequence = int64(i)
		log.append(t, st, int64(i))
	}
	size := int64(len(log.b)) / 3
	const fileSize = 4096
	tb := New()
	f := NewFollower(tb, &memLog{}, fileSize, 0, slog.New(slog.DiscardHandler)) // an empty log: Drain must not read it

	// A sender holds the producer's slot for the queue: the dispatcher's
	// hand-over must not wait for it (the sender may wait for the
	// dispatcher).
	slot, err := tb.Acquire(9, 1, qk, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Dispatched(phys[0], log.record(t, phys[0]))
	f.Dispatched(phys[1], log.record(t, phys[1]))
	slot.Release()

	// The third record is the first of the next segment (the rest of the
	// first one blank).
	f.Dispatched(fileSize, log.record(t, phys[2]))
	if got := f.Drain(); got != fileSize+size {
		t.Fatalf("drained to %d, want %d", got, fileSize+size)
	}
	if dup, _ := send(t, tb, 9, 1, 1, 1, 0, 0); dup == nil {
		t.Error("a dispatched stamped record was not applied")
	}
	if dup, _ := send(t, tb, 9, 1, 2, 1, 0, 0); dup == nil {
		t.Error("the record after the segment's blank tail was not applied")
	}

	// A record past a gap waits for CatchUp.
	f.Dispatched(fileSize+3*size, log.record(t, phys[1]))
	if got := f.Drain(); got != fileSize+size {
		t.Errorf("a record past a gap moved the follower to %d", got)
	}
}
