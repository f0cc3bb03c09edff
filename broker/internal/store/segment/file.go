package segment

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
)

// Mode selects how a File is written.
type Mode int

// Write modes.
const (
	// MapWrite maps the file read-write; WriteAt copies into the mapping.
	MapWrite Mode = iota
	// PWrite maps the file read-only; WriteAt uses pwrite(2).
	PWrite
	// MapWriteSparse is MapWrite on a sparse file: blocks are allocated on
	// first write, not reserved at creation. For consume queues and index
	// files, which are many, mostly small in use, and written by the
	// dispatcher (a full disk stops appends first, see store.ErrDiskFull).
	MapWriteSparse
)

// Sentinel errors of the package.
var (
	// ErrClosed: the file was closed or removed.
	ErrClosed = errors.New("segment closed")
	// ErrOutOfRange: an access past the end of the file.
	ErrOutOfRange = errors.New("segment access out of range")
	// ErrBadName: a file in a segment directory is not named by a 20-digit offset.
	ErrBadName = errors.New("segment name is not a 20-digit offset")
)

// Name returns the file name of a segment starting at base: its offset as
// 20 zero-padded decimal digits, as RocketMQ names them.
func Name(base int64) string { return fmt.Sprintf("%020d", base) }

// ParseName parses a segment file name back to its base offset.
func ParseName(name string) (int64, error) {
	if len(name) != 20 {
		return 0, fmt.Errorf("%w: %q", ErrBadName, name)
	}
	v, err := strconv.ParseInt(name, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%w: %q", ErrBadName, name)
	}
	return v, nil
}

// File is one fixed-size segment mapped into memory.
//
// Writes (WriteAt, SetWrotePosition) must be serialized by the owner;
// reads through Acquire/Data/Release and the position getters are safe
// from any goroutine at any time. The mapping stays valid while a
// reference taken with Acquire is held, even if Remove is called
// concurrently: the unmap happens when the last reference is released.
type File struct {
	path string
	base int64
	size int64
	fd   *os.File
	data []byte
	mode Mode

	wrote   atomic.Int64 // bytes written and visible to readers
	flushed atomic.Int64 // bytes known durable
	refs    atomic.Int64 // 1 for the owner plus one per Acquire
	closed  atomic.Bool
	remove  atomic.Bool
}

// Create creates a new segment file of size bytes at path, reserves its
// blocks (fallocate, so a full disk fails here and not later with SIGBUS
// on a mapped write) and, with warm, zero-fills it so that later writes
// overwrite already allocated pages. An existing file is replaced.
func Create(path string, base, size int64, warm bool, mode Mode) (*File, error) {
	tmp := path + ".tmp"
	fd, err := os.OpenFile(tmp, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", err)
	}
	fail := func(err error) (*File, error) {
		fd.Close()
		os.Remove(tmp)
		return nil, err
	}
	if err := reserve(fd, size, mode); err != nil {
		return fail(fmt.Errorf("preallocate segment %s: %w", path, err))
	}
	if warm {
		if err := zeroFill(fd, tmp, size, mode); err != nil {
			return fail(fmt.Errorf("warm segment %s: %w", path, err))
		}
		// Writing the zeros out turns fallocate's unwritten extents into
		// written ones now, so later fdatasyncs carry data only and no
		// extent conversion (journal commit) each time.
		if err := syscall.Fdatasync(int(fd.Fd())); err != nil {
			return fail(fmt.Errorf("warm segment %s: %w", path, err))
		}
	}
	// The rename makes a half-created file invisible to a recovery that
	// runs after a crash during creation.
	if err := os.Rename(tmp, path); err != nil {
		return fail(fmt.Errorf("create segment: %w", err))
	}
	return mapFile(fd, path, base, size, mode)
}

// zeroChunk is the size of one zero-fill write.
const zeroChunk = 1 << 20

// zeroFill writes zeros over the whole file.
//
// A PWrite file is filled with O_DIRECT writes when the file system allows
// them: the zeros go from one aligned buffer to the device without passing
// through the page cache. Buffered, the fill cost about 0.5 ms of CPU per
// MiB (copying into 256 Ki page-cache pages per GiB, then writing them
// back): 19-24% of a SYNC_FLUSH store's CPU at 120-200 MB/s of appends.
// Direct, it cost a fifth to a tenth of that (docs/store.md). The pages are then not cached, so a pwrite that
// ends inside a page would first read it from disk: PWrite writers write
// whole pages (the commit log pads each group to a page end with zeros,
// which the file holds there anyway). MapWrite files are filled through
// the page cache, because that is what makes first writes through the
// mapping fast (see the package comment).
func zeroFill(fd *os.File, path string, size int64, mode Mode) error {
	if mode == PWrite && size%4096 == 0 && directZeroFill(path, size) == nil {
		return nil
	}
	zero := make([]byte, zeroChunk)
	for off := int64(0); off < size; off += int64(len(zero)) {
		n := min(int64(len(zero)), size-off)
		if _, err := fd.WriteAt(zero[:n], off); err != nil {
			return err
		}
	}
	return nil
}

// directZeroFill zero-fills path with O_DIRECT writes. An error (O_DIRECT
// unsupported, as on tmpfs) leaves the caller to fill it buffered.
func directZeroFill(path string, size int64) error {
	dfd, err := os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return err
	}
	defer dfd.Close()
	// An anonymous mapping is page aligned, as O_DIRECT needs, and reads
	// as zeros without ever being written.
	zero, err := syscall.Mmap(-1, 0, zeroChunk, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return err
	}
	defer syscall.Munmap(zero)
	for off := int64(0); off < size; off += zeroChunk {
		n := min(zeroChunk, size-off)
		if _, err := dfd.WriteAt(zero[:n], off); err != nil {
			return err
		}
	}
	return nil
}

// Open maps an existing segment file. A file shorter than size (a crash
// between create and preallocate in another implementation, or a copy) is
// extended; a longer one is an error.
func Open(path string, base, size int64, mode Mode) (*File, error) {
	fd, err := os.OpenFile(path, os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open segment: %w", err)
	}
	st, err := fd.Stat()
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("open segment: %w", err)
	}
	if st.Size() > size {
		fd.Close()
		return nil, fmt.Errorf("open segment %s: size %d exceeds configured %d", path, st.Size(), size)
	}
	if st.Size() < size {
		if err := reserve(fd, size, mode); err != nil {
			fd.Close()
			return nil, fmt.Errorf("extend segment %s: %w", path, err)
		}
	}
	return mapFile(fd, path, base, size, mode)
}

func reserve(fd *os.File, size int64, mode Mode) error {
	if mode == MapWriteSparse {
		return fd.Truncate(size)
	}
	err := syscall.Fallocate(int(fd.Fd()), 0, 0, size)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return fd.Truncate(size)
	}
	return err
}

func mapFile(fd *os.File, path string, base, size int64, mode Mode) (*File, error) {
	prot := syscall.PROT_READ
	if mode != PWrite {
		prot |= syscall.PROT_WRITE
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, int(size), prot, syscall.MAP_SHARED)
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("mmap segment %s: %w", path, err)
	}
	if mode == MapWriteSparse {
		// No fault-around/readahead for consume queue and index files. A
		// fault on a hole otherwise zero-fills a whole readahead window
		// (up to megabytes with large folios) to store one 20-byte unit:
		// with 8,000 queues written round robin that memset was two thirds
		// of the broker's CPU (docs/benchmarks/analysis.md, scale). Their
		// readers stay on recently written, cached pages. Advisory: an
		// error only costs speed.
		_ = syscall.Madvise(data, syscall.MADV_RANDOM)
	}
	f := &File{path: path, base: base, size: size, fd: fd, data: data, mode: mode}
	f.refs.Store(1)
	return f, nil
}

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// Base returns the logical offset of the file's first byte.
func (f *File) Base() int64 { return f.base }

// Size returns the file's fixed size.
func (f *File) Size() int64 { return f.size }

// WrotePosition returns how many bytes from the start are written and
// readable.
func (f *File) WrotePosition() int64 { return f.wrote.Load() }

// SetWrotePosition publishes n as the written length; readers may read
// below it. Owner only.
func (f *File) SetWrotePosition(n int64) { f.wrote.Store(n) }

// FlushedPosition returns how many bytes are known durable.
func (f *File) FlushedPosition() int64 { return f.flushed.Load() }

// SetFlushedPosition sets the durable length (used by recovery, where the
// data found on disk is taken as flushed).
func (f *File) SetFlushedPosition(n int64) { f.flushed.Store(n) }

// Full reports whether the written position reached the end.
func (f *File) Full() bool { return f.wrote.Load() >= f.size }

// WriteAt writes p into the file at relative offset off (pwrite or a copy
// into the mapping, by mode); readers see it through Data at once. It does
// not move the written position and fails with ErrClosed on a closed file.
// Writes must be serialized by the owner.
func (f *File) WriteAt(p []byte, off int64) error {
	if off < 0 || off+int64(len(p)) > f.size {
		return fmt.Errorf("%w: write %d bytes at %d in %d", ErrOutOfRange, len(p), off, f.size)
	}
	// The reference keeps a file that is being deleted concurrently (a
	// topic removal racing the dispatcher) mapped until the write is done.
	if !f.Acquire() {
		return fmt.Errorf("%w: %s", ErrClosed, f.path)
	}
	defer f.Release()
	if f.mode == PWrite {
		if _, err := f.fd.WriteAt(p, off); err != nil {
			return fmt.Errorf("write segment %s: %w", f.path, err)
		}
		return nil
	}
	copy(f.data[off:], p)
	return nil
}

// madvPopulateWrite is Linux's MADV_POPULATE_WRITE (5.14 and later; the
// syscall package does not name it).
const madvPopulateWrite = 23

// ErrPrefaultUnsupported: the kernel has no MADV_POPULATE_WRITE (before
// Linux 5.14), or the file is not written through its mapping.
var ErrPrefaultUnsupported = errors.New("segment prefault unsupported")

// Prefault makes the pages of [off, off+n) (widened to whole pages, cut at
// the end of the file) present and writable in the mapping of a MapWrite
// file, with one madvise(MADV_POPULATE_WRITE): the page-cache allocation,
// zeroing and write fault that a first copy into each page would take
// happen here instead, on the caller's goroutine, at a fraction of the
// CPU of one fault per page (docs/store.md, "Commit log pre-touch").
//
// It writes nothing: every byte keeps the value the file holds (zeros
// past the written end of a fallocated file), so recovery cannot mistake
// a prefaulted page for records. The pages become dirty, so the next
// flush may write them back as they are. A failure (e.g. a page that could
// not be allocated) is harmless: a later write faults as it would have
// anyway. Safe concurrently with WriteAt and readers; it fails with
// ErrClosed on a closed file and with ErrPrefaultUnsupported on PWrite and
// MapWriteSparse files or a kernel without MADV_POPULATE_WRITE.
func (f *File) Prefault(off, n int64) error {
	if f.mode != MapWrite {
		return ErrPrefaultUnsupported
	}
	const page = 4096
	start := max(0, off) &^ (page - 1)
	end := min(f.size, (off+n+page-1)&^(page-1))
	if start >= end {
		return nil
	}
	if !f.Acquire() {
		return fmt.Errorf("%w: %s", ErrClosed, f.path)
	}
	defer f.Release()
	err := syscall.Madvise(f.data[start:end], madvPopulateWrite)
	if errors.Is(err, syscall.EINVAL) {
		return ErrPrefaultUnsupported
	}
	if err != nil {
		return fmt.Errorf("prefault segment %s: %w", f.path, err)
	}
	return nil
}

// Acquire takes a reference that keeps the mapping valid. It returns false
// when the file is already closed. Every successful Acquire must be
// matched by a Release.
func (f *File) Acquire() bool {
	for {
		r := f.refs.Load()
		if r <= 0 || f.closed.Load() {
			return false
		}
		if f.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// Release drops a reference taken with Acquire.
func (f *File) Release() {
	if f.refs.Add(-1) == 0 {
		f.destroy()
	}
}

// Data returns the whole mapping. The slice is valid only while the caller
// holds a reference (Acquire); only the owner of a MapWrite file may write
// it (a PWrite file's mapping is read-only: use WriteAt).
func (f *File) Data() []byte { return f.data }

// Linux lseek whences (the syscall package does not name them).
const (
	seekData = 3
	seekHole = 4
)

// DataEnd returns an offset from which on the file holds only holes
// (blocks never written), as lseek SEEK_DATA/SEEK_HOLE tell: bytes past it
// read as zero. Pages dirtied through the mapping count as data. Where the
// file system cannot tell (no SEEK_HOLE support reports the whole file as
// data) or on an error it returns Size. A recovery scanning for the last
// written unit starts there instead of reading (and faulting in) the
// zero tail of a sparse file. It moves the descriptor's file offset,
// which nothing else uses; call it when no other DataEnd runs.
func (f *File) DataEnd() int64 {
	end, pos := int64(0), int64(0)
	for pos < f.size {
		d, err := syscall.Seek(int(f.fd.Fd()), pos, seekData)
		if errors.Is(err, syscall.ENXIO) {
			break // no data at or after pos
		}
		if err != nil {
			return f.size
		}
		h, err := syscall.Seek(int(f.fd.Fd()), d, seekHole)
		if err != nil {
			return f.size
		}
		end, pos = h, h
	}
	return min(end, f.size)
}

// Flush makes everything written so far durable (fdatasync) and returns
// the new flushed position.
func (f *File) Flush() (int64, error) {
	w := f.wrote.Load()
	if f.flushed.Load() >= w {
		return w, nil
	}
	if !f.Acquire() {
		return f.flushed.Load(), ErrClosed
	}
	defer f.Release()
	if err := syscall.Fdatasync(int(f.fd.Fd())); err != nil {
		return f.flushed.Load(), fmt.Errorf("flush segment %s: %w", f.path, err)
	}
	f.flushed.Store(w)
	return w, nil
}

// ModTime returns the file's modification time in Unix milliseconds.
func (f *File) ModTime() int64 {
	st, err := os.Stat(f.path)
	if err != nil {
		return 0
	}
	return st.ModTime().UnixMilli()
}

// Close drops the owner reference; the mapping and descriptor are released
// once no reader holds the file. Idempotent.
func (f *File) Close() {
	if f.closed.CompareAndSwap(false, true) {
		f.Release()
	}
}

// Remove deletes the file from disk now and closes it; readers holding a
// reference keep a valid mapping of the unlinked file until they release
// it.
func (f *File) Remove() {
	if f.remove.CompareAndSwap(false, true) {
		os.Remove(f.path)
	}
	f.Close()
}

func (f *File) destroy() {
	syscall.Munmap(f.data)
	f.data = nil
	f.fd.Close()
}
