package controller

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// fsm is the raft.FSM over State. Apply runs on Raft's goroutine; readers
// take copies under mu.
type fsm struct {
	mu    sync.RWMutex
	state *State
}

func newFSM() *fsm { return &fsm{state: newState()} }

// Apply applies one committed log entry and returns its *result to the
// proposer. An undecodable entry is refused with a code, never a panic:
// every node refuses it the same way, so the state stays identical.
func (f *fsm) Apply(l *raft.Log) any {
	var c command
	if err := json.Unmarshal(l.Data, &c); err != nil {
		return fail(protocol.ControllerInvalidRequest, "undecodable command at index %d: %v", l.Index, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state.apply(&c)
}

// group returns a copy of one group, or nil.
func (f *fsm) group(name string) *Group {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if g, ok := f.state.Groups[name]; ok {
		return g.clone()
	}
	return nil
}

// groups returns copies of all groups, sorted by name.
func (f *fsm) groups() []*Group {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]*Group, 0, len(f.state.Groups))
	for _, n := range f.state.names() {
		out = append(out, f.state.Groups[n].clone())
	}
	return out
}

// Snapshot captures the state as JSON (taken under the lock, written
// later by Persist without it).
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	data, err := json.Marshal(f.state)
	if err != nil {
		return nil, fmt.Errorf("controller: snapshot: %w", err)
	}
	return snapshot(data), nil
}

// Restore replaces the state with a snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	s := newState()
	if err := json.NewDecoder(rc).Decode(s); err != nil {
		return fmt.Errorf("controller: restore snapshot: %w", err)
	}
	if s.Groups == nil {
		s.Groups = map[string]*Group{}
	}
	if s.Elections == nil { // a snapshot from before the election history
		s.Elections = map[string][]protocol.Election{}
	}
	f.mu.Lock()
	f.state = s
	f.mu.Unlock()
	return nil
}

type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return fmt.Errorf("controller: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s snapshot) Release() {}
