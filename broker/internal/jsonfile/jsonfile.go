// Package jsonfile persists the broker's small metadata tables (topics,
// consumer offsets, subscription groups, delay progress) as JSON files that
// are replaced atomically: a crash leaves either the old or the new file,
// never a torn one.
package jsonfile

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Save writes v as indented JSON to path: it writes a temporary file in the
// same directory, fsyncs it, renames it over path and fsyncs the directory.
// The previous content is kept as path+".bak" so an operator can recover
// from a bad edit. Save is safe for concurrent use on different paths; the
// caller serialises saves of one path.
func Save(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("jsonfile: encode %s: %w", path, err)
	}
	return SaveWith(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// SaveWith is Save for a table too large to encode in memory first: write
// streams the JSON text into the temporary file (buffered), with the same
// atomic replace and ".bak" copy. A write error leaves path untouched.
func SaveWith(path string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("jsonfile: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("jsonfile: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	bw := bufio.NewWriterSize(tmp, 64<<10)
	if err := write(bw); err != nil {
		tmp.Close()
		return fmt.Errorf("jsonfile: write %s: %w", tmp.Name(), err)
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("jsonfile: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("jsonfile: sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("jsonfile: %w", err)
	}
	keepBackup(path)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("jsonfile: rename: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// keepBackup makes path+".bak" the current content of path: a hard link
// (no copy; path itself is replaced by a rename next, so the link keeps
// the old file), or a streamed copy where links are not supported. Best
// effort, as the backup is for an operator.
func keepBackup(path string) {
	bak := path + ".bak"
	_ = os.Remove(bak)
	if err := os.Link(path, bak); err == nil || errors.Is(err, fs.ErrNotExist) {
		return
	}
	src, err := os.Open(path)
	if err != nil {
		return
	}
	defer src.Close()
	dst, err := os.Create(bak)
	if err != nil {
		return
	}
	_, _ = io.Copy(dst, src)
	dst.Close()
}

// Load decodes the JSON file at path into v. A missing file is not an
// error: found is false and v is untouched. A file that does not decode
// falls back to path+".bak" (written by Save) before failing.
func Load(path string, v any) (found bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("jsonfile: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		bak, berr := os.ReadFile(path + ".bak")
		if berr == nil && json.Unmarshal(bak, v) == nil {
			return true, nil
		}
		return false, fmt.Errorf("jsonfile: decode %s: %w", path, err)
	}
	return true, nil
}
