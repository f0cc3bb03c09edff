// Package subgroup is the broker's table of consumer (subscription) group
// configurations: retry queue count, max retries, consume enable flags.
// Groups are created on first use when autoCreateSubscriptionGroup is on.
// The table is persisted as config/subscriptionGroup.json.
package subgroup

import (
	"sort"
	"sync"

	"github.com/tidemq/tide/broker/internal/clock"
	"github.com/tidemq/tide/broker/internal/jsonfile"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Table is the group table. It is safe for concurrent use.
type Table struct {
	path string

	mu      sync.RWMutex
	groups  map[string]protocol.SubscriptionGroupConfig
	version protocol.DataVersion
	dirty   bool
}

// Open loads the table from path (a missing file gives an empty table).
func Open(path string) (*Table, error) {
	t := &Table{path: path, groups: map[string]protocol.SubscriptionGroupConfig{}}
	var w protocol.SubscriptionGroupWrapper
	if _, err := jsonfile.Load(path, &w); err != nil {
		return nil, err
	}
	for k, v := range w.SubscriptionGroupTable {
		v.GroupName = k
		t.groups[k] = v
	}
	t.version = w.DataVersion
	return t, nil
}

// Get returns a group's config.
func (t *Table) Get(group string) (protocol.SubscriptionGroupConfig, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	c, ok := t.groups[group]
	return c, ok
}

// GetOrCreate returns a group's config, creating it with RocketMQ's
// defaults when autoCreate is set. ok is false when the group is unknown
// and may not be created.
func (t *Table) GetOrCreate(group string, autoCreate bool) (protocol.SubscriptionGroupConfig, bool) {
	if c, ok := t.Get(group); ok || !autoCreate {
		return c, ok
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.groups[group]; ok {
		return c, true
	}
	c := protocol.DefaultSubscriptionGroupConfig(group)
	t.groups[group] = c
	t.bump()
	return c, true
}

// Put creates or replaces a group's config.
func (t *Table) Put(c protocol.SubscriptionGroupConfig) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.groups[c.GroupName] = c
	t.bump()
}

// Delete removes a group.
func (t *Table) Delete(group string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.groups[group]; ok {
		delete(t.groups, group)
		t.bump()
	}
}

func (t *Table) bump() {
	t.version.Counter++
	t.version.Timestamp = clock.Now().UnixMilli()
	t.dirty = true
}

// Names returns the group names, sorted.
func (t *Table) Names() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]string, 0, len(t.groups))
	for n := range t.groups {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Wrapper returns the whole table (the body of
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
func (t *Table) Wrapper() protocol.SubscriptionGroupWrapper {
	t.mu.RLock()
	defer t.mu.RUnlock()
	m := make(map[string]protocol.SubscriptionGroupConfig, len(t.groups))
	for k, v := range t.groups {
		m[k] = v
	}
	return protocol.SubscriptionGroupWrapper{SubscriptionGroupTable: m, DataVersion: t.version}
}

// DataVersion returns the current data version.
func (t *Table) DataVersion() protocol.DataVersion {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.version
}

// Persist writes the table if it changed since the last Persist.
func (t *Table) Persist() error {
	t.mu.Lock()
	if !t.dirty {
		t.mu.Unlock()
		return nil
	}
	t.dirty = false
	t.mu.Unlock()
	w := t.Wrapper()
	if err := jsonfile.Save(t.path, &w); err != nil {
		t.mu.Lock()
		t.dirty = true
		t.mu.Unlock()
		return err
	}
	return nil
}

// Replace installs a whole table (a slave copying its master's groups).
func (t *Table) Replace(w protocol.SubscriptionGroupWrapper) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w.DataVersion == t.version {
		return
	}
	t.groups = make(map[string]protocol.SubscriptionGroupConfig, len(w.SubscriptionGroupTable))
	for k, v := range w.SubscriptionGroupTable {
		v.GroupName = k
		t.groups[k] = v
	}
	t.version = w.DataVersion
	t.dirty = true
}
