package chaos

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"time"
)

// FClockJump steps one broker's wall clock by SkewSec seconds (forward or
// back) and steps it back when the fault ends. The brokers are built with
// -tags chaosclock: their wall clock (broker/internal/clock) adds the
// offset in the file named by ClockOffsetEnv, re-read every 50 ms.
const FClockJump = "clock-jump"

// ClockOffsetEnv is broker/internal/clock.OffsetFileEnv: the environment
// variable naming a chaosclock broker's offset file (one Go duration).
const ClockOffsetEnv = "TIDE_CLOCK_OFFSET_FILE"

// BrokerBuildTags are the tags the campaign builds its broker with.
const BrokerBuildTags = "chaosclock"

// ClockPickup bounds how long before its recorded fault event a clock
// step may be in force: the tool writes the offset file, waits
// clockSettle (the broker re-reads the file every 50 ms), then records
// the event. The checker starts a step's window this much before the
// event; a step back is recorded after the same wait, so the window ends
// at the heal event.
const ClockPickup = time.Second

// clockSettle is how long the tool waits after writing an offset file for
// the broker to read it.
const clockSettle = 200 * time.Millisecond

// clockJumps draws the clock-jump faults: a fourth random source replaces
// about one fault in ten with a jump of 5-120 s, forward or back, of the
// master or the slave, so the other faults of a seed stay where they
// were and the faults of earlier seeds change only where a jump replaces
// one.
func clockJumps(seed int64, faults []Fault, brokers []string) {
	rng := rand.New(rand.NewSource(seed ^ clockSalt))
	for i := range faults {
		if rng.Intn(10) != 0 {
			continue
		}
		f := &faults[i]
		f.Kind, f.Peer, f.RateKbit, f.LatencyMS, f.LossPct, f.WriteKBps, f.WriteIOPS, f.BackSec = FClockJump, "", 0, 0, 0, 0, 0, 0
		f.Target = brokers[rng.Intn(len(brokers))]
		f.SkewSec = 5 + rng.Intn(116)
		if rng.Intn(2) == 0 {
			f.SkewSec = -f.SkewSec
		}
	}
}

// ClockFile is the offset file of broker host.
func (c *Cluster) ClockFile(host string) string { return filepath.Join(c.dir, host, "clock-offset") }

// SetClock steps broker host's wall clock to skew from the machine's and
// waits until the broker has read it.
func (c *Cluster) SetClock(host string, skew time.Duration) error {
	path := c.ClockFile(host)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(skew.String()+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	time.Sleep(clockSettle)
	return nil
}

// clockWindow is one broker's clock step as the history shows it: in
// force from From (the fault event less ClockPickup) to To (the step
// back; zero: never recorded, in force to the end).
type clockWindow struct {
	from, to time.Time
	skew     time.Duration
	fault    *Event
}

func (w clockWindow) overlaps(a, b time.Time) bool {
	return !w.from.After(b) && (w.to.IsZero() || !w.to.Before(a))
}

// clockWindows reads the clock steps of a history: each clock-jump fault
// applied (its invoke event without error, Skew set) until its heal event.
func clockWindows(events []Event) []clockWindow {
	var out []clockWindow
	open := -1
	for i := range events {
		e := &events[i]
		if e.Op != OpFault || e.Fault != FClockJump {
			continue
		}
		switch {
		case e.Type == Invoke && e.Error == "":
			out = append(out, clockWindow{from: e.Time.Add(-ClockPickup), skew: time.Duration(e.SkewMS) * time.Millisecond, fault: e})
			open = len(out) - 1
		case e.Type != Invoke && open >= 0:
			out[open].to = e.Time
			open = -1
		}
	}
	return out
}

// skewAllowance is how early a delayed or timer message may be delivered
// because of the clock steps: a timer is due at the firing broker's
// clock, so a clock ahead while it may have fired (between its send and
// its delivery) fires it that much early; a delay level is due at the
// store time the broker stamped plus the delay, so a clock behind while
// it was stored (between its send and the send's answer) makes it that
// much early as well. The delivery does not name which broker of the
// group fired the message (both carry the group's name), so the steps of
// either broker count; faults come one at a time, so a message's life
// sees at most the steps the schedule injected, and an early delivery
// beyond them is still a violation.
func skewAllowance(ws []clockWindow, s *sent, delivered time.Time) (time.Duration, *Event) {
	var ahead, behind time.Duration
	var why *Event
	sentAt, storedBy := s.invoke.Time, delivered
	if s.done != nil {
		storedBy = s.done.Time
	}
	for _, w := range ws {
		if w.skew > ahead && w.overlaps(sentAt, delivered) {
			ahead, why = w.skew, w.fault
		}
		if s.op == OpDelay && -w.skew > behind && w.overlaps(sentAt, storedBy) {
			behind, why = -w.skew, w.fault
		}
	}
	return ahead + behind, why
}

// aheadAllowance is how much later than the machine's clock a delivered
// message's store time may read: the largest forward step of a broker
// between the message's send and its delivery.
func aheadAllowance(ws []clockWindow, s *sent, delivered time.Time) time.Duration {
	var ahead time.Duration
	for _, w := range ws {
		if w.skew > ahead && w.overlaps(s.invoke.Time, delivered) {
			ahead = w.skew
		}
	}
	return ahead
}

func skewString(sec int) string { return fmt.Sprintf(" skew=%+ds", sec) }

// clockSalt seeds the clock-jump source ("jump"+2: the first salt whose
// draws leave the first minutes of the CI slices, SliceSeed and
// ControllerSliceSeed, as they were: TestClockJumpsSparedSlices).
const clockSalt = 0x6a756d72
