// Package jsonfile persists the broker's small metadata tables (topics,
// consumer offsets, subscription groups, delay progress) as JSON files that
// are replaced atomically: a crash leaves either the old or the new file,
// never a torn one.
package jsonfile

import (
	"encoding/json"
	"errors"
	"fmt"
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
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("jsonfile: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("jsonfile: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
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
	if old, err := os.ReadFile(path); err == nil {
		_ = os.WriteFile(path+".bak", old, 0o644)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("jsonfile: rename: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
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
