// Package kvconfig is the NameServer's namespaced key/value configuration
// (PUT_KV_CONFIG and friends), kept in memory and persisted to one JSON file
// in the format of RocketMQ's kvConfig.json:
//
//	{"configTable":{"ORDER_TOPIC_CONFIG":{"topic-a":"broker-a:4;broker-b:4"}}}
//
// Every change rewrites the file atomically (temporary file, fsync, rename),
// so a crash leaves either the old or the new content.
package kvconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// ErrCorrupt: the file exists but is not a valid kvConfig.json.
var ErrCorrupt = errors.New("kvconfig: corrupt file")

// Store is the KV table. It is safe for concurrent use. Changes are
// persisted before the call returns; a failed write leaves the in-memory
// table unchanged and returns the error.
type Store struct {
	path string // "" keeps the table in memory only

	mu    sync.RWMutex
	table map[string]map[string]string
}

type fileFormat struct {
	ConfigTable map[string]map[string]string `json:"configTable"`
}

// Open loads the table from path, or starts empty if the file does not
// exist. An empty path gives a store that is never persisted. The parent
// directory is created on the first write.
func Open(path string) (*Store, error) {
	s := &Store{path: path, table: map[string]map[string]string{}}
	if path == "" {
		return s, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kvconfig: %w", err)
	}
	if len(data) == 0 {
		return s, nil
	}
	var f fileFormat
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	for ns, kv := range f.ConfigTable {
		if len(kv) > 0 {
			s.table[ns] = kv
		}
	}
	return s, nil
}

// Put sets namespace/key to value.
func (s *Store) Put(namespace, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.cloneLocked()
	if next[namespace] == nil {
		next[namespace] = map[string]string{}
	}
	next[namespace][key] = value
	return s.commitLocked(next)
}

// Get returns the value of namespace/key.
func (s *Store) Get(namespace, key string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.table[namespace][key]
	return v, ok
}

// Delete removes namespace/key; deleting a missing key is not an error.
func (s *Store) Delete(namespace, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.table[namespace][key]; !ok {
		return nil
	}
	next := s.cloneLocked()
	delete(next[namespace], key)
	if len(next[namespace]) == 0 {
		delete(next, namespace)
	}
	return s.commitLocked(next)
}

// List returns a copy of one namespace, or false if it is empty.
func (s *Store) List(namespace string) (map[string]string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	kv := s.table[namespace]
	if len(kv) == 0 {
		return nil, false
	}
	out := make(map[string]string, len(kv))
	for k, v := range kv {
		out[k] = v
	}
	return out, true
}

// Namespaces returns the non-empty namespaces, sorted.
func (s *Store) Namespaces() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.table))
	for ns := range s.table {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

func (s *Store) cloneLocked() map[string]map[string]string {
	next := make(map[string]map[string]string, len(s.table)+1)
	for ns, kv := range s.table {
		c := make(map[string]string, len(kv))
		for k, v := range kv {
			c[k] = v
		}
		next[ns] = c
	}
	return next
}

func (s *Store) commitLocked(next map[string]map[string]string) error {
	if s.path != "" {
		if err := writeFile(s.path, next); err != nil {
			return err
		}
	}
	s.table = next
	return nil
}

func writeFile(path string, table map[string]map[string]string) error {
	data, err := json.MarshalIndent(fileFormat{ConfigTable: table}, "", "  ")
	if err != nil {
		return fmt.Errorf("kvconfig: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("kvconfig: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("kvconfig: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("kvconfig: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("kvconfig: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("kvconfig: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("kvconfig: %w", err)
	}
	// Make the rename itself durable.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
