// Package fault holds the payment service's fault switches for demos and
// end-to-end tests (see notes in the service README): named switches that
// are off unless the config or the runtime admin endpoint turns them on.
// A switch fires every time (count 0) or a given number of times, then
// disarms itself. Runtime changes live in memory only, so a crashed
// process restarts with the configured switches: "crash once" semantics.
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

// Names of the switches.
const (
	// CrashAfterCommit: exit after the local debit committed, before
	// END_TRANSACTION.
	CrashAfterCommit = "crash_after_commit"
	// CrashBeforeCommit: exit inside the local transaction, before COMMIT.
	CrashBeforeCommit = "crash_before_commit"
	// SlowLocalTx: hold the local transaction open for the delay.
	SlowLocalTx = "slow_local_tx"
	// GatewayTimeoutAfterCapture: the gateway captures, then times out.
	GatewayTimeoutAfterCapture = "gateway_timeout_after_capture"
	// GatewayDuplicateCallback: the gateway records a second capture.
	GatewayDuplicateCallback = "gateway_duplicate_callback"
	// CrashAfterEffect: exit after a consumer's transaction committed,
	// before the acknowledgement.
	CrashAfterEffect = "crash_after_effect"
	// DeliverTwice: every published message is sent a second time.
	DeliverTwice = "deliver_twice"
)

// Names lists every switch, in the order GET /v1/faults shows them.
var Names = []string{CrashAfterCommit, CrashBeforeCommit, SlowLocalTx, GatewayTimeoutAfterCapture,
	GatewayDuplicateCallback, CrashAfterEffect, DeliverTwice}

// ExitCode is the status a crash fault ends the process with.
const ExitCode = 3

// ErrUnknown: no switch has that name.
var ErrUnknown = errors.New("fault: unknown switch")

// Spec arms a switch.
type Spec struct {
	Enabled bool
	// Count: 0 fires every time, N fires N times then disarms.
	Count int
	// Delay is the hold of slow_local_tx.
	Delay time.Duration
}

// State is a switch as GET /v1/faults shows it.
type State struct {
	Name      string `json:"name"`
	Enabled   bool   `json:"enabled"`
	Remaining int    `json:"remaining"`
	Delay     string `json:"delay"`
}

// Set is the service's fault switches. Safe for concurrent use; a nil
// *Set never fires.
type Set struct {
	mu   sync.Mutex
	m    map[string]Spec
	exit func(code int)
	log  *slog.Logger
}

// New returns switches armed as in initial (config). exit ends the
// process (os.Exit when nil; tests inject their own).
func New(initial map[string]Spec, exit func(code int), l *slog.Logger) *Set {
	if exit == nil {
		exit = os.Exit
	}
	if l == nil {
		l = slog.Default()
	}
	s := &Set{m: map[string]Spec{}, exit: exit, log: l}
	for n, sp := range initial {
		if slices.Contains(Names, n) && sp.Enabled {
			s.m[n] = sp
		}
	}
	return s
}

// Arm sets one switch (Spec.Enabled false disarms it).
func (s *Set) Arm(name string, sp Spec) error {
	if !slices.Contains(Names, name) {
		return fmt.Errorf("%w: %q (known: %v)", ErrUnknown, name, Names)
	}
	if sp.Count < 0 || sp.Delay < 0 {
		return fmt.Errorf("fault: %s: count and delay must not be negative", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !sp.Enabled {
		delete(s.m, name)
		return nil
	}
	s.m[name] = sp
	return nil
}

// Reset disarms every switch.
func (s *Set) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.m)
}

// List returns every switch's state.
func (s *Set) List() []State {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]State, 0, len(Names))
	for _, n := range Names {
		sp := s.m[n]
		out = append(out, State{Name: n, Enabled: sp.Enabled, Remaining: sp.Count, Delay: sp.Delay.String()})
	}
	return out
}

// Fire reports whether the switch is armed, consuming one firing, and
// its delay.
func (s *Set) Fire(name string) (bool, time.Duration) {
	if s == nil {
		return false, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sp, ok := s.m[name]
	if !ok || !sp.Enabled {
		return false, 0
	}
	if sp.Count > 0 {
		sp.Count--
		if sp.Count == 0 {
			delete(s.m, name)
		} else {
			s.m[name] = sp
		}
	}
	return true, sp.Delay
}

// Crash ends the process with ExitCode if the switch fires (no graceful
// shutdown: that is the point). attrs are logged.
func (s *Set) Crash(name string, attrs ...any) {
	if ok, _ := s.Fire(name); ok {
		s.log.Error("FAULT: crashing", append([]any{"fault", name}, attrs...)...)
		s.exit(ExitCode)
	}
}
