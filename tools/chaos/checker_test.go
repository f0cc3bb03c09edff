package chaos

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// hist builds a history: events get increasing times 10 ms apart unless
// they set one.
type hist struct {
	t0     time.Time
	events []Event
}

func newHist() *hist {
	h := &hist{t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	h.add(Event{Process: "runner", Type: OK, Op: OpSetup, Groups: map[string][]string{
		"g": {"plain", "tx", "delay"}, "o": {"ord"}}, Ordered: []string{"o"}})
	return h
}

func (h *hist) add(e Event) *hist {
	if e.Time.IsZero() {
		e.Time = h.t0.Add(time.Duration(len(h.events)) * 10 * time.Millisecond)
	}
	e.Index = int64(len(h.events) + 1)
	h.events = append(h.events, e)
	return h
}

func (h *hist) send(op, topic, id, typ string) *hist {
	h.add(Event{Process: "p", Type: Invoke, Op: op, Topic: topic, IDs: []string{id}})
	return h.add(Event{Process: "p", Type: typ, Op: op, Topic: topic, IDs: []string{id}, Status: "SEND_OK"})
}

func (h *hist) ordered(key string, seq int, typ string) *hist {
	id := orderedID(key, seq)
	h.add(Event{Process: "po", Type: Invoke, Op: OpOrdered, Topic: "ord", IDs: []string{id}, Key: key, Seq: seq})
	return h.add(Event{Process: "po", Type: typ, Op: OpOrdered, Topic: "ord", IDs: []string{id}, Key: key, Seq: seq})
}

func (h *hist) tx(id, intent string) *hist {
	h.add(Event{Process: "px", Type: Invoke, Op: OpTx, Topic: "tx", IDs: []string{id}, Intent: intent})
	return h.add(Event{Process: "px", Type: OK, Op: OpTx, Topic: "tx", IDs: []string{id}, Intent: intent})
}

func (h *hist) consume(group, id string) *hist {
	return h.add(Event{Process: "c", Type: OK, Op: OpConsume, Group: group, IDs: []string{id}})
}

func (h *hist) drained() *hist { return h.add(Event{Process: "runner", Type: OK, Op: OpDrain}) }

func kinds(r *Report) string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.Kind+":"+v.Group+":"+v.ID)
	}
	return strings.Join(out, " ")
}

func TestCheck(t *testing.T) {
	at := func(h *hist, d time.Duration) *time.Time { v := h.t0.Add(d); return &v }
	tests := []struct {
		name  string
		build func(h *hist)
		want  string // violations kind:group:id, space separated
	}{
		{"delivered to every group", func(h *hist) {
			h.send(OpSend, "plain", "a", OK).consume("g", "a").drained()
		}, ""},
		{"acked but lost", func(h *hist) {
			h.send(OpSend, "plain", "a", OK).drained()
		}, "lost:g:a"},
		{"indeterminate send may be lost", func(h *hist) {
			h.send(OpSend, "plain", "a", Info).drained()
		}, ""},
		{"indeterminate send may be delivered", func(h *hist) {
			h.send(OpSend, "plain", "a", Info).consume("g", "a").drained()
		}, ""},
		{"failed send delivered", func(h *hist) {
			h.send(OpSend, "plain", "a", Fail).consume("g", "a").drained()
		}, "failed-sent:g:a"},
		{"never sent", func(h *hist) {
			h.consume("g", "zz").drained()
		}, "unexpected:g:zz"},
		{"duplicates are allowed", func(h *hist) {
			h.send(OpSend, "plain", "a", OK).consume("g", "a").consume("g", "a").drained()
		}, ""},
		{"batch: every message", func(h *hist) {
			h.add(Event{Process: "p", Type: Invoke, Op: OpBatch, Topic: "plain", IDs: []string{"a", "b"}})
			h.add(Event{Process: "p", Type: OK, Op: OpBatch, Topic: "plain", IDs: []string{"a", "b"}})
			h.consume("g", "a").drained()
		}, "lost:g:b"},
		{"rollback delivered", func(h *hist) {
			h.tx("x", "rollback").consume("g", "x").drained()
		}, "rolled-back:g:x"},
		{"unknown-rollback delivered", func(h *hist) {
			h.tx("x", "unknown-rollback").consume("g", "x").drained()
		}, "rolled-back:g:x"},
		{"commit lost", func(h *hist) {
			h.tx("x", "unknown-commit").drained()
		}, "lost:g:x"},
		{"rollback not delivered", func(h *hist) {
			h.tx("x", "rollback").drained()
		}, ""},
		{"timer early", func(h *hist) {
			h.add(Event{Process: "p", Type: Invoke, Op: OpTimer, Topic: "delay", IDs: []string{"t"}, NotBefore: at(h, time.Hour)})
			h.add(Event{Process: "p", Type: OK, Op: OpTimer, Topic: "delay", IDs: []string{"t"}})
			h.consume("g", "t").drained()
		}, "early:g:t"},
		{"timer on time", func(h *hist) {
			h.add(Event{Process: "p", Type: Invoke, Op: OpTimer, Topic: "delay", IDs: []string{"t"}, NotBefore: at(h, 15*time.Millisecond)})
			h.add(Event{Process: "p", Type: OK, Op: OpTimer, Topic: "delay", IDs: []string{"t"}})
			h.consume("g", "t").drained()
		}, ""},
		{"recalled timer delivered", func(h *hist) {
			h.send(OpTimer, "delay", "t", OK)
			h.add(Event{Process: "p", Type: OK, Op: OpRecall, IDs: []string{"t"}, Detail: "recalled"})
			h.consume("g", "t").drained()
		}, "recalled:g:t"},
		{"recalled timer not delivered", func(h *hist) {
			h.send(OpTimer, "delay", "t", OK)
			h.add(Event{Process: "p", Type: OK, Op: OpRecall, IDs: []string{"t"}, Detail: "recalled"})
			h.drained()
		}, ""},
		{"recall found a fired timer", func(h *hist) {
			h.send(OpTimer, "delay", "t", OK)
			h.add(Event{Process: "p", Type: OK, Op: OpRecall, IDs: []string{"t"}, Detail: "already-fired"})
			h.drained()
		}, "lost:g:t"},
		{"recall not-found, fired before", func(h *hist) {
			h.send(OpTimer, "delay", "t", OK)
			st := h.t0.Add(15 * time.Millisecond)
			h.add(Event{Process: "p", Type: OK, Op: OpRecall, IDs: []string{"t"}, Detail: "not-found"})
			h.add(Event{Process: "c", Type: OK, Op: OpConsume, Group: "g", IDs: []string{"t"}, StoreTime: &st})
			h.drained()
		}, ""},
		{"recall not-found, fired after", func(h *hist) {
			h.send(OpTimer, "delay", "t", OK)
			st := h.t0.Add(time.Hour)
			h.add(Event{Process: "p", Type: OK, Op: OpRecall, IDs: []string{"t"}, Detail: "not-found"})
			h.add(Event{Process: "c", Type: OK, Op: OpConsume, Group: "g", IDs: []string{"t"}, StoreTime: &st})
			h.drained()
		}, "recalled:g:t"},
		{"recall not-found, never delivered", func(h *hist) {
			h.send(OpTimer, "delay", "t", OK)
			h.add(Event{Process: "p", Type: OK, Op: OpRecall, IDs: []string{"t"}, Detail: "not-found"})
			h.drained()
		}, ""},
		{"recall timed out: may or may not be delivered", func(h *hist) {
			h.send(OpTimer, "delay", "t", OK).send(OpTimer, "delay", "u", OK)
			h.add(Event{Process: "p", Type: Invoke, Op: OpRecall, IDs: []string{"t"}})
			h.add(Event{Process: "p", Type: Info, Op: OpRecall, IDs: []string{"t"}, Error: "timeout"})
			h.add(Event{Process: "q", Type: Invoke, Op: OpRecall, IDs: []string{"u"}}) // never answered
			h.consume("g", "u").drained()
		}, ""},
		{"offsets move forward", func(h *hist) {
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 3})
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/1", Offset: 1})
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 7})
			h.drained()
		}, ""},
		{"offset moves back", func(h *hist) {
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 7})
			h.add(Event{Process: "nemesis", Type: Invoke, Op: OpFault, Fault: FKill, Target: "slave"})
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 5})
			h.drained()
		}, "offset-back:g:plain/b/0"},
		{"offset moved back by the broker", func(h *hist) {
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 665})
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 664})
			h.drained()
			// Read from the broker's log after the drain, with its time.
			h.add(Event{Time: h.t0, Process: "b2", Type: OK, Op: OpOffsetMoved, Group: "g", Queue: "plain/b/0", Offset: 664, Detail: "requested 665"})
		}, ""},
		{"offset back further than the broker moved it", func(h *hist) {
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 665})
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 600})
			h.drained()
			h.add(Event{Time: h.t0, Process: "b2", Type: OK, Op: OpOffsetMoved, Group: "g", Queue: "plain/b/0", Offset: 664, Detail: "requested 665"})
		}, "offset-back:g:plain/b/0"},
		{"offset back after a promotion the watcher had not seen yet", func(h *hist) {
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 8559})
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 8556})
			h.drained()
			// read from the promoted broker's log after the drain: between the readings
			h.add(Event{Time: h.t0.Add(15 * time.Millisecond), Process: "b1", Type: OK, Op: OpPromoted})
		}, ""},
		{"offset back, promotion before both readings", func(h *hist) {
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 1326})
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 1325})
			h.drained()
			h.add(Event{Time: h.t0.Add(-time.Second), Process: "b1", Type: OK, Op: OpPromoted})
		}, "offset-back:g:plain/b/0"},
		{"offset moved for another queue", func(h *hist) {
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 665})
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 664})
			h.drained()
			h.add(Event{Time: h.t0, Process: "b2", Type: OK, Op: OpOffsetMoved, Group: "g", Queue: "plain/b/1", Offset: 664, Detail: "requested 665"})
		}, "offset-back:g:plain/b/0"},
		{"offset reset by the operator", func(h *hist) {
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 665})
			h.add(Event{Process: "operator", Type: Invoke, Op: OpReset, Group: "g", Queue: "plain/b/0"})
			h.add(Event{Process: "operator", Type: OK, Op: OpReset, Group: "g", Queue: "plain/b/0", Offset: 600})
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 600})
			h.drained()
		}, ""},
		{"a daemon crashed", func(h *hist) {
			h.add(Event{Process: "master", Type: Info, Op: OpCrash, Detail: "signal: bus error"})
			h.drained()
		}, "crash::master"},
		{"offset back across a master restart", func(h *hist) {
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 7})
			h.add(Event{Process: "nemesis", Type: Invoke, Op: OpFault, Fault: FKill, Target: "master"})
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 5})
			h.add(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: "g", Queue: "plain/b/0", Offset: 9})
			h.drained()
		}, ""},
		{"ordered in order, with a redelivered prefix", func(h *hist) {
			h.ordered("k", 1, OK).ordered("k", 2, OK).ordered("k", 3, OK)
			h.consume("o", "k-1").consume("o", "k-2").consume("o", "k-1").consume("o", "k-2").consume("o", "k-3").drained()
		}, ""},
		{"ordered gap", func(h *hist) {
			h.ordered("k", 1, OK).ordered("k", 2, OK).ordered("k", 3, OK)
			h.consume("o", "k-1").consume("o", "k-3").consume("o", "k-2").drained()
		}, "order:o:k-3"},
		{"ordered: an indeterminate send may be skipped", func(h *hist) {
			h.ordered("k", 1, OK).ordered("k", 2, Info).ordered("k", 3, OK)
			h.consume("o", "k-1").consume("o", "k-3").drained()
		}, ""},
		{"ordered keys are independent", func(h *hist) {
			h.ordered("k", 1, OK).ordered("j", 1, OK).ordered("k", 2, OK)
			h.consume("o", "k-1").consume("o", "k-2").consume("o", "j-1").drained()
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHist()
			tt.build(h)
			r, err := Check(h.events)
			if err != nil {
				t.Fatal(err)
			}
			if got := kinds(r); got != tt.want {
				var b bytes.Buffer
				r.Print(&b, 0)
				t.Errorf("violations %q, want %q\n%s", got, tt.want, b.String())
			}
			if r.OK() != (tt.want == "") {
				t.Errorf("OK() = %v", r.OK())
			}
		})
	}
}

func TestCheckCounts(t *testing.T) {
	h := newHist()
	h.send(OpSend, "plain", "a", OK)
	h.add(Event{Process: "c", Type: OK, Op: OpConsume, Group: "g", IDs: []string{"a"}, Queue: "b/1", Offset: 5})
	h.add(Event{Process: "c", Type: OK, Op: OpConsume, Group: "g", IDs: []string{"a"}, Queue: "b/1", Offset: 5}) // replay
	h.add(Event{Process: "c", Type: OK, Op: OpConsume, Group: "g", IDs: []string{"a"}, Queue: "b/2", Offset: 9}) // second copy
	h.add(Event{Process: "nemesis", Type: Invoke, Op: OpFault, Fault: FKill, Target: "master"})
	h.add(Event{Process: "nemesis", Type: OK, Op: OpFault, Fault: FKill, Target: "master"})
	h.add(Event{Process: "p", Type: Invoke, Op: OpSend, Topic: "plain", IDs: []string{"open"}}) // never completed
	r, err := Check(h.events)
	if err != nil {
		t.Fatal(err)
	}
	if r.Duplicates["g"] != 2 || r.Deliveries["g"] != 3 || r.Required["g"] != 1 {
		t.Errorf("duplicates %v deliveries %v required %v", r.Duplicates, r.Deliveries, r.Required)
	}
	if r.Replays["g"] != 1 {
		t.Errorf("replays %v, want 1 of the 2 duplicates", r.Replays)
	}
	h2 := newHist()
	h2.add(Event{Process: "nemesis", Type: Invoke, Op: OpFault, Fault: FSlowLink, Target: "ns1", Error: "tc: unknown qdisc"})
	h2.add(Event{Process: "nemesis", Type: OK, Op: OpFault, Fault: FSlowLink, Target: "ns1"})
	r2, err := Check(h2.events)
	if err != nil {
		t.Fatal(err)
	}
	var b2 bytes.Buffer
	r2.Print(&b2, 0)
	if r2.Faults[FSlowLink] != 0 || r2.FaultsFailed[FSlowLink] != 1 || !strings.Contains(b2.String(), "NOT APPLIED: 1 slow-link faults") {
		t.Errorf("a fault that failed to apply: faults %v failed %v\n%s", r2.Faults, r2.FaultsFailed, b2.String())
	}
	if r.Faults[FKill] != 1 {
		t.Errorf("faults %v", r.Faults)
	}
	if c := r.Ops[OpSend]; c.Invoke != 2 || c.OK != 1 || c.Info != 1 {
		t.Errorf("send counts %+v", c)
	}
	if r.Drained {
		t.Error("drained without a drain event")
	}
	var b bytes.Buffer
	r.Print(&b, 0)
	for _, want := range []string{"NOT CHECKED: the drain ended at its deadline", "NOT CHECKED: tx: no acknowledged message", "violations: 0"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestCheckLive(t *testing.T) {
	h := newHist()
	h.send(OpSend, "plain", "old", OK)
	h.add(Event{Process: "p", Type: Invoke, Op: OpSend, Topic: "plain", IDs: []string{"new"}, Time: h.t0.Add(time.Minute)})
	h.add(Event{Process: "p", Type: OK, Op: OpSend, Topic: "plain", IDs: []string{"new"}, Time: h.t0.Add(time.Minute)})
	r, err := CheckLive(h.events, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(r); got != "lost:g:old" {
		t.Errorf("live check: %q, want only the old message lost", got)
	}
}

func TestCheckNeedsSetup(t *testing.T) {
	if _, err := Check([]Event{{Op: OpSend, Type: Invoke}}); err == nil {
		t.Fatal("a history without setup was checked")
	}
}

func TestHistoryRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rec, err := NewRecorder(dir + "/h.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	nb := time.Now().Add(time.Second)
	rec.Record(Event{Process: "runner", Type: OK, Op: OpSetup, Groups: Groups})
	rec.Record(Event{Process: "p", Type: Invoke, Op: OpTimer, IDs: []string{"t-1"}, NotBefore: &nb})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := ReadHistoryFile(dir + "/h.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[1].Index != 2 || !evs[1].NotBefore.Equal(nb) || evs[1].Time.Before(evs[0].Time) {
		b, _ := json.Marshal(evs)
		t.Fatalf("read back %s", b)
	}
	if _, err := ReadHistory(strings.NewReader("{not json\n")); err == nil {
		t.Fatal("bad line accepted")
	}
	evs, err = ReadHistory(strings.NewReader(`{"op":"setup"}` + "\n" + `{"op":"se`))
	if err != nil || len(evs) != 1 {
		t.Fatalf("unfinished last line: %d events, %v", len(evs), err)
	}
}

func TestScheduleReproducible(t *testing.T) {
	a := Schedule(7, 15*time.Minute, ConsumerInstances, ModeMasterSlave)
	b := Schedule(7, 15*time.Minute, ConsumerInstances, ModeMasterSlave)
	c := Schedule(8, 15*time.Minute, ConsumerInstances, ModeMasterSlave)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("lengths %d %d", len(a), len(b))
	}
	seen := map[string]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("step %d differs: %v / %v", i, a[i], b[i])
		}
		seen[a[i].Kind] = true
		if a[i].Kind == FPartition || a[i].Kind == FOneWay {
			if a[i].Target == a[i].Peer {
				t.Fatalf("partition of a host with itself: %v", a[i])
			}
		}
	}
	for _, k := range append(FaultKinds, FBridge, FClockJump) {
		if !seen[k] {
			t.Errorf("15 minutes of seed 7 never chose %s", k)
		}
	}
	same := len(a) == len(c)
	for i := 0; same && i < len(a); i++ {
		same = a[i] == c[i]
	}
	if same {
		t.Error("seeds 7 and 8 gave the same schedule")
	}
}

func TestParseOffsetMove(t *testing.T) {
	line := `time=2026-12-01T22:08:05.253Z level=WARN msg="pull offset moved" broker=chaos-a group=chaos-official topic=chaos-plain queue=1 requested=665 next=664 status=OFFSET_OVERFLOW_BADLY`
	e, at, ok := parseOffsetMove(line)
	if !ok || e.Group != "chaos-official" || e.Queue != "chaos-plain/chaos-a/1" || e.Offset != 664 || e.Detail != "requested 665" ||
		at.Format("15:04:05.000") != "22:08:05.253" {
		t.Fatalf("parsed %+v at %v ok=%v", e, at, ok)
	}
	if _, _, ok := parseOffsetMove(`time=2026-12-01T22:08:05.253Z level=WARN msg="request refused" broker=chaos-a`); ok {
		t.Fatal("parsed an unrelated line")
	}
	at, ok = parsePromotion(`time=2026-12-02T01:55:54.008Z level=WARN msg="controller mode: PROMOTED to master" broker=chaos-a id=1 master_epoch=29`)
	if !ok || at.Format("15:04:05.000") != "01:55:54.008" {
		t.Fatalf("promotion parsed at %v ok=%v", at, ok)
	}
	if _, ok := parsePromotion(line); ok {
		t.Fatal("parsed a pull offset moved line as a promotion")
	}
}
