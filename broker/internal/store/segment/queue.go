package segment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// QueueOptions configure a Queue.
type QueueOptions struct {
	// FileSize is the fixed size of every file.
	FileSize int64
	// Warm zero-fills new files before use (see the package comment).
	Warm bool
	// Preallocate creates the next file in the background as soon as a new
	// one is taken into use, so rolling over does not stall the writer.
	Preallocate bool
	// Mode is how files are written.
	Mode Mode
	// PrefaultHead, when positive, prefaults the first PrefaultHead bytes
	// of a file created in the background (File.Prefault; MapWrite only),
	// so the writer's first appends to it do not fault page by page. The
	// writer's own pre-toucher (commitlog) covers the rest.
	PrefaultHead int64
}

// Queue is the ordered list of the segment files in one directory: one
// logical byte stream from MinOffset to MaxOffset, each file covering
// [Base, Base+FileSize).
//
// One goroutine (the owner) writes: Ensure, Truncate, and writes to the
// last file. Find, Files, offsets and Flush are safe concurrently with it.
// RemoveFront may run concurrently with the writer but never removes the
// last file.
type Queue struct {
	dir  string
	opts QueueOptions

	mu    sync.RWMutex
	files []*File

	pmu     sync.Mutex
	pending *pendingFile
}

type pendingFile struct {
	base int64
	done chan struct{}
	f    *File
	err  error
}

// OpenQueue opens (creating if needed) the directory and maps every segment
// file in it. Leftover *.tmp files from a crash during creation are
// removed. Files must be contiguous. Every file starts out as fully written
// and flushed; the owner's recovery then calls Truncate with the real end.
func OpenQueue(dir string, opts QueueOptions) (*Queue, error) {
	if opts.FileSize <= 0 {
		return nil, fmt.Errorf("segment queue %s: file size %d", dir, opts.FileSize)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("segment queue: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("segment queue: %w", err)
	}
	q := &Queue{dir: dir, opts: opts}
	var bases []int64
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		if strings.HasSuffix(e.Name(), ".tmp") {
			os.Remove(filepath.Join(dir, e.Name()))
			continue
		}
		b, err := ParseName(e.Name())
		if err != nil {
			continue // foreign file; leave it alone
		}
		bases = append(bases, b)
	}
	slices.Sort(bases)
	for i, b := range bases {
		if b%opts.FileSize != 0 || (i > 0 && b != bases[i-1]+opts.FileSize) {
			q.Close()
			return nil, fmt.Errorf("segment queue %s: file %s is not contiguous with size %d", dir, Name(b), opts.FileSize)
		}
		f, err := Open(filepath.Join(dir, Name(b)), b, opts.FileSize, opts.Mode)
		if err != nil {
			q.Close()
			return nil, err
		}
		f.SetWrotePosition(opts.FileSize)
		f.SetFlushedPosition(opts.FileSize)
		q.files = append(q.files, f)
	}
	return q, nil
}

// Dir returns the queue's directory.
func (q *Queue) Dir() string { return q.dir }

// FileSize returns the fixed file size.
func (q *Queue) FileSize() int64 { return q.opts.FileSize }

// Files returns a snapshot of the files in order. The files are not
// acquired.
func (q *Queue) Files() []*File {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return slices.Clone(q.files)
}

// Len returns the number of files.
func (q *Queue) Len() int {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return len(q.files)
}

// Last returns the last file or nil.
func (q *Queue) Last() *File {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if len(q.files) == 0 {
		return nil
	}
	return q.files[len(q.files)-1]
}

// First returns the first file or nil.
func (q *Queue) First() *File {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if len(q.files) == 0 {
		return nil
	}
	return q.files[0]
}

// MinOffset returns the base of the first file (0 when empty).
func (q *Queue) MinOffset() int64 {
	if f := q.First(); f != nil {
		return f.Base()
	}
	return 0
}

// MaxOffset returns the end of the written data.
func (q *Queue) MaxOffset() int64 {
	if f := q.Last(); f != nil {
		return f.Base() + f.WrotePosition()
	}
	return 0
}

// FlushedOffset returns the end of the data known durable.
func (q *Queue) FlushedOffset() int64 {
	q.mu.RLock()
	defer q.mu.RUnlock()
	for i := len(q.files) - 1; i >= 0; i-- {
		if fl := q.files[i].FlushedPosition(); fl > 0 || i == 0 {
			return q.files[i].Base() + fl
		}
	}
	return 0
}

// Find returns the file containing offset, acquired (the caller must
// Release it), or nil when no live file holds it.
func (q *Queue) Find(offset int64) *File {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if len(q.files) == 0 || offset < q.files[0].Base() {
		return nil
	}
	i := int((offset - q.files[0].Base()) / q.opts.FileSize)
	if i >= len(q.files) {
		return nil
	}
	f := q.files[i]
	if !f.Acquire() {
		return nil
	}
	return f
}

// Ensure returns the file starting at base, creating it if it is the next
// one (or the first). Owner only.
func (q *Queue) Ensure(base int64) (*File, error) {
	if base%q.opts.FileSize != 0 {
		return nil, fmt.Errorf("segment queue %s: base %d not aligned to %d", q.dir, base, q.opts.FileSize)
	}
	q.mu.RLock()
	n := len(q.files)
	var last *File
	if n > 0 {
		last = q.files[n-1]
	}
	q.mu.RUnlock()
	if last != nil {
		if last.Base() == base {
			return last, nil
		}
		if base != last.Base()+q.opts.FileSize {
			return nil, fmt.Errorf("segment queue %s: new file %d does not follow %d", q.dir, base, last.Base())
		}
	}
	f, err := q.takePending(base)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	q.files = append(q.files, f)
	q.mu.Unlock()
	if q.opts.Preallocate {
		q.startPending(base + q.opts.FileSize)
	}
	return f, nil
}

func (q *Queue) takePending(base int64) (*File, error) {
	q.pmu.Lock()
	p := q.pending
	q.pending = nil
	q.pmu.Unlock()
	if p != nil {
		<-p.done
		if p.err == nil && p.base == base {
			return p.f, nil
		}
		if p.f != nil {
			p.f.Remove()
		}
	}
	return Create(filepath.Join(q.dir, Name(base)), base, q.opts.FileSize, q.opts.Warm, q.opts.Mode)
}

func (q *Queue) startPending(base int64) {
	p := &pendingFile{base: base, done: make(chan struct{})}
	q.pmu.Lock()
	old := q.pending
	q.pending = p
	q.pmu.Unlock()
	if old != nil {
		<-old.done
		if old.f != nil {
			old.f.Remove()
		}
	}
	go func() {
		defer close(p.done)
		p.f, p.err = Create(filepath.Join(q.dir, Name(base)), base, q.opts.FileSize, q.opts.Warm, q.opts.Mode)
		if p.err == nil && q.opts.PrefaultHead > 0 && q.opts.Mode == MapWrite {
			_ = p.f.Prefault(0, q.opts.PrefaultHead) // advisory: an error only costs speed
		}
	}()
}

// Truncate sets the end of the stream to end: later files are removed and
// the file containing end gets end as its written and flushed position.
// The first file is always kept, so the stream's start offset survives.
// Owner only; used by recovery.
func (q *Queue) Truncate(end int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	keep := q.files[:0]
	for _, f := range q.files {
		switch {
		case f.Base() >= end && len(keep) > 0:
			f.Remove()
		default:
			w := max(0, min(f.Size(), end-f.Base()))
			f.SetWrotePosition(w)
			f.SetFlushedPosition(w)
			keep = append(keep, f)
		}
	}
	clear(q.files[len(keep):])
	q.files = keep
}

// RemoveFront removes up to n files from the front, never the last one,
// and returns how many it removed. Readers holding a removed file keep a
// valid mapping until they release it.
func (q *Queue) RemoveFront(n int) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = min(n, len(q.files)-1)
	if n <= 0 {
		return 0
	}
	for _, f := range q.files[:n] {
		f.Remove()
	}
	q.files = slices.Delete(q.files, 0, n)
	return n
}

// RemoveAll removes every file (used when a consume queue's topic is
// deleted) and the directory if it is then empty.
func (q *Queue) RemoveAll() {
	q.dropPending()
	q.mu.Lock()
	for _, f := range q.files {
		f.Remove()
	}
	q.files = nil
	q.mu.Unlock()
	os.Remove(q.dir)
}

// Flush makes all written data durable and returns the flushed end offset.
// It may run concurrently with the writer; data written during the call
// may or may not be included.
func (q *Queue) Flush() (int64, error) {
	files := q.Files()
	var end int64
	for _, f := range files {
		if f.FlushedPosition() >= f.WrotePosition() {
			end = f.Base() + f.FlushedPosition()
			continue
		}
		fl, err := f.Flush()
		if err != nil && !errors.Is(err, ErrClosed) {
			return end, err
		}
		end = f.Base() + fl
	}
	return end, nil
}

// DirtyBytes returns how many written bytes are not yet flushed.
func (q *Queue) DirtyBytes() int64 {
	var d int64
	for _, f := range q.Files() {
		d += f.WrotePosition() - f.FlushedPosition()
	}
	return d
}

// WaitPreallocated blocks until the background creation of the next file
// (if any) has finished.
func (q *Queue) WaitPreallocated() {
	q.pmu.Lock()
	p := q.pending
	q.pmu.Unlock()
	if p != nil {
		<-p.done
	}
}

func (q *Queue) dropPending() {
	q.pmu.Lock()
	p := q.pending
	q.pending = nil
	q.pmu.Unlock()
	if p != nil {
		<-p.done
		if p.f != nil {
			p.f.Remove()
		}
	}
}

// Close unmaps every file (after readers release them) and removes an
// unused preallocated file. It does not flush.
func (q *Queue) Close() {
	q.dropPending()
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, f := range q.files {
		f.Close()
	}
	q.files = nil
}
