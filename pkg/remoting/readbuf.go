package remoting

import (
	"errors"
	"io"
	"math/bits"
	"sync"
)

// A connection's read buffer adapts to its traffic, as nats-server's client
// read buffer does: it starts at minReadBuffer, doubles (up to
// maxReadBuffer) when a read fills it, and is swapped for a smaller one
// after shortReadsToShrink reads in a row that filled less than half of
// it. Most connections are idle most of the time (10,000 of them in the
// scale run): with a fixed 32 KiB buffer each held 32 KiB of heap the
// collector counts, now a quiet one holds about 1 KiB; a busy one still
// reads everything that arrived in one read.
const (
	minReadBuffer      = 512
	maxReadBuffer      = 64 << 10
	shortReadsToShrink = 2
	// maxEmptyReads: a reader returning no bytes and no error this many
	// times in a row fails with io.ErrNoProgress (as bufio.Reader does).
	maxEmptyReads = 100
	// readBufClasses: minReadBuffer << i for i < readBufClasses.
	readBufClasses = 8
)

// readBufPools holds the buffers of each size class (minReadBuffer << i),
// so that a resize or a closed connection hands its buffer to the next.
var readBufPools [readBufClasses]sync.Pool

func readBufClass(size int) int { return bits.Len(uint(size/minReadBuffer)) - 1 }

func getReadBuf(size int) *[]byte {
	if bp, ok := readBufPools[readBufClass(size)].Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, size)
	return &b
}

// readBuf is a buffered reader of one connection, used only by its read
// loop (not safe for concurrent use). Like bufio.Reader it returns buffered
// bytes first, reads once per call when empty, and reads straight into
// the caller's slice when that is at least as large as the buffer (a large
// frame body is not copied twice). It resizes only while empty, so a
// resize never moves pending bytes.
type readBuf struct {
	rd     io.Reader
	bp     *[]byte // the buffer, from readBufPools; nil once released
	r, w   int     // (*bp)[r:w] is buffered
	err    error   // the error of the last read, returned once the buffer is drained
	grow   bool    // the last read filled the buffer: double it before the next
	shorts int     // reads in a row under half the buffer
	peak   int     // the largest of those reads
}

func newReadBuf(rd io.Reader) *readBuf {
	return &readBuf{rd: rd, bp: getReadBuf(minReadBuffer)}
}

// Buffered returns the number of bytes that can be read without a read
// from the connection.
func (b *readBuf) Buffered() int { return b.w - b.r }

// peek returns the buffered bytes without consuming them; they are valid
// until the next Read.
func (b *readBuf) peek() []byte { return (*b.bp)[b.r:b.w] }

// size is the buffer's current size.
func (b *readBuf) size() int { return len(*b.bp) }

// Read reads up to len(p) bytes (io.Reader).
func (b *readBuf) Read(p []byte) (int, error) {
	if len(p) == 0 {
		if b.Buffered() > 0 {
			return 0, nil
		}
		return 0, b.readErr()
	}
	if b.r == b.w {
		if b.err != nil {
			return 0, b.readErr()
		}
		if len(p) >= b.size() {
			// Nothing buffered and a large read: straight into p.
			n, err := b.rd.Read(p)
			if n < 0 {
				return 0, errNegativeRead
			}
			return n, err
		}
		b.fill()
		if b.r == b.w {
			return 0, b.readErr()
		}
	}
	n := copy(p, (*b.bp)[b.r:b.w])
	b.r += n
	return n, nil
}

func (b *readBuf) readErr() error {
	err := b.err
	b.err = nil
	return err
}

// errNegativeRead is the read error of a reader that returned a negative
// count (a broken io.Reader; bufio.Reader panics on it): the connection
// fails with it as with any other read error.
var errNegativeRead = errors.New("remoting: reader returned negative count from Read")

// fill reads once into the empty buffer, resized first as the previous
// reads asked. A read's error, io.ErrNoProgress after maxEmptyReads empty
// reads, or errNegativeRead is kept in b.err.
func (b *readBuf) fill() {
	b.resize()
	b.r, b.w = 0, 0
	buf := *b.bp
	for range maxEmptyReads {
		n, err := b.rd.Read(buf)
		if n < 0 {
			b.err = errNegativeRead
			return
		}
		b.w = n
		if n > 0 {
			b.adapt(n)
		}
		if err != nil {
			b.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	b.err = io.ErrNoProgress
}

// adapt records a read of n bytes for the next resize.
func (b *readBuf) adapt(n int) {
	switch size := b.size(); {
	case n == size:
		b.grow = size < maxReadBuffer
		b.shorts, b.peak = 0, 0
	case n < size/2:
		b.shorts++
		b.peak = max(b.peak, n)
	default:
		b.shorts, b.peak = 0, 0
	}
}

// resize swaps the (empty) buffer for a larger one after a read filled
// it, or for one twice the largest of the recent short reads after
// shortReadsToShrink of them.
func (b *readBuf) resize() {
	size := b.size()
	next := size
	switch {
	case b.grow:
		next = size * 2
	case b.shorts >= shortReadsToShrink && size > minReadBuffer:
		next = max(minReadBuffer, 1<<bits.Len(uint(2*b.peak-1)))
	}
	b.grow = false
	if next == size {
		return
	}
	if next < size {
		b.shorts, b.peak = 0, 0
	}
	b.putBuf()
	b.bp = getReadBuf(next)
}

// release hands the buffer back to the pool; b must not be read after.
func (b *readBuf) release() {
	if b.bp != nil {
		b.putBuf()
		b.bp = nil
	}
}

func (b *readBuf) putBuf() {
	readBufPools[readBufClass(b.size())].Put(b.bp)
}
