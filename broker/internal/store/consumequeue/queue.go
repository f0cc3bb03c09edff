// Package consumequeue keeps, per topic and queue, the index of fixed-size
// units that lead from a queue offset to a record in the commit log. Unit
// i of the stream is the message with queue offset i; files are named by
// the byte offset of their first unit within the stream.
//
// Unit layout (20 bytes, big-endian, rocketmq-protocol.md §5.6):
//
//	+----------------------+-------------+----------------------+
//	| commit log offset  8 | size      4 | tags code          8 |
//	+----------------------+-------------+----------------------+
//
// A unit of all zeros (size 0) is a hole: never written, or cleared by
// recovery. Readers skip it.
package consumequeue

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tidemq/tide/broker/internal/store/segment"
)

// UnitSize is the size of one consume-queue unit.
const UnitSize = 20

// Sentinel errors.
var (
	// ErrNotAvailable: the requested offset lies in a file that is gone.
	ErrNotAvailable = errors.New("consume queue: offset not available")
)

// Unit is one consume-queue entry.
type Unit struct {
	Offset   int64 // commit log offset of the record
	Size     int32 // record size; 0 marks a hole
	TagsCode int64
}

// Queue is the consume queue of one topic and queue id.
//
// One goroutine (the dispatcher) calls Put and Recover; Read, offsets,
// Flush and the retention methods are safe concurrently with it.
type Queue struct {
	topic string
	id    int32
	q     *segment.Queue

	mu        sync.Mutex // serializes Put against retention
	minOffset atomic.Int64
}

// Open opens (or creates) the queue stored in dir with files of fileSize
// bytes, a multiple of UnitSize.
func Open(dir, topic string, id int32, fileSize int64) (*Queue, error) {
	if fileSize <= 0 || fileSize%UnitSize != 0 {
		return nil, fmt.Errorf("consume queue: file size %d is not a multiple of %d", fileSize, UnitSize)
	}
	q, err := segment.OpenQueue(dir, segment.QueueOptions{FileSize: fileSize, Mode: segment.MapWriteSparse})
	if err != nil {
		return nil, err
	}
	cq := &Queue{topic: topic, id: id, q: q}
	cq.minOffset.Store(q.MinOffset() / UnitSize)
	return cq, nil
}

// Topic returns the topic.
func (c *Queue) Topic() string { return c.topic }

// ID returns the queue id.
func (c *Queue) ID() int32 { return c.id }

// MinOffset returns the smallest queue offset still readable.
func (c *Queue) MinOffset() int64 {
	return max(c.minOffset.Load(), c.q.MinOffset()/UnitSize)
}

// MaxOffset returns the queue offset the next message will get (the
// number of units ever written).
func (c *Queue) MaxOffset() int64 { return c.q.MaxOffset() / UnitSize }

// Recover finds the end of the queue (its last non-hole unit in the last
// file) and drops trailing units that point at or past clEnd, the end of
// the valid commit log. It returns how many units it dropped. Before
// Start, no concurrency.
func (c *Queue) Recover(clEnd int64) int64 {
	last := c.q.Last()
	if last == nil {
		return 0
	}
	data := last.Data()
	// The end is after the last non-zero unit; holes before it stay.
	tail := last.DataEnd() // zero past it: a sparse file's hole
	tail += (UnitSize - tail%UnitSize) % UnitSize
	end := lastUnitEnd(data[:min(tail, last.Size()-last.Size()%UnitSize)])
	written := end // everything from here on is zero already
	var dropped int64
	for end > 0 {
		u := decode(data[end-UnitSize:])
		if u.Size > 0 && u.Offset+int64(u.Size) <= clEnd {
			break
		}
		end -= UnitSize
		dropped++
	}
	// Clear only the dropped units: clearing the zero tail too would
	// fault in, dirty and write back every page of a sparse file (the
	// whole 6 MB of each queue's last file on every start, measured as
	// most of the store's restart time by BenchmarkRestart).
	clear(data[end:written])
	c.q.Truncate(last.Base() + end)
	if dropped > 0 {
		last.SetWrotePosition(last.Size())
		last.Flush()
		last.SetWrotePosition(end)
	}
	return dropped
}

// Put writes the unit of queue offset qo. A unit below MaxOffset is taken
// as already written (dispatch replays after recovery are idempotent) and
// Put reports false; a unit above it leaves holes. Single writer.
func (c *Queue) Put(qo int64, u Unit) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	maxOff := c.MaxOffset()
	if qo < maxOff {
		return false, nil
	}
	pos := qo * UnitSize
	size := c.q.FileSize()
	for {
		last := c.q.Last()
		var next int64
		switch {
		case last == nil:
			next = pos - pos%size
		case pos < last.Base()+size:
			if pos >= last.Base() {
				var b [UnitSize]byte
				encode(b[:], u)
				if err := last.WriteAt(b[:], pos-last.Base()); err != nil {
					return false, err
				}
				last.SetWrotePosition(pos - last.Base() + UnitSize)
				return true, nil
			}
			return false, fmt.Errorf("consume queue %s/%d: offset %d before the last file", c.topic, c.id, qo)
		default:
			last.SetWrotePosition(size)
			next = last.Base() + size
		}
		if _, err := c.q.Ensure(next); err != nil {
			return false, err
		}
	}
}

// Read returns up to n units starting at queue offset from, stopping at
// the end of the written data. Holes are returned as units of size 0.
func (c *Queue) Read(from int64, n int) ([]Unit, error) {
	if from < c.MinOffset() {
		return nil, fmt.Errorf("%w: %d below min %d", ErrNotAvailable, from, c.MinOffset())
	}
	var out []Unit
	for len(out) < n {
		pos := (from + int64(len(out))) * UnitSize
		f := c.q.Find(pos)
		if f == nil {
			if len(out) == 0 && pos < c.q.MaxOffset() {
				return nil, fmt.Errorf("%w: %d", ErrNotAvailable, from)
			}
			break
		}
		data := f.Data()
		w := f.WrotePosition()
		p := pos - f.Base()
		for p+UnitSize <= w && len(out) < n {
			out = append(out, decode(data[p:]))
			p += UnitSize
		}
		f.Release()
		if p+UnitSize <= w || w < f.Size() {
			break
		}
	}
	return out, nil
}

// NextFileOffset returns the first queue offset of the file after the one
// holding offset (for OFFSET_FOUND_NULL).
func (c *Queue) NextFileOffset(offset int64) int64 {
	per := c.q.FileSize() / UnitSize
	return offset - offset%per + per
}

// CorrectMinOffset moves the readable start to the first unit that points
// at or after clMin, the commit log's new start after retention.
func (c *Queue) CorrectMinOffset(clMin int64) {
	for _, f := range c.q.Files() {
		if !f.Acquire() {
			continue
		}
		lo, n := firstAtOrAfter(f.Data(), f.WrotePosition()/UnitSize, clMin)
		f.Release()
		if lo < n || f.WrotePosition() < f.Size() {
			v := f.Base()/UnitSize + lo
			if v > c.minOffset.Load() {
				c.minOffset.Store(v)
			}
			return
		}
	}
}

// firstAtOrAfter binary-searches the n units in data (in commit log
// order) for the first one pointing at or after clMin. Holes carry no
// offset and are judged by the closest unit before them.
func firstAtOrAfter(data []byte, n, clMin int64) (int64, int64) {
	before := func(m int64) bool {
		for k := m; k >= 0; k-- {
			if u := decode(data[k*UnitSize:]); u.Size > 0 {
				return u.Offset < clMin
			}
		}
		return true
	}
	lo, hi := int64(0), n
	for lo < hi {
		m := (lo + hi) / 2
		if before(m) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, n
}

// RemoveBefore deletes files (never the last) whose every unit points
// before clMin, and returns how many it deleted.
func (c *Queue) RemoveBefore(clMin int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	files := c.q.Files()
	n := 0
	for _, f := range files[:max(0, len(files)-1)] {
		if !f.Acquire() {
			break
		}
		u := decode(f.Data()[f.Size()-UnitSize:])
		f.Release()
		if u.Size > 0 && u.Offset+int64(u.Size) > clMin {
			break
		}
		n++
	}
	if n > 0 {
		c.q.RemoveFront(n)
	}
	c.CorrectMinOffset(clMin)
	return n
}

// Flush makes the written units durable.
func (c *Queue) Flush() error {
	_, err := c.q.Flush()
	return err
}

// FirstUnflushed returns the commit log offset of the first unit written
// but not flushed yet, and false when every written unit is flushed. A
// unit it cannot read, or a hole, gives 0: the caller keeps its checkpoint
// back, which is safe. Safe to call concurrently with Put.
func (c *Queue) FirstUnflushed() (int64, bool) {
	fl := c.q.FlushedOffset()
	if fl >= c.q.MaxOffset() {
		return 0, false
	}
	units, err := c.Read(max(fl/UnitSize, c.MinOffset()), 1)
	if err != nil || len(units) == 0 || units[0].Size <= 0 {
		return 0, true
	}
	return units[0].Offset, true
}

// DirtyBytes returns the number of unflushed bytes.
func (c *Queue) DirtyBytes() int64 { return c.q.DirtyBytes() }

// Close unmaps the files.
func (c *Queue) Close() { c.q.Close() }

// Destroy removes the queue's files and directory.
func (c *Queue) Destroy() { c.q.RemoveAll() }

func encode(b []byte, u Unit) {
	binary.BigEndian.PutUint64(b, uint64(u.Offset))
	binary.BigEndian.PutUint32(b[8:], uint32(u.Size))
	binary.BigEndian.PutUint64(b[12:], uint64(u.TagsCode))
}

func decode(b []byte) Unit {
	return Unit{
		Offset:   int64(binary.BigEndian.Uint64(b)),
		Size:     int32(binary.BigEndian.Uint32(b[8:])),
		TagsCode: int64(binary.BigEndian.Uint64(b[12:])),
	}
}

// zeroChunk is a run of zero units compared against a file's tail a
// chunk at a time (bytes.Equal is vectorised; a byte loop was a second of
// every restart). Its size is a multiple of UnitSize and of the page size.
var zeroChunk [1024 * UnitSize]byte

// lastUnitEnd returns the end of the last unit of data (a multiple of
// UnitSize long) that is not all zero, 0 if there is none.
func lastUnitEnd(data []byte) int64 {
	end := len(data)
	for end >= len(zeroChunk) && bytes.Equal(data[end-len(zeroChunk):end], zeroChunk[:]) {
		end -= len(zeroChunk)
	}
	for end > 0 && isZero(data[end-UnitSize:end]) {
		end -= UnitSize
	}
	return int64(end)
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Truncate drops every trailing unit pointing at or past clEnd (the commit
// log was cut back to clEnd), across files, and returns how many it
// dropped. The dispatcher must not run Put concurrently (store.Truncate
// pauses it); readers may.
func (c *Queue) Truncate(clEnd int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var dropped int64
	for {
		n := c.q.Len()
		d := c.Recover(clEnd)
		dropped += d
		if d == 0 || c.q.Len() == n {
			return dropped
		}
	}
}
