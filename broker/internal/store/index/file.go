package index

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/broker/internal/store/segment"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

const (
	headerSize = 40
	entrySize  = 20
	slotSize   = 4
)

// FileSize returns the size of an index file with the given geometry.
func FileSize(slotNum, indexNum int) int64 {
	return headerSize + int64(slotNum)*slotSize + int64(indexNum)*entrySize
}

// file is one index file. Callers (Service) serialize access.
type file struct {
	f        *segment.File
	name     string
	slotNum  int
	indexNum int
	data     []byte
	dirty    atomic.Bool
}

func createFile(dir string, now time.Time, slotNum, indexNum int) (*file, error) {
	name := now.Format("20060102150405.000")
	name = strings.Replace(name, ".", "", 1)
	path := filepath.Join(dir, name)
	sf, err := segment.Create(path, 0, FileSize(slotNum, indexNum), false, segment.MapWriteSparse)
	if err != nil {
		return nil, err
	}
	x := &file{f: sf, name: name, slotNum: slotNum, indexNum: indexNum, data: sf.Data()}
	x.setCount(1)
	sf.SetWrotePosition(sf.Size())
	return x, nil
}

func openFile(path string, slotNum, indexNum int) (*file, error) {
	sf, err := segment.Open(path, 0, FileSize(slotNum, indexNum), segment.MapWriteSparse)
	if err != nil {
		return nil, err
	}
	x := &file{f: sf, name: filepath.Base(path), slotNum: slotNum, indexNum: indexNum, data: sf.Data()}
	switch n := x.count(); {
	case n == 0:
		// createFile renames the file into place before it writes the
		// header, so a process killed in between leaves a file whose
		// count was never set. Nothing was indexed in it (entries are
		// written only after the count is 1): it starts empty.
		x.setCount(1)
		x.dirty.Store(true)
	case n < 0 || n > indexNum:
		// The count is read before Close: the mapping is gone after it.
		sf.Close()
		return nil, fmt.Errorf("index file %s: bad index count %d (max %d)", path, n, indexNum)
	}
	sf.SetWrotePosition(sf.Size())
	return x, nil
}

var be = binary.BigEndian

func (x *file) beginTS() int64    { return int64(be.Uint64(x.data[0:])) }
func (x *file) endTS() int64      { return int64(be.Uint64(x.data[8:])) }
func (x *file) beginPhy() int64   { return int64(be.Uint64(x.data[16:])) }
func (x *file) endPhy() int64     { return int64(be.Uint64(x.data[24:])) }
func (x *file) count() int        { return int(int32(be.Uint32(x.data[36:]))) }
func (x *file) setCount(n int)    { be.PutUint32(x.data[36:], uint32(n)) }
func (x *file) full() bool        { return x.count() >= x.indexNum }
func (x *file) slotPos(s int) int { return headerSize + s*slotSize }
func (x *file) entryPos(i int) int {
	return headerSize + x.slotNum*slotSize + i*entrySize
}

// keyHash is Java's indexKeyHashMethod: |String.hashCode|, 0 when the
// absolute value overflows.
func keyHash(key string) int32 {
	return absHash(int32(protocol.TagsHashCode(key)))
}

// absHash is Java's Math.abs of a String.hashCode as indexKeyHashMethod
// uses it: |h|, and 0 for math.MinInt32, whose absolute value overflows.
func absHash(h int32) int32 {
	if h < 0 {
		h = -h
	}
	if h < 0 {
		h = 0
	}
	return h
}

// topicKeyHash is keyHash(topic + "#" + string(key)) without building
// the string when both are ASCII (Java's String.hashCode is then the
// same recurrence over the bytes, continued across the parts).
func topicKeyHash(topic string, key []byte) int32 {
	var h int32
	for i := 0; i < len(topic); i++ {
		if topic[i] >= 0x80 {
			return keyHash(topic + "#" + string(key))
		}
		h = 31*h + int32(topic[i])
	}
	h = 31*h + '#'
	for _, c := range key {
		if c >= 0x80 {
			return keyHash(topic + "#" + string(key))
		}
		h = 31*h + int32(c)
	}
	return absHash(h)
}

// put adds an entry with key hash h; false when the file is full.
func (x *file) put(h int32, phy, storeTS int64) bool {
	n := x.count()
	if n >= x.indexNum {
		return false
	}
	slot := int(h) % x.slotNum
	sp := x.slotPos(slot)
	prev := int32(be.Uint32(x.data[sp:]))
	if prev < 0 || int(prev) >= n {
		prev = 0
	}
	if n == 1 {
		be.PutUint64(x.data[0:], uint64(storeTS))
		be.PutUint64(x.data[16:], uint64(phy))
	}
	diff := (storeTS - x.beginTS()) / 1000
	diff = max(0, min(diff, 1<<31-1))
	ep := x.entryPos(n)
	be.PutUint32(x.data[ep:], uint32(h))
	be.PutUint64(x.data[ep+4:], uint64(phy))
	be.PutUint32(x.data[ep+12:], uint32(diff))
	be.PutUint32(x.data[ep+16:], uint32(prev))
	if prev == 0 {
		be.PutUint32(x.data[32:], be.Uint32(x.data[32:])+1) // hashSlotCount
	}
	be.PutUint32(x.data[sp:], uint32(n))
	be.PutUint64(x.data[8:], uint64(storeTS))
	be.PutUint64(x.data[24:], uint64(phy))
	x.setCount(n + 1)
	x.dirty.Store(true)
	return true
}

// query appends to out the offsets of entries with key's hash stored in
// [begin, end] ms, newest first, up to max in total.
func (x *file) query(out []int64, key string, max int, begin, end int64) []int64 {
	n := x.count()
	h := keyHash(key)
	idx := int(int32(be.Uint32(x.data[x.slotPos(int(h)%x.slotNum):])))
	base := x.beginTS()
	for steps := 0; idx > 0 && idx < n && len(out) < max && steps < n; steps++ {
		ep := x.entryPos(idx)
		eh := int32(be.Uint32(x.data[ep:]))
		phy := int64(be.Uint64(x.data[ep+4:]))
		ts := base + int64(be.Uint32(x.data[ep+12:]))*1000
		prev := int(int32(be.Uint32(x.data[ep+16:])))
		// The time diff is truncated to seconds: widen the window by one.
		if eh == h && ts >= begin-1000 && ts <= end {
			out = append(out, phy)
		}
		if ts < begin-1000 || prev >= idx {
			break
		}
		idx = prev
	}
	return out
}
