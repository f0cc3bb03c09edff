package timer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
)

// ErrBadCheckpoint: the checkpoint file (and its .bak) cannot be decoded.
var ErrBadCheckpoint = errors.New("timer: bad checkpoint")

// checkpoint is the service's persisted progress over the timer topic's
// queue 0. Every timer below queue offset done is finished (delivered,
// recalled or lost); between done and scan exactly the timers whose commit
// log offsets are listed in pending are still to deliver; recall markers
// below scan have been applied. Units from scan on have not been looked at.
type checkpoint struct {
	scan    int64
	done    int64
	pending []int64 // ascending commit log offsets
}

const (
	checkpointMagic   = 0x5454434B // "TTCK"
	checkpointVersion = 1
	checkpointHeader  = 32
)

// encode renders the checkpoint (big-endian; uvarints are
// encoding/binary's):
//
//	off  size  field
//	  0     4  magic "TTCK"
//	  4     4  version (1)
//	  8     8  scan offset: next queue offset of the timer queue to read
//	 16     8  done offset: every timer below is finished
//	 24     8  n: number of pending timers between done and scan
//	 32     …  n uvarints: the first pending commit log offset, then the
//	           differences to the previous one (ascending, so > 0)
//	end-4   4  CRC32 (IEEE) of every byte before it
func (c *checkpoint) encode() []byte {
	b := make([]byte, checkpointHeader, checkpointHeader+2*len(c.pending)+8)
	be := binary.BigEndian
	be.PutUint32(b[0:], checkpointMagic)
	be.PutUint32(b[4:], checkpointVersion)
	be.PutUint64(b[8:], uint64(c.scan))
	be.PutUint64(b[16:], uint64(c.done))
	be.PutUint64(b[24:], uint64(len(c.pending)))
	prev := int64(0)
	for _, p := range c.pending {
		b = binary.AppendUvarint(b, uint64(p-prev))
		prev = p
	}
	return be.AppendUint32(b, crc32.ChecksumIEEE(b))
}

func decodeCheckpoint(b []byte) (checkpoint, error) {
	var c checkpoint
	be := binary.BigEndian
	if len(b) < checkpointHeader+4 {
		return c, fmt.Errorf("%w: %d bytes", ErrBadCheckpoint, len(b))
	}
	body := b[:len(b)-4]
	if crc32.ChecksumIEEE(body) != be.Uint32(b[len(b)-4:]) {
		return c, fmt.Errorf("%w: CRC mismatch", ErrBadCheckpoint)
	}
	if be.Uint32(body) != checkpointMagic || be.Uint32(body[4:]) != checkpointVersion {
		return c, fmt.Errorf("%w: magic or version", ErrBadCheckpoint)
	}
	c.scan, c.done = int64(be.Uint64(body[8:])), int64(be.Uint64(body[16:]))
	n := be.Uint64(body[24:])
	if c.done < 0 || c.scan < c.done || n > uint64(len(body)) {
		return c, fmt.Errorf("%w: scan %d done %d count %d", ErrBadCheckpoint, c.scan, c.done, n)
	}
	c.pending = make([]int64, 0, n)
	rest := body[checkpointHeader:]
	prev := int64(0)
	for range n {
		d, k := binary.Uvarint(rest)
		// Canonical encodings only, so a checkpoint has one byte form.
		if k <= 0 || k != max(1, (bits.Len64(d)+6)/7) || d > 1<<62 || (len(c.pending) > 0 && d == 0) {
			return c, fmt.Errorf("%w: pending list", ErrBadCheckpoint)
		}
		prev += int64(d)
		c.pending = append(c.pending, prev)
		rest = rest[k:]
	}
	if len(rest) != 0 {
		return c, fmt.Errorf("%w: %d trailing bytes", ErrBadCheckpoint, len(rest))
	}
	return c, nil
}

// saveCheckpoint replaces path atomically: the new content goes to a
// temporary file that is fsynced, the current file becomes path.bak, the
// temporary file is renamed to path, and the directory is fsynced. A
// crash at any point leaves a decodable path or path.bak.
func saveCheckpoint(path string, c *checkpoint) error {
	return writeCheckpoint(path, c.encode())
}

// ReplaceCheckpoint validates b, a checkpoint as Service.Checkpoint
// returns it (a slave copies its master's with the metadata sync), and
// replaces the file at path with it as the service's own writes do. A
// service started later on this store (a promoted slave) resumes from it.
// It must not be called for the path of a running service.
func ReplaceCheckpoint(path string, b []byte) error {
	if _, err := decodeCheckpoint(b); err != nil {
		return err
	}
	return writeCheckpoint(path, b)
}

// writeCheckpoint is saveCheckpoint for an encoded checkpoint.
func writeCheckpoint(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("timer: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("timer: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("timer: write checkpoint: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("timer: sync checkpoint: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("timer: %w", err)
	}
	if err := os.Rename(path, path+".bak"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("timer: keep previous checkpoint: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("timer: rename checkpoint: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// loadCheckpoint reads path, falling back to path.bak when path is
// missing or does not decode. found is false when neither exists.
func loadCheckpoint(path string) (c checkpoint, found bool, err error) {
	var errs []error
	for _, p := range []string{path, path + ".bak"} {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("timer: %w", err))
			continue
		}
		c, err := decodeCheckpoint(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		return c, true, nil
	}
	if len(errs) > 0 {
		return c, false, errors.Join(errs...)
	}
	return c, false, nil
}
