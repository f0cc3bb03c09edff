// Package fault holds the service's fault switches (demos and e2e): named
// points in the code that crash the process, repeat a send, or wait, when
// armed. Every switch is off unless the configuration enables it (then it
// fires every time) or, when the admin API is on, an HTTP call arms it for
// a number of shots. Runtime state lives in memory only: a crashed process
// restarts with its runtime switches off ("crash once").
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

// Status is one switch's state as the admin API shows it.
type Status struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	// Remaining shots; 0 with Enabled means every time.
	Remaining int    `json:"remaining"`
	Delay     string `json:"delay,omitempty"`
}

type state struct {
	enabled   bool
	remaining int
	delay     time.Duration
}

// Set is the service's switches. It is safe for concurrent use; a nil *Set
// has every switch off.
type Set struct {
	mu    sync.Mutex
	m     map[string]*state
	admin bool
	log   *slog.Logger
	// exit ends the process (os.Exit; tests replace it).
	exit func(code int)
}

// New returns the switches names, all off. admin enables the HTTP API.
func New(admin bool, log *slog.Logger, names ...string) *Set {
	if log == nil {
		log = slog.Default()
	}
	s := &Set{m: map[string]*state{}, admin: admin, log: log, exit: os.Exit}
	for _, n := range names {
		s.m[n] = &state{}
	}
	return s
}

// Admin reports whether the runtime API may change the switches.
func (s *Set) Admin() bool { return s != nil && s.admin }

// SetExit replaces the function crash faults call (tests).
func (s *Set) SetExit(f func(code int)) { s.mu.Lock(); s.exit = f; s.mu.Unlock() }

// Arm enables name for count shots (0: every time) with an optional delay.
func (s *Set) Arm(name string, count int, delay time.Duration) error {
	if count < 0 || delay < 0 {
		return fmt.Errorf("fault: %s: negative count or delay", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	*st = state{enabled: true, remaining: count, delay: delay}
	s.log.Warn("fault armed", "fault", name, "count", count, "delay", delay)
	return nil
}

// Disarm turns name off.
func (s *Set) Disarm(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknown, name)
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

// List returns every switch, by name.
func (s *Set) List() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, 0, len(s.m))
	for n, st := range s.m {
		d := ""
		if st.delay > 0 {
			d = st.delay.String()
		}
		out = append(out, Status{Name: n, Enabled: st.enabled, Remaining: st.remaining, Delay: d})
	}
	slices.SortFunc(out, func(a, b Status) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// Fire reports whether name is armed and uses one of its shots.
func (s *Set) Fire(name string) bool {
	ok, _ := s.take(name)
	return ok
}

func (s *Set) take(name string) (bool, time.Duration) {
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

// Delay sleeps for name's delay if it is armed.
func (s *Set) Delay(name string) {
	if ok, d := s.take(name); ok && d > 0 {
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
