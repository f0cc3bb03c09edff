// Package fault holds a service's fault switches (demos and e2e): named
// points in the code that crash the process, repeat a send, or wait, when
// armed. Every switch is off unless the service's configuration arms it
// (count 0: it fires every time) or, when the admin API is on, an HTTP call
// (Handler) arms it for a number of shots. Runtime state lives in memory
// only: a crashed process restarts with only its configured switches on
// ("crash once").
package fault

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"
)

// ErrUnknown: no switch has that name.
var ErrUnknown = errors.New("fault: unknown switch")

// ExitCode is the status a crash fault exits with.
const ExitCode = 3

// Names of the switches more than one service has.
const (
	// CrashAfterCommit: exit after a local transaction committed, before
	// its transactional message is committed (END_TRANSACTION).
	CrashAfterCommit = "crash_after_commit"
	// CrashAfterEffect: exit after a consumer's effect committed, before
	// the acknowledgement.
	CrashAfterEffect = "crash_after_effect"
	// DeliverTwice: every published message is sent a second time.
	DeliverTwice = "deliver_twice"
)

// Status is one switch's state as the admin API shows it.
type Status struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	// Remaining shots; 0 with Enabled means every time.
	Remaining int `json:"remaining"`
	// Delay is the armed delay as a Go duration ("0s" when none).
	Delay string `json:"delay"`
}

type state struct {
	enabled   bool
	remaining int
	delay     time.Duration
}

// Set is a service's switches. It is safe for concurrent use; a nil *Set
// has every switch off.
type Set struct {
	mu    sync.Mutex
	names []string // in the order given to New: List's order
	m     map[string]*state
	admin bool
	log   *slog.Logger
	// exit ends the process (os.Exit unless SetExit replaced it).
	exit func(code int)
}

// New returns the switches names, all off; duplicate names count once.
// admin tells whether the runtime API (Handler) may change them. log
// (slog.Default() when nil) receives arming and crash records.
func New(admin bool, log *slog.Logger, names ...string) *Set {
	if log == nil {
		log = slog.Default()
	}
	s := &Set{m: map[string]*state{}, admin: admin, log: log, exit: os.Exit}
	for _, n := range names {
		if _, dup := s.m[n]; !dup {
			s.names = append(s.names, n)
			s.m[n] = &state{}
		}
	}
	return s
}

// Admin reports whether the runtime API may change the switches.
func (s *Set) Admin() bool { return s != nil && s.admin }

// Names returns the switch names in the order given to New.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.names)
}

// SetExit replaces the function crash faults call (os.Exit by default;
// tests inject their own). A nil f restores os.Exit.
func (s *Set) SetExit(f func(code int)) {
	if f == nil {
		f = os.Exit
	}
	s.mu.Lock()
	s.exit = f
	s.mu.Unlock()
}

// Arm enables name for count shots (0: every time) with an optional delay
// (used by Take and Delay). It fails with ErrUnknown for a name New was
// not given, and for a negative count or delay.
func (s *Set) Arm(name string, count int, delay time.Duration) error {
	if count < 0 || delay < 0 {
		return fmt.Errorf("fault: %s: negative count or delay", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[name]
	if !ok {
		return fmt.Errorf("%w: %q (known: %v)", ErrUnknown, name, s.names)
	}
	*st = state{enabled: true, remaining: count, delay: delay}
	s.log.Warn("fault armed", "fault", name, "count", count, "delay", delay)
	return nil
}

// Disarm turns name off; it fails with ErrUnknown for an unknown name.
func (s *Set) Disarm(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[name]
	if !ok {
		return fmt.Errorf("%w: %q (known: %v)", ErrUnknown, name, s.names)
	}
	*st = state{}
	return nil
}

// Reset turns every switch off.
func (s *Set) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.m {
		*st = state{}
	}
}

// List returns every switch, in the order given to New.
func (s *Set) List() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, 0, len(s.names))
	for _, n := range s.names {
		st := s.m[n]
		out = append(out, Status{Name: n, Enabled: st.enabled, Remaining: st.remaining, Delay: st.delay.String()})
	}
	return out
}

// Fire reports whether name is armed and uses one of its shots.
func (s *Set) Fire(name string) bool {
	ok, _ := s.Take(name)
	return ok
}

// Take is Fire that also returns the armed delay: it reports whether name
// is armed, uses one of its shots (the last one disarms it) and returns
// its delay. A nil Set or an unknown name is never armed.
func (s *Set) Take(name string) (bool, time.Duration) {
	if s == nil {
		return false, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[name]
	if !ok || !st.enabled {
		return false, 0
	}
	d := st.delay
	if st.remaining > 0 {
		st.remaining--
		if st.remaining == 0 {
			*st = state{}
		}
	}
	return true, d
}

// Delay sleeps for name's delay if it is armed (using one shot).
func (s *Set) Delay(name string) {
	if ok, d := s.Take(name); ok && d > 0 {
		time.Sleep(d)
	}
}

// Crash ends the process with ExitCode, without any cleanup, if name is
// armed: the point of a crash fault is that nothing graceful happens.
// attrs are logged first.
func (s *Set) Crash(name string, attrs ...any) {
	if !s.Fire(name) {
		return
	}
	s.log.Error("fault: crashing", append([]any{"fault", name}, attrs...)...)
	s.mu.Lock()
	exit := s.exit
	s.mu.Unlock()
	exit(ExitCode)
}
