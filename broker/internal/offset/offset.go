// Package offset holds the consumer offsets of the broker: for each
// consumer group, topic and queue, the next offset to consume. The table
// lives in memory and is persisted as config/consumerOffset.json (the
// RocketMQ file name and shape, with standard JSON keys) by Persist, which
// the broker calls periodically and at shutdown.
package offset

import (
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/tidemq/tide/broker/internal/jsonfile"
)

// Table is the consumer offset table. It is safe for concurrent use.
type Table struct {
	path string

	mu      sync.RWMutex
	offsets map[string]map[int32]int64 // "topic@group" -> queueId -> offset
	dirty   bool
}

// file is the on-disk shape: {"offsetTable":{"topic@group":{"0":12}}}.
type file struct {
	OffsetTable map[string]map[string]int64 `json:"offsetTable"`
}

func key(topic, group string) string { return topic + "@" + group }

// Open loads the table from path (a missing file gives an empty table).
func Open(path string) (*Table, error) {
	t := &Table{path: path, offsets: map[string]map[int32]int64{}}
	var f file
	if _, err := jsonfile.Load(path, &f); err != nil {
		return nil, err
	}
	for k, qs := range f.OffsetTable {
		m := make(map[int32]int64, len(qs))
		for q, off := range qs {
			id, err := strconv.ParseInt(q, 10, 32)
			if err != nil {
				continue
			}
			m[int32(id)] = off
		}
		t.offsets[k] = m
	}
	return t, nil
}

// Commit stores offset as the next offset group consumes from topic/queue.
func (t *Table) Commit(group, topic string, queueID int32, offset int64) {
	t.commit(group, topic, queueID, offset, false)
}

// CommitForward is Commit unless the stored offset is already higher:
// then it leaves it and reports false. It serves commits that must not
// move a group back (a queue's previous owner committing after its new
// one; UpdateConsumerOffsetRequestHeader.OnlyForward).
func (t *Table) CommitForward(group, topic string, queueID int32, offset int64) bool {
	return t.commit(group, topic, queueID, offset, true)
}

func (t *Table) commit(group, topic string, queueID int32, offset int64, forward bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := key(topic, group)
	m := t.offsets[k]
	if m == nil {
		m = map[int32]int64{}
		t.offsets[k] = m
	}
	old, ok := m[queueID]
	if ok && forward && old > offset {
		return false
	}
	if ok && old == offset {
		return true
	}
	m[queueID] = offset
	t.dirty = true
	return true
}

// Query returns the stored offset, and false when none is stored.
func (t *Table) Query(group, topic string, queueID int32) (int64, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	off, ok := t.offsets[key(topic, group)][queueID]
	return off, ok
}

// QueueOffsets returns a copy of the offsets of group on topic.
func (t *Table) QueueOffsets(group, topic string) map[int32]int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	src := t.offsets[key(topic, group)]
	out := make(map[int32]int64, len(src))
	for q, o := range src {
		out[q] = o
	}
	return out
}

// Topics returns the topics group has offsets on, sorted.
func (t *Table) Topics(group string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []string
	for k := range t.offsets {
		if i := strings.LastIndexByte(k, '@'); i >= 0 && k[i+1:] == group {
			out = append(out, k[:i])
		}
	}
	sort.Strings(out)
	return out
}

// Groups returns the groups that have offsets on topic, sorted.
func (t *Table) Groups(topic string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []string
	for k := range t.offsets {
		if i := strings.LastIndexByte(k, '@'); i >= 0 && k[:i] == topic {
			out = append(out, k[i+1:])
		}
	}
	sort.Strings(out)
	return out
}

// RemoveTopic drops every group's offsets on topic.
func (t *Table) RemoveTopic(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.offsets {
		if i := strings.LastIndexByte(k, '@'); i >= 0 && k[:i] == topic {
			delete(t.offsets, k)
			t.dirty = true
		}
	}
}

// RemoveGroup drops group's offsets on every topic.
func (t *Table) RemoveGroup(group string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.offsets {
		if i := strings.LastIndexByte(k, '@'); i >= 0 && k[i+1:] == group {
			delete(t.offsets, k)
			t.dirty = true
		}
	}
}

// Snapshot returns the whole table in its file shape (used for persistence
// and for master-to-slave metadata sync).
func (t *Table) Snapshot() map[string]map[string]int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[string]map[string]int64, len(t.offsets))
	for k, qs := range t.offsets {
		m := make(map[string]int64, len(qs))
		for q, o := range qs {
			m[strconv.Itoa(int(q))] = o
		}
		out[k] = m
	}
	return out
}

// Persist writes the table to its file if it changed since the last
// Persist. It blocks for the duration of the file write and fsync.
func (t *Table) Persist() error {
	t.mu.Lock()
	if !t.dirty {
		t.mu.Unlock()
		return nil
	}
	t.dirty = false
	t.mu.Unlock()
	if err := jsonfile.Save(t.path, file{OffsetTable: t.Snapshot()}); err != nil {
		t.mu.Lock()
		t.dirty = true
		t.mu.Unlock()
		return err
	}
	return nil
}

// Replace installs a whole table in its file shape (a slave copying its
// master's offsets); queue ids that do not parse are skipped.
func (t *Table) Replace(snapshot map[string]map[string]int64) {
	m := make(map[string]map[int32]int64, len(snapshot))
	for k, qs := range snapshot {
		q := make(map[int32]int64, len(qs))
		for id, off := range qs {
			n, err := strconv.ParseInt(id, 10, 32)
			if err != nil {
				continue
			}
			q[int32(n)] = off
		}
		m[k] = q
	}
	t.mu.Lock()
	t.offsets = m
	t.dirty = true
	t.mu.Unlock()
}
