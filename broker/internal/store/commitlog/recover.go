package commitlog

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/tidemq/tide/broker/internal/store/segment"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// RecoverResult describes what Recover found.
type RecoverResult struct {
	Start     int64 // offset the scan started at
	End       int64 // end of the last valid record: the new write position
	Records   int64 // valid records scanned
	Truncated int64 // bytes of the invalid tail that were discarded (up to the segment end)
	Reason    error // why the scan stopped before the end of the data, nil at clean end
	// Skipped lists damage found inside a segment that is followed by a
	// valid one: the rest of that segment is unreadable (reads of it fail
	// their checks) but the log goes on, since later segments hold
	// records that were durable.
	Skipped []error
}

// nextSegmentValid reports whether files[i+1] exists and starts with a
// valid record at its base.
func (l *Log) nextSegmentValid(files []*segment.File, i int, checkCRC bool) bool {
	if i+1 >= len(files) {
		return false
	}
	n := files[i+1]
	v, err := protocol.ViewRecord(n.Data(), checkCRC)
	return err == nil && v.PhysicalOffset == n.Base()
}

// Recover finds the end of the valid data and makes it the write
// position. The scan starts at from, a record boundary known durable (the
// beginning of its segment if no record starts there; the first segment if
// from is not retained or negative) and validates each record's magic code, size, physical
// offset and, with checkCRC, body CRC. It stops at the first all-zero
// header (the unwritten, zero-filled rest of a segment) or the first
// invalid record: everything after it is a torn or corrupt tail and is
// zeroed, and later segments are deleted. Must run before Start, with no
// concurrent use.
func (l *Log) Recover(from int64, checkCRC bool) (RecoverResult, error) {
	files := l.q.Files()
	var res RecoverResult
	if len(files) == 0 {
		return res, nil
	}
	i := 0
	if from >= files[0].Base() {
		i = int((from - files[0].Base()) / l.opts.FileSize)
		if i >= len(files) {
			i = len(files) - 1
		}
	}
	// A checkpointed offset is a record boundary: start there, unless what
	// lies there is not a record (then rescan the segment from its start).
	start := files[i].Base()
	if from > start && from < files[i].Base()+l.opts.FileSize {
		b := files[i].Data()[from-start:]
		if _, err := protocol.ViewRecord(b, false); err == nil || errors.Is(err, protocol.ErrBlank) || isZero(b[:min(len(b), 8)]) {
			start = from
		}
	}
	res.Start = start
	end := start
scan:
	for ; i < len(files); i++ {
		f := files[i]
		data := f.Data()
		pos := max(0, start-f.Base())
		for pos < f.Size() {
			end = f.Base() + pos
			v, err := protocol.ViewRecord(data[pos:], checkCRC)
			switch {
			case errors.Is(err, protocol.ErrBlank):
				if int64(v.Size) != f.Size()-pos {
					err := fmt.Errorf("blank filler of %d bytes at %d, %d left in segment", v.Size, end, f.Size()-pos)
					if l.nextSegmentValid(files, i, checkCRC) {
						res.Skipped = append(res.Skipped, err)
						continue scan
					}
					res.Reason = err
					break scan
				}
				pos = f.Size()
				end = f.Base() + pos
				continue
			case err != nil:
				if v.Size == 0 && isZero(data[pos:min(pos+8, f.Size())]) {
					break scan // unwritten space: clean end
				}
				err = fmt.Errorf("at commit log offset %d: %w", end, err)
				if l.nextSegmentValid(files, i, checkCRC) {
					res.Skipped = append(res.Skipped, err)
					continue scan
				}
				res.Reason = err
				break scan
			case v.PhysicalOffset != end:
				err := fmt.Errorf("record at %d claims physical offset %d", end, v.PhysicalOffset)
				if l.nextSegmentValid(files, i, checkCRC) {
					res.Skipped = append(res.Skipped, err)
					continue scan
				}
				res.Reason = err
				break scan
			}
			pos += int64(v.Size)
			end = f.Base() + pos
			res.Records++
		}
	}
	res.End = end
	// A kill in the middle of copying a record can leave its later bytes
	// written and its header not: clear what follows a clean end too, up
	// to the largest possible record, and the whole rest after a bad one.
	window := int64(16 << 20)
	if res.Reason != nil {
		window = l.opts.FileSize
	}
	res.Truncated = l.zeroTail(end, window)
	l.q.Truncate(end)
	l.flushed.Store(end)
	return res, nil
}

// zeroTail clears non-zero pages after end in the segment holding end, so
// a torn record can never be mistaken for data after later appends.
func (l *Log) zeroTail(end, window int64) int64 {
	f := l.q.Find(end)
	if f == nil {
		return 0
	}
	defer f.Release()
	data := f.Data()
	pos := end - f.Base()
	var cleared int64
	const page = 4096
	limit := min(f.Size(), pos+window)
	for p := pos; p < limit; {
		next := min((p/page+1)*page, limit)
		if !isZero(data[p:next]) {
			f.WriteAt(zeroPage[:next-p], p)
			cleared = next - pos
		}
		p = next
	}
	if cleared > 0 {
		f.SetWrotePosition(f.Size())
		f.Flush()
	}
	return cleared
}

var zeroPage [4096]byte

func isZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), len(zeroPage))
		if !bytes.Equal(b[:n], zeroPage[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}
