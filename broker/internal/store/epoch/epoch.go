// Package epoch keeps a broker's epoch file: for every master epoch the
// broker's commit log has data from, the commit log offset where that
// epoch's data starts (RocketMQ 5's EpochFileCache, store/ha/autoswitch).
// In controller mode a master appends (epoch, its max offset) when the
// controller makes it master; a replica that rejoins compares its entries
// with the new master's (ConsistentPoint) and truncates its commit log and
// this file beyond the last offset both agree on (the broker's
// roleswitch.go does both, docs/controller.md).
//
// # Entries
//
// Entries are ordered by epoch, and both epochs and start offsets strictly
// increase. Each entry's EndOffset is the next entry's StartOffset; the
// last entry's is math.MaxInt64 (open) unless SetLastEndOffset bounded it
// in memory.
//
// # File format
//
// RocketMQ's CheckpointFile text, so a RocketMQ broker's
// epochFileCheckpoint reads here and the other way round:
//
//	<number of entries>\n
//	<crc32 of the entry lines, & 0x7fffffff>\n
//	<epoch>-<startOffset>\n      (one line per entry)
//
// Every change rewrites the file atomically (temporary file, fsync,
// rename, fsync of the directory): a crash leaves the old or the new
// entries. Unlike RocketMQ, truncating every entry writes an empty file
// instead of leaving the old one in place.
//
// A File is safe for concurrent use.
package epoch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// FileName is the file's name in the store root (RocketMQ's
// getStorePathEpochFile).
const FileName = "epochFileCheckpoint"

// OpenEnd is the EndOffset of the last (open) entry.
const OpenEnd = math.MaxInt64

// Sentinel errors.
var (
	// ErrNotIncreasing: an appended entry's epoch or start offset is not
	// above the last entry's.
	ErrNotIncreasing = errors.New("epoch: entry does not increase epoch and start offset")
	// ErrCorrupt: the file's count, CRC or lines are wrong.
	ErrCorrupt = errors.New("epoch: file corrupt")
)

// Entry is one epoch and the commit log range written under it.
type Entry struct {
	Epoch       int32
	StartOffset int64
	EndOffset   int64
}

// File is the epoch entries, persisted at a path (or in memory only).
type File struct {
	mu      sync.RWMutex
	path    string
	entries []Entry
}

// NewMemory returns a File that is never persisted (a peer's entries, or
// tests).
func NewMemory(entries []Entry) (*File, error) {
	f := &File{}
	if err := f.Reset(entries); err != nil {
		return nil, err
	}
	return f, nil
}

// Open loads the file at path; a missing file is an empty File that will
// be created on the first change.
func Open(path string) (*File, error) {
	f := &File{path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("epoch: %w", err)
	}
	entries, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	f.entries = link(entries)
	return f, nil
}

// Path returns the file's path ("" in memory).
func (f *File) Path() string { return f.path }

// Append adds an entry for a new epoch starting at startOffset and closes
// the previous entry there. Both must be above the last entry's.
func (f *File) Append(epoch int32, startOffset int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.entries); n > 0 {
		last := f.entries[n-1]
		if last.Epoch >= epoch || last.StartOffset >= startOffset {
			return fmt.Errorf("%w: last %d@%d, new %d@%d", ErrNotIncreasing, last.Epoch, last.StartOffset, epoch, startOffset)
		}
	}
	next := append(cloneEntries(f.entries), Entry{Epoch: epoch, StartOffset: startOffset})
	return f.replace(link(next))
}

// Reset replaces every entry (the Java initCacheFromEntries); EndOffsets
// are recomputed. The entries must increase.
func (f *File) Reset(entries []Entry) error {
	es := cloneEntries(entries)
	for i := 1; i < len(es); i++ {
		if es[i].Epoch <= es[i-1].Epoch || es[i].StartOffset <= es[i-1].StartOffset {
			return fmt.Errorf("%w: entry %d (%d@%d) after %d@%d", ErrNotIncreasing, i, es[i].Epoch, es[i].StartOffset,
				es[i-1].Epoch, es[i-1].StartOffset)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.replace(link(es))
}

// SetLastEndOffset bounds the last entry at the commit log's end (in
// memory only, as RocketMQ: the file keeps start offsets only). An end
// below the entry's start is ignored.
func (f *File) SetLastEndOffset(end int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.entries); n > 0 && f.entries[n-1].StartOffset <= end {
		f.entries[n-1].EndOffset = end
	}
}

// Entries returns a copy of the entries.
func (f *File) Entries() []Entry {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return cloneEntries(f.entries)
}

// Len returns the number of entries.
func (f *File) Len() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.entries)
}

// First returns the first entry.
func (f *File) First() (Entry, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if len(f.entries) == 0 {
		return Entry{}, false
	}
	return f.entries[0], true
}

// Last returns the last entry.
func (f *File) Last() (Entry, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if len(f.entries) == 0 {
		return Entry{}, false
	}
	return f.entries[len(f.entries)-1], true
}

// LastEpoch returns the last entry's epoch, or -1 without entries.
func (f *File) LastEpoch() int32 {
	if e, ok := f.Last(); ok {
		return e.Epoch
	}
	return -1
}

// Get returns the entry of an epoch.
func (f *File) Get(epoch int32) (Entry, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	i, ok := f.index(epoch)
	if !ok {
		return Entry{}, false
	}
	return f.entries[i], true
}

// Next returns the first entry of an epoch above epoch.
func (f *File) Next(epoch int32) (Entry, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	i := sort.Search(len(f.entries), func(i int) bool { return f.entries[i].Epoch > epoch })
	if i == len(f.entries) {
		return Entry{}, false
	}
	return f.entries[i], true
}

// FindByOffset returns the entry whose range holds offset
// (StartOffset <= offset < EndOffset).
func (f *File) FindByOffset(offset int64) (Entry, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, e := range f.entries {
		if e.StartOffset <= offset && offset < e.EndOffset {
			return e, true
		}
	}
	return Entry{}, false
}

// ConsistentPoint returns the commit log offset up to which this log and
// a peer's agree: going down from the newest epoch, the first epoch both
// have with the same start offset; the point is the lower of the two
// entries' end offsets. -1 if they share no epoch (the replica must
// truncate everything). Bound each side's last entry with
// SetLastEndOffset first, or the point of a shared last epoch is open.
func (f *File) ConsistentPoint(peer []Entry) int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	byEpoch := make(map[int32]Entry, len(peer))
	for _, e := range peer {
		byEpoch[e.Epoch] = e
	}
	for i := len(f.entries) - 1; i >= 0; i-- {
		local := f.entries[i]
		if p, ok := byEpoch[local.Epoch]; ok && p.StartOffset == local.StartOffset {
			return min(local.EndOffset, p.EndOffset)
		}
	}
	return -1
}

// TruncateSuffixByEpoch removes the entries of epoch and above; the new
// last entry is open again.
func (f *File) TruncateSuffixByEpoch(epoch int32) error {
	return f.truncateSuffix(func(e Entry) bool { return e.Epoch >= epoch })
}

// TruncateSuffixByOffset removes the entries starting at offset or above
// (the commit log was truncated to offset); the new last entry is open.
func (f *File) TruncateSuffixByOffset(offset int64) error {
	return f.truncateSuffix(func(e Entry) bool { return e.StartOffset >= offset })
}

func (f *File) truncateSuffix(drop func(Entry) bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	keep := make([]Entry, 0, len(f.entries))
	for _, e := range f.entries {
		if !drop(e) {
			keep = append(keep, e)
		}
	}
	if n := len(keep); n > 0 {
		keep[n-1].EndOffset = OpenEnd
	}
	return f.replace(keep)
}

// TruncatePrefixByOffset removes the entries that end at or below offset
// (the commit log's head was deleted up to offset).
func (f *File) TruncatePrefixByOffset(offset int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	keep := make([]Entry, 0, len(f.entries))
	for _, e := range f.entries {
		if e.EndOffset > offset {
			keep = append(keep, e)
		}
	}
	return f.replace(keep)
}

// replace persists entries, then adopts them; on a write error the File
// keeps its old entries. Called with mu held.
func (f *File) replace(entries []Entry) error {
	if f.path != "" {
		if err := writeAtomic(f.path, encode(entries)); err != nil {
			return err
		}
	}
	f.entries = entries
	return nil
}

func (f *File) index(epoch int32) (int, bool) {
	i := sort.Search(len(f.entries), func(i int) bool { return f.entries[i].Epoch >= epoch })
	return i, i < len(f.entries) && f.entries[i].Epoch == epoch
}

// link sets each entry's EndOffset to the next one's start, the last open.
func link(es []Entry) []Entry {
	for i := range es {
		if i+1 < len(es) {
			es[i].EndOffset = es[i+1].StartOffset
		} else {
			es[i].EndOffset = OpenEnd
		}
	}
	return es
}

func cloneEntries(es []Entry) []Entry { return append([]Entry(nil), es...) }

func encode(es []Entry) []byte {
	var lines bytes.Buffer
	for _, e := range es {
		fmt.Fprintf(&lines, "%d-%d\n", e.Epoch, e.StartOffset)
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "%d\n%d\n", len(es), javaCRC(lines.Bytes()))
	out.Write(lines.Bytes())
	return out.Bytes()
}

// javaCRC is RocketMQ's UtilAll.crc32: CRC-32 (IEEE) masked to 31 bits.
func javaCRC(b []byte) int32 { return int32(crc32.ChecksumIEEE(b) & 0x7fffffff) }

func decode(b []byte) ([]Entry, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	var header []string
	for len(header) < 2 && sc.Scan() {
		header = append(header, strings.TrimSpace(sc.Text()))
	}
	if len(header) < 2 {
		return nil, errors.New("missing count or crc line")
	}
	count, err1 := strconv.Atoi(header[0])
	crc, err2 := strconv.ParseInt(header[1], 10, 32)
	if err1 != nil || err2 != nil || count < 0 {
		return nil, fmt.Errorf("bad header %q", header)
	}
	var lines bytes.Buffer
	var es []Entry
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		lines.WriteString(line + "\n")
		ep, off, ok := strings.Cut(line, "-")
		e, err1 := strconv.ParseInt(ep, 10, 32)
		o, err2 := strconv.ParseInt(off, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad entry line %q", line)
		}
		es = append(es, Entry{Epoch: int32(e), StartOffset: o})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(es) != count {
		return nil, fmt.Errorf("%d entries, header says %d", len(es), count)
	}
	if crc != 0 && int32(crc) != javaCRC(lines.Bytes()) { // 0: RocketMQ's "do not check"
		return nil, errors.New("crc mismatch")
	}
	for i := 1; i < len(es); i++ {
		if es[i].Epoch <= es[i-1].Epoch || es[i].StartOffset <= es[i-1].StartOffset {
			return nil, fmt.Errorf("entries do not increase at line %d", i+3)
		}
	}
	return es, nil
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("epoch: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("epoch: write %s: %w", path, err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("epoch: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("epoch: sync dir: %w", err)
	}
	return nil
}
