package chaos

import (
	"testing"
	"time"
)

// TestScheduleClockJumps: clock jumps come from a source of their own:
// forward and back, 5-120 s, on a broker; every other fault of a seed is
// the one the seed drew before clock jumps existed.
func TestScheduleClockJumps(t *testing.T) {
	for _, mode := range []string{ModeMasterSlave, ModeController} {
		for _, seed := range []int64{1, 7, 20261204} {
			got := Schedule(seed, time.Hour, ConsumerInstances, mode)
			var fwd, back int
			for _, f := range got {
				if f.Kind != FClockJump {
					continue
				}
				if f.Target != "master" && f.Target != "slave" {
					t.Errorf("seed %d %s: clock jump of %q, want a broker", seed, mode, f.Target)
				}
				if a := max(f.SkewSec, -f.SkewSec); a < 5 || a > 120 {
					t.Errorf("seed %d %s: skew %d s, want 5-120", seed, mode, f.SkewSec)
				}
				if f.SkewSec > 0 {
					fwd++
				} else {
					back++
				}
			}
			if fwd == 0 || back == 0 {
				t.Errorf("seed %d %s: an hour drew %d forward and %d backward jumps, want both", seed, mode, fwd, back)
			}
		}
	}
}

// TestClockJumpsReplaceOnly: the schedule with clock jumps is the one
// without them except where a jump replaced a fault (same times,
// durations and gaps).
func TestClockJumpsReplaceOnly(t *testing.T) {
	got := Schedule(7, 30*time.Minute, ConsumerInstances, ModeMasterSlave)
	for i, f := range got {
		if f.Kind != FClockJump {
			continue
		}
		if f.Peer != "" || f.RateKbit != 0 || f.WriteKBps != 0 || f.BackSec != 0 {
			t.Errorf("step %d: a clock jump kept the replaced fault's parameters: %+v", i, f)
		}
		if i > 0 && got[i-1].At+got[i-1].Dur+got[i-1].Gap != f.At {
			t.Errorf("step %d moved: at %v after %v", i, f.At, got[i-1])
		}
	}
}

func TestClockWindows(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	evs := []Event{
		{Time: at(10), Op: OpFault, Type: Invoke, Fault: FClockJump, SkewMS: 30_000},
		{Time: at(20), Op: OpFault, Type: OK, Fault: FClockJump},
		{Time: at(30), Op: OpFault, Type: Invoke, Fault: FKill},
		{Time: at(35), Op: OpFault, Type: OK, Fault: FKill},
		{Time: at(40), Op: OpFault, Type: Invoke, Fault: FClockJump, SkewMS: -5_000, Error: "no such file"},
		{Time: at(41), Op: OpFault, Type: Info, Fault: FClockJump},
		{Time: at(50), Op: OpFault, Type: Invoke, Fault: FClockJump, SkewMS: -7_000},
	}
	ws := clockWindows(evs)
	if len(ws) != 2 {
		t.Fatalf("%d windows, want 2 (a failed injection is none): %+v", len(ws), ws)
	}
	for i, want := range []clockWindow{{from: at(10).Add(-ClockPickup), to: at(20), skew: 30 * time.Second},
		{from: at(50).Add(-ClockPickup), skew: -7 * time.Second}} {
		if ws[i].from != want.from || ws[i].to != want.to || ws[i].skew != want.skew {
			t.Errorf("window %d = %v..%v %v, want %v..%v %v", i, ws[i].from, ws[i].to, ws[i].skew, want.from, want.to, want.skew)
		}
	}
}

// TestCheckClockJumps: a broker's clock step excuses exactly the
// earliness it causes: a timer as early as a forward step while it may
// have fired, a delay level as early as a backward step while it was
// stored; anything earlier, or with no step around, is a violation.
func TestCheckClockJumps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		op    string
		skew  int // s; 0: no clock jump in the history
		jump  [2]int
		early int // ms before not_before
		want  string
		bySkw int
	}{
		{"timer, no jump", OpTimer, 0, [2]int{}, 3000, "early:g:m", 0},
		{"timer, ahead by more", OpTimer, 5, [2]int{2, 20}, 3000, "", 1},
		{"timer, ahead by exactly", OpTimer, 5, [2]int{2, 20}, 5000, "", 1},
		{"timer, earlier than the step", OpTimer, 5, [2]int{2, 20}, 5100, "early:g:m", 0},
		{"timer, behind", OpTimer, -5, [2]int{2, 20}, 3000, "early:g:m", 0},
		{"timer, jump healed before the send", OpTimer, 5, [2]int{-20, -10}, 3000, "early:g:m", 0},
		{"timer, jump after the delivery", OpTimer, 5, [2]int{40, 50}, 3000, "early:g:m", 0},
		{"delay, behind while stored", OpDelay, -5, [2]int{-3, 1}, 3000, "", 1},
		{"delay, behind after the answer", OpDelay, -5, [2]int{5, 20}, 3000, "early:g:m", 0},
		{"delay, ahead while it may fire", OpDelay, 5, [2]int{5, 20}, 3000, "", 1},
		{"delay, behind by less", OpDelay, -2, [2]int{-3, 1}, 3000, "early:g:m", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist()
			t0 := h.t0.Add(time.Minute) // the send's invoke
			at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
			nb := at(30)
			if tc.skew != 0 && tc.jump[0] < 0 {
				h.add(Event{Time: at(tc.jump[0]), Process: "nemesis", Type: Invoke, Op: OpFault, Fault: FClockJump, SkewMS: int64(tc.skew) * 1000})
				h.add(Event{Time: at(tc.jump[1]), Process: "nemesis", Type: OK, Op: OpFault, Fault: FClockJump})
			}
			h.add(Event{Time: at(0), Process: "p", Type: Invoke, Op: tc.op, Topic: "delay", IDs: []string{"m"}, NotBefore: &nb})
			h.add(Event{Time: at(0).Add(100 * time.Millisecond), Process: "p", Type: OK, Op: tc.op, Topic: "delay", IDs: []string{"m"}, Status: "SEND_OK"})
			if tc.skew != 0 && tc.jump[0] >= 0 {
				h.add(Event{Time: at(tc.jump[0]), Process: "nemesis", Type: Invoke, Op: OpFault, Fault: FClockJump, SkewMS: int64(tc.skew) * 1000})
				h.add(Event{Time: at(tc.jump[1]), Process: "nemesis", Type: OK, Op: OpFault, Fault: FClockJump})
			}
			h.add(Event{Time: nb.Add(-time.Duration(tc.early) * time.Millisecond), Process: "c", Type: OK, Op: OpConsume, Group: "g", IDs: []string{"m"}})
			r := checkWant(t, h.drained(), tc.want)
			if r.EarlyBySkew != tc.bySkw {
				t.Fatalf("EarlyBySkew %d, want %d", r.EarlyBySkew, tc.bySkw)
			}
		})
	}
}

// TestCheckRecallClockAhead: a timer fired by a broker whose clock is
// ahead carries a store time that far ahead; after a recall answered
// not-found it is a violation only if it was stored later than that.
func TestCheckRecallClockAhead(t *testing.T) {
	for _, tc := range []struct {
		name     string
		skew     int64 // ms
		storedAt int   // ms after the not-found answer, in the broker's clock
		want     string
	}{
		{"no jump, stored before", 0, -500, ""},
		{"no jump, stored after", 0, 500, "recalled:g:t"},
		{"ahead 5 s, stored 3 s after in its clock", 5000, 3000, ""},
		{"ahead 5 s, stored 6 s after in its clock", 5000, 6000, "recalled:g:t"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist()
			t0 := h.t0.Add(time.Minute)
			nb := t0.Add(10 * time.Second)
			h.add(Event{Time: t0.Add(-2 * time.Second), Process: "nemesis", Type: Invoke, Op: OpFault, Fault: FClockJump, SkewMS: tc.skew})
			h.add(Event{Time: t0, Process: "p", Type: Invoke, Op: OpTimer, Topic: "delay", IDs: []string{"t"}, NotBefore: &nb})
			h.add(Event{Time: t0.Add(time.Millisecond), Process: "p", Type: OK, Op: OpTimer, Topic: "delay", IDs: []string{"t"}, Status: "SEND_OK"})
			nf := t0.Add(time.Second)
			h.add(Event{Time: nf.Add(-time.Millisecond), Process: "r", Type: Invoke, Op: OpRecall, IDs: []string{"t"}})
			h.add(Event{Time: nf, Process: "r", Type: OK, Op: OpRecall, IDs: []string{"t"}, Detail: "not-found"})
			st := nf.Add(time.Duration(tc.storedAt) * time.Millisecond)
			h.add(Event{Time: nb.Add(time.Second), Process: "c", Type: OK, Op: OpConsume, Group: "g", IDs: []string{"t"}, StoreTime: &st})
			h.add(Event{Time: nb.Add(2 * time.Second), Process: "nemesis", Type: OK, Op: OpFault, Fault: FClockJump})
			checkWant(t, h.drained(), tc.want)
		})
	}
}

// TestClockJumpsSparedSlices: the CI slices keep the faults
// docs/reliability.md lists for their minute.
func TestClockJumpsSparedSlices(t *testing.T) {
	for _, tc := range []struct {
		seed int64
		mode string
	}{{SliceSeed, ModeMasterSlave}, {ControllerSliceSeed, ModeController}} {
		for _, f := range Schedule(tc.seed, 70*time.Second, ConsumerInstances, tc.mode) {
			if f.Kind == FClockJump {
				t.Errorf("the %s slice (seed %d) draws %v in its minute", tc.mode, tc.seed, f)
			}
		}
	}
}

// checkWant checks h's history and fails unless its violations are want
// (kinds' form).
func checkWant(t *testing.T, h *hist, want string) *Report {
	t.Helper()
	r, err := Check(h.events)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(r); got != want {
		t.Fatalf("violations %q, want %q: %+v", got, want, r.Violations)
	}
	return r
}
