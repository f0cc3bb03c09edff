// Package checkpoint persists which parts of the store are known durable,
// so recovery after a crash scans only what may be torn.
//
// File layout (big-endian, 44 bytes; the first 24 match RocketMQ's
// StoreCheckpoint so its tools read the timestamps):
//
//	off size field
//	  0    8 physicMsgTimestamp  store time of the last flushed commit log record
//	  8    8 logicsMsgTimestamp  store time of the last record whose consume queue units are flushed
//	 16    8 indexMsgTimestamp   store time of the last record whose index entries are flushed
//	 24    8 physicOffset        commit log end known durable
//	 32    8 logicsOffset        commit log offset below which consume queues and index are durable
//	 40    4 crc32 (IEEE) of bytes 0..39
//
// The file is replaced atomically (temporary file, fsync, rename, fsync of
// the directory), so a crash leaves either the old or the new contents.
package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
)

// Size is the encoded size of a checkpoint.
const Size = 44

// Sentinel errors.
var (
	// ErrCorrupt: the file exists but its CRC or size is wrong.
	ErrCorrupt = errors.New("checkpoint corrupt")
)

// Checkpoint is the durable-state record.
type Checkpoint struct {
	PhysicTimestamp int64
	LogicsTimestamp int64
	IndexTimestamp  int64
	PhysicOffset    int64
	LogicsOffset    int64
}

// Encode renders c in the file layout.
func (c Checkpoint) Encode() []byte {
	b := make([]byte, Size)
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(c.PhysicTimestamp))
	be.PutUint64(b[8:], uint64(c.LogicsTimestamp))
	be.PutUint64(b[16:], uint64(c.IndexTimestamp))
	be.PutUint64(b[24:], uint64(c.PhysicOffset))
	be.PutUint64(b[32:], uint64(c.LogicsOffset))
	be.PutUint32(b[40:], crc32.ChecksumIEEE(b[:40]))
	return b
}

// Decode parses the file layout.
func Decode(b []byte) (Checkpoint, error) {
	if len(b) < Size {
		return Checkpoint{}, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(b))
	}
	be := binary.BigEndian
	if crc32.ChecksumIEEE(b[:40]) != be.Uint32(b[40:]) {
		return Checkpoint{}, fmt.Errorf("%w: crc mismatch", ErrCorrupt)
	}
	return Checkpoint{
		PhysicTimestamp: int64(be.Uint64(b[0:])),
		LogicsTimestamp: int64(be.Uint64(b[8:])),
		IndexTimestamp:  int64(be.Uint64(b[16:])),
		PhysicOffset:    int64(be.Uint64(b[24:])),
		LogicsOffset:    int64(be.Uint64(b[32:])),
	}, nil
}

// Load reads the checkpoint at path. A missing file gives ok=false and no
// error; a damaged one gives ErrCorrupt.
func Load(path string) (c Checkpoint, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("checkpoint: %w", err)
	}
	c, err = Decode(b)
	if err != nil {
		return c, false, err
	}
	return c, true, nil
}

// Save replaces the checkpoint at path durably. Not safe for concurrent
// calls on the same path.
func Save(path string, c Checkpoint) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if _, err := f.Write(c.Encode()); err != nil {
		f.Close()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}
