package chaos

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrBadHistory reports a history file that does not parse or lacks its
// setup event.
var ErrBadHistory = errors.New("chaos: bad history")

// ConfigDurable is the setup Config key naming the one send status that
// makes a message durable under the campaign's faults; absent, every
// status does (master/slave: no failover, no disk lost).
const ConfigDurable = "durable_status"

// EarlyTolerance is how much earlier than its NotBefore time a delayed or
// timer message may be delivered without a violation: the broker keeps
// delivery times in milliseconds, the history in nanoseconds.
const EarlyTolerance = 2 * time.Millisecond

// Violation kinds.
const (
	VLost       = "lost"        // acknowledged (and committed, not recalled) but never delivered to a group
	VUnexpected = "unexpected"  // delivered but never sent by the workload
	VFailedSent = "failed-sent" // delivered although its send definitely failed
	VRolledBack = "rolled-back" // a rolled-back transactional message was delivered
	VEarly      = "early"       // a delayed or timer message delivered before its time
	VRecalled   = "recalled"    // a timer message delivered after its recall succeeded
	VOrder      = "order"       // an ordered group saw a key's message before an earlier acknowledged one
	VOffsetBack = "offset-back" // a committed offset moved backwards with no master restart in between
	VCrash      = "crash"       // a daemon exited without being killed: every fault must be survived
)

// Violation is one guarantee broken, with the events that show it.
type Violation struct {
	Kind   string
	Group  string
	ID     string
	What   string
	Events []Event
}

// OpCount counts one operation's events.
type OpCount struct {
	Invoke, OK, Fail, Info int
}

// Report is what Check found.
type Report struct {
	Events   int
	Ops      map[string]*OpCount // by op, messages' operations only
	Messages map[string]int      // by op: messages acknowledged
	Faults   map[string]int      // by fault kind: faults injected
	// FaultsFailed (by kind) are faults whose injection failed (nothing
	// was done); FaultErrors holds the last error of each such kind.
	FaultsFailed map[string]int
	FaultErrors  map[string]string
	Deliveries   map[string]int // by group
	Duplicates   map[string]int // by group: deliveries beyond a message's first
	// Replays (by group) are the duplicates delivered from a queue offset
	// the group had already been given (the consumer side: offsets not
	// committed before a crash, pause or rebalance); the other duplicates
	// are copies stored at another offset (the producer side: a send
	// retried after a lost answer, or a message stored twice).
	Replays map[string]int
	Recalls map[string]int // recall outcomes: recalled, already-fired, not-found, unknown
	// OffsetReadings counts committed-offset changes seen; OffsetRewinds
	// (by group) those lower than before a master restart (the master
	// reloads the offsets it persisted last: allowed, the replays follow).
	OffsetReadings int
	OffsetRewinds  map[string]int
	// OffsetMovedBack (by group) counts committed offsets that moved back
	// because a broker told the group's consumer to (PULL_OFFSET_MOVED to
	// a lower offset than it asked for, OpOffsetMoved): both clients adopt
	// and commit the offset the broker names (rocketmq-client-go persists
	// it without the increase-only rule), and the messages in between are
	// redelivered. Not a violation: the broker, not the client, rewound
	// it, and nothing is skipped. Why a broker does it is in
	// docs/reliability.md (finding 6).
	OffsetMovedBack map[string]int
	// OffsetResets counts the queues an operator reset (offset-reset
	// faults); the offsets read after a reset may be lower than before it.
	OffsetResets int
	// EarlyBySkew counts delayed and timer messages delivered before
	// their time by no more than a broker's clock was stepped
	// (clock-jump faults; skewAllowance): by design, not violations.
	EarlyBySkew int
	Required    map[string]int // by group: messages that group had to receive
	Violations  []Violation
	ViolByKind  map[string]int
	Unchecked   []string // guarantees this history could not check, with the reason
	Drained     bool     // the drain ended with every required message seen
	FaultWindow time.Duration
}

// OK reports whether the history was checked without violations.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

type sent struct {
	id        string
	topic     string
	op        string
	key       string
	seq       int
	intent    string
	notBefore *time.Time
	invoke    *Event
	done      *Event
	recall    *Event // a recall that answered "recalled"
	recallNF  *Event // a recall that answered "not-found"
	// recallMaybe is a recall invoked that never answered (timeout, lost
	// connection): it may have taken effect, so the message may be
	// delivered or not.
	recallMaybe *Event
}

func (s *sent) acked() bool { return s.done != nil && s.done.Type == OK }

// required reports whether every group of the message's topic must
// receive it; durable, if set, is the only send status that counts.
func (s *sent) required(durable string) bool {
	if !s.acked() || s.recall != nil || s.recallNF != nil || s.recallMaybe != nil {
		return false
	}
	if durable != "" && s.done.Status != durable {
		return false
	}
	return s.op != OpTx || s.intent == "commit" || s.intent == "unknown-commit"
}

func (s *sent) rolledBack() bool {
	return s.op == OpTx && s.acked() && (s.intent == "rollback" || s.intent == "unknown-rollback")
}

// Check verifies a history (see docs/reliability.md for the guarantees).
func Check(events []Event) (*Report, error) { return CheckLive(events, -1) }

// CheckLive checks the history of a campaign that is still running: a
// message acknowledged, or due, less than grace before the history's last
// event is not required yet (it may still be on its way). A negative grace
// checks a finished history (Check).
func CheckLive(events []Event, grace time.Duration) (*Report, error) {
	c := &checker{r: &Report{Events: len(events), Ops: map[string]*OpCount{}, Messages: map[string]int{},
		Faults: map[string]int{}, Deliveries: map[string]int{}, Duplicates: map[string]int{},
		Required: map[string]int{}, ViolByKind: map[string]int{}, Replays: map[string]int{}, Recalls: map[string]int{},
		OffsetRewinds: map[string]int{}, OffsetMovedBack: map[string]int{}, FaultsFailed: map[string]int{}, FaultErrors: map[string]string{}},
		msgs: map[string]*sent{}, delivered: map[string]map[string][]*Event{}, orderState: map[string]*keyOrder{}}
	if err := c.scanOps(events); err != nil {
		return c.r, err
	}
	c.clocks = clockWindows(events)
	if grace >= 0 && len(events) > 0 {
		c.cutoff = events[len(events)-1].Time.Add(-grace)
	}
	for i := range events {
		if e := &events[i]; e.Op == OpConsume {
			c.deliver(e)
		}
	}
	c.lost()
	c.offsets(events)
	c.r.unchecked(c.setup, c.msgs)
	return c.r, nil
}

// checker is the state of one Check.
type checker struct {
	r          *Report
	setup      *Event
	msgs       map[string]*sent
	delivered  map[string]map[string][]*Event // group -> id -> deliveries
	orderState map[string]*keyOrder           // group/key
	cutoff     time.Time                      // CheckLive: messages acknowledged or due after it are not required
	clocks     []clockWindow                  // the brokers' clock steps (clock-jump faults)
}

// scanOps reads the setup, the faults and every message operation.
func (c *checker) scanOps(events []Event) error {
	r := c.r
	pending := map[string]*Event{} // process -> open invoke
	var faultStart, heal *Event
	for i := range events {
		e := &events[i]
		switch e.Op {
		case OpSetup:
			c.setup = e
		case OpFault:
			if e.Type == Invoke && e.Error != "" {
				r.FaultsFailed[e.Fault]++
				r.FaultErrors[e.Fault] = e.Error
			} else if e.Type == Invoke {
				r.Faults[e.Fault]++
				if faultStart == nil {
					faultStart = e
				}
			}
		case OpHeal:
			heal = e
		case OpCrash:
			r.add(Violation{Kind: VCrash, ID: e.Process,
				What: fmt.Sprintf("%s exited without being killed (%s); its log ends with the reason", e.Process, e.Detail), Events: evs(e)})
		case OpReset:
			if e.Type == OK {
				r.OffsetResets++
			}
		case OpDrain:
			r.Drained = e.Type == OK
		case OpSend, OpAsync, OpBatch, OpOrdered, OpTx, OpDelay, OpTimer:
			r.tally(e)
			if e.Type == Invoke {
				pending[e.Process] = e
				for _, id := range e.IDs {
					c.msgs[id] = &sent{id: id, topic: e.Topic, op: e.Op, key: e.Key, seq: e.Seq,
						intent: e.Intent, notBefore: e.NotBefore, invoke: e}
				}
				continue
			}
			if e.Type == OK {
				r.Messages[e.Op] += len(e.IDs)
			}
			delete(pending, e.Process)
			for _, id := range e.IDs {
				if s := c.msgs[id]; s != nil {
					s.done = e
				}
			}
		case OpRecall:
			r.tally(e)
			c.recall(e)
		}
	}
	if c.setup == nil {
		return fmt.Errorf("%w: no setup event", ErrBadHistory)
	}
	if faultStart != nil && heal != nil {
		r.FaultWindow = heal.Time.Sub(faultStart.Time)
	}
	// Open invokes (the run ended before they completed) count as info.
	for _, e := range pending {
		r.Ops[e.Op].Info++
	}
	if oc := r.Ops[OpRecall]; oc != nil && oc.Invoke > oc.OK+oc.Fail+oc.Info {
		r.Recalls["unknown"] += oc.Invoke - oc.OK - oc.Fail - oc.Info
	}
	for g := range c.setup.Groups {
		c.delivered[g] = map[string][]*Event{}
	}
	return nil
}

// recall notes a recall event on its message.
func (c *checker) recall(e *Event) {
	switch e.Type {
	case Info:
		c.r.Recalls["unknown"]++
	case OK:
		c.r.Recalls[e.Detail]++
	}
	for _, id := range e.IDs {
		s := c.msgs[id]
		switch {
		case s == nil:
		case e.Type == Invoke || e.Type == Info:
			s.recallMaybe = e // until it answers, it may take effect
		case e.Type == Fail || e.Detail == "already-fired":
			s.recallMaybe = nil
		case e.Detail == "recalled":
			s.recall, s.recallMaybe = e, nil
		case e.Detail == "not-found":
			s.recallNF, s.recallMaybe = e, nil
		}
	}
}

// deliver checks one delivery against what was sent before it.
func (c *checker) deliver(e *Event) {
	r := c.r
	r.Deliveries[e.Group]++
	id := ""
	if len(e.IDs) > 0 {
		id = e.IDs[0]
	}
	s := c.msgs[id]
	if s == nil {
		r.add(Violation{Kind: VUnexpected, Group: e.Group, ID: id,
			What: "delivered a message the workload never sent", Events: []Event{*e}})
		return
	}
	byID := c.delivered[e.Group]
	if byID == nil {
		byID = map[string][]*Event{}
		c.delivered[e.Group] = byID
	}
	byID[id] = append(byID[id], e)
	if len(byID[id]) > 1 {
		r.Duplicates[e.Group]++
		for _, d := range byID[id][:len(byID[id])-1] {
			if d.Queue == e.Queue && d.Offset == e.Offset {
				r.Replays[e.Group]++
				break
			}
		}
		return
	}
	if s.done != nil && s.done.Type == Fail {
		r.add(Violation{Kind: VFailedSent, Group: e.Group, ID: id,
			What: "delivered although its send failed definitely", Events: []Event{*s.invoke, *s.done, *e}})
	}
	if s.rolledBack() {
		r.add(Violation{Kind: VRolledBack, Group: e.Group, ID: id,
			What: "rolled-back transactional message delivered", Events: []Event{*s.invoke, *s.done, *e}})
	}
	if s.notBefore != nil && e.Time.Before(s.notBefore.Add(-EarlyTolerance)) {
		skew, fault := skewAllowance(c.clocks, s, e.Time)
		switch {
		case e.Time.Before(s.notBefore.Add(-EarlyTolerance - skew)):
			what := fmt.Sprintf("delivered %v before its time", s.notBefore.Sub(e.Time).Round(time.Millisecond))
			if skew > 0 {
				what += fmt.Sprintf(", more than the %v a broker's clock was stepped", skew)
			}
			r.add(Violation{Kind: VEarly, Group: e.Group, ID: id, What: what, Events: evs(s.invoke, s.done, fault, e)})
		default:
			r.EarlyBySkew++
		}
	}
	if s.recall != nil {
		r.add(Violation{Kind: VRecalled, Group: e.Group, ID: id,
			What: "timer message delivered although its recall succeeded", Events: evs(s.invoke, s.done, s.recall, e)})
	}
	if nf := s.recallNF; nf != nil && e.StoreTime != nil && e.StoreTime.Add(-aheadAllowance(c.clocks, s, e.Time)).After(nf.Time) {
		r.add(Violation{Kind: VRecalled, Group: e.Group, ID: id,
			What:   "timer message fired after a recall answered not-found (nothing may be delivered from then on)",
			Events: evs(s.invoke, s.done, s.recallNF, e)})
	}
	if s.op == OpOrdered && slices.Contains(c.setup.Ordered, e.Group) {
		c.order(s, e)
	}
}

// durable is the only send status that makes a message required ("": any
// status; the setup event's durable_status).
func (c *checker) durable() string {
	if c.setup == nil {
		return ""
	}
	return c.setup.Config[ConfigDurable]
}

// order checks the first delivery e of s in an ordered group: every
// required (acknowledged, with the durable status if one is set) message of the key with a smaller seq (sent before s: a
// key's sends are sequential) must have been delivered before.
func (c *checker) order(s *sent, e *Event) {
	k := e.Group + "/" + s.key
	st := c.orderState[k]
	if st == nil {
		st = &keyOrder{seen: map[int]bool{}}
		c.orderState[k] = st
	}
	st.seen[s.seq] = true
	for q := st.checkedUpTo + 1; q < s.seq; q++ {
		prev := c.msgs[orderedID(s.key, q)]
		if prev == nil || !prev.required(c.durable()) || st.seen[q] {
			continue // controller mode: a write not SEND_OK may be truncated, and skipped
		}
		c.r.add(Violation{Kind: VOrder, Group: e.Group, ID: s.id,
			What:   fmt.Sprintf("key %s: seq %d delivered before acknowledged seq %d", s.key, s.seq, q),
			Events: evs(prev.invoke, prev.done, s.invoke, s.done, e)})
		break
	}
	if s.seq > st.checkedUpTo {
		st.checkedUpTo = s.seq - 1
	}
}

// lost reports every required message some group of its topic never got.
func (c *checker) lost() {
	ids := sortedKeys(c.msgs)
	for _, g := range sortedKeys(c.setup.Groups) {
		topics := c.setup.Groups[g]
		for _, id := range ids {
			s := c.msgs[id]
			if !slices.Contains(topics, s.topic) || !s.required(c.setup.Config[ConfigDurable]) || c.tooRecent(s) {
				continue
			}
			c.r.Required[g]++
			if len(c.delivered[g][id]) == 0 {
				c.r.add(Violation{Kind: VLost, Group: g, ID: id,
					What:   fmt.Sprintf("%s acknowledged (%s) but never delivered to %s", s.op, s.done.Status, g),
					Events: evs(s.invoke, s.done, s.recall)})
			}
		}
	}
}

func (c *checker) tooRecent(s *sent) bool {
	if c.cutoff.IsZero() {
		return false
	}
	return s.done.Time.After(c.cutoff) || (s.notBefore != nil && s.notBefore.After(c.cutoff))
}

// offsets checks that each group's committed offset of a queue never
// moves backwards, except across a restart or a change of the master (a
// promoted slave has the offsets last copied from the old master).
func (c *checker) offsets(events []Event) {
	high := map[string]*Event{}    // group+queue -> highest reading since the last master restart
	before := map[string]*Event{}  // the highest reading before it
	moves := map[string][]*Event{} // group+queue -> the brokers' PULL_OFFSET_MOVED answers
	var promotions []time.Time     // the brokers' promotions to master, from their logs
	for i := range events {
		if e := &events[i]; e.Op == OpOffsetMoved {
			moves[e.Group+" "+e.Queue] = append(moves[e.Group+" "+e.Queue], e)
		} else if e.Op == OpPromoted {
			promotions = append(promotions, e.Time)
		}
	}
	for i := range events {
		e := &events[i]
		switch {
		case e.Op == OpFault && e.Type == Invoke && e.Fault == FKill && strings.HasPrefix(e.Target, "master"),
			e.Op == OpMaster:
			for k, h := range high {
				before[k] = h
			}
			clear(high)
		case e.Op == OpReset:
			// the operator moves it back: readings start again
			delete(high, e.Group+" "+e.Queue)
			delete(before, e.Group+" "+e.Queue)
		case e.Op == OpOffset:
			c.r.OffsetReadings++
			k := e.Group + " " + e.Queue
			if b := before[k]; b != nil {
				if e.Offset < b.Offset {
					c.r.OffsetRewinds[e.Group]++
				}
				delete(before, k)
			}
			if h := high[k]; h != nil && e.Offset < h.Offset && movedBack(moves[k], h, e) {
				c.r.OffsetMovedBack[e.Group]++
			} else if h != nil && e.Offset < h.Offset && promotedBetween(promotions, h, e) {
				// the master changed before the watcher's poll saw it
				c.r.OffsetRewinds[e.Group]++
			} else if h != nil && e.Offset < h.Offset {
				c.r.add(Violation{Kind: VOffsetBack, Group: e.Group, ID: e.Queue,
					What:   fmt.Sprintf("committed offset of %s moved back from %d to %d with no master restart in between", e.Queue, h.Offset, e.Offset),
					Events: evs(h, e)})
			}
			high[k] = e
		}
	}
}

// movedBackWithin bounds how long before a reading that moved back the
// broker's PULL_OFFSET_MOVED answer may be: rocketmq-client-go waits 10 s
// before it commits the moved offset, and readings are 2 s apart.
const movedBackWithin = 30 * time.Second

// movedBack reports whether a broker's PULL_OFFSET_MOVED answer explains
// the committed offset moving back from h to e: the consumer asked for an
// offset at or past h's and was told to move to one at or below e's,
// shortly before e was read.
func movedBack(moves []*Event, h, e *Event) bool {
	for _, m := range moves {
		requested, err := strconv.ParseInt(strings.TrimPrefix(m.Detail, "requested "), 10, 64)
		if err == nil && m.Offset <= e.Offset && requested >= h.Offset && requested > m.Offset &&
			!m.Time.After(e.Time) && e.Time.Sub(m.Time) <= movedBackWithin {
			return true
		}
	}
	return false
}

// promotedBetween reports whether a broker was promoted to master after
// reading h and up to reading e.
func promotedBetween(promotions []time.Time, h, e *Event) bool {
	for _, at := range promotions {
		if at.After(h.Time) && !at.After(e.Time) {
			return true
		}
	}
	return false
}

type keyOrder struct {
	seen        map[int]bool
	checkedUpTo int // every seq up to this one was checked against earlier deliveries
}

// orderedID is the id of seq of key: the workload's naming, which the
// checker relies on to find a key's earlier messages.
func orderedID(key string, seq int) string { return fmt.Sprintf("%s-%d", key, seq) }

func evs(es ...*Event) []Event {
	var out []Event
	for _, e := range es {
		if e != nil {
			out = append(out, *e)
		}
	}
	return out
}

// tally counts e in its operation's OpCount.
func (r *Report) tally(e *Event) {
	c := r.Ops[e.Op]
	if c == nil {
		c = &OpCount{}
		r.Ops[e.Op] = c
	}
	switch e.Type {
	case Invoke:
		c.Invoke++
	case OK:
		c.OK++
	case Fail:
		c.Fail++
	case Info:
		c.Info++
	}
}

func (r *Report) add(v Violation) {
	r.Violations = append(r.Violations, v)
	r.ViolByKind[v.Kind]++
}

func (r *Report) unchecked(setup *Event, msgs map[string]*sent) {
	acked := map[string]int{}
	rolled, recalled := 0, 0
	for _, s := range msgs {
		if s.acked() {
			acked[s.op]++
		}
		if s.rolledBack() {
			rolled++
		}
		if s.recall != nil {
			recalled++
		}
	}
	for _, op := range []string{OpSend, OpAsync, OpBatch, OpOrdered, OpTx, OpDelay, OpTimer} {
		if acked[op] == 0 {
			r.Unchecked = append(r.Unchecked, op+": no acknowledged message, its guarantees were not checked")
		}
	}
	if rolled == 0 {
		r.Unchecked = append(r.Unchecked, "rolled-back transactions: none acknowledged, \"never delivered\" not checked")
	}
	if recalled == 0 {
		r.Unchecked = append(r.Unchecked, "recalls: none succeeded, \"never delivered after recall\" not checked")
	}
	if len(setup.Ordered) == 0 {
		r.Unchecked = append(r.Unchecked, "order: no ordered consumer group")
	}
	if r.OffsetReadings == 0 {
		r.Unchecked = append(r.Unchecked, "committed offsets: no reading, \"never backwards\" not checked")
	}
	if !r.Drained {
		r.Unchecked = append(r.Unchecked, "the drain ended at its deadline: lost messages may be late ones (liveness), see each")
	}
}

// Print writes the report: figures first, then each violation with its
// events (at most maxViolations of them; 0 prints all).
func (r *Report) Print(w io.Writer, maxViolations int) {
	fmt.Fprintf(w, "history: %d events, fault window %v, drained: %v\n", r.Events, r.FaultWindow.Round(time.Second), r.Drained)
	ops := sortedKeys(r.Ops)
	for _, op := range ops {
		c := r.Ops[op]
		if op == OpRecall {
			fmt.Fprintf(w, "  op %-8s invoked %6d  ok %6d  fail %4d  info %4d  recalled %d, already fired %d, not found %d, unknown %d\n",
				op, c.Invoke, c.OK, c.Fail, c.Info, r.Recalls["recalled"], r.Recalls["already-fired"], r.Recalls["not-found"], r.Recalls["unknown"])
			continue
		}
		fmt.Fprintf(w, "  op %-8s invoked %6d  ok %6d  fail %4d  info %4d  messages acked %6d\n", op, c.Invoke, c.OK, c.Fail, c.Info, r.Messages[op])
	}
	total := 0
	var fk []string
	for k, n := range r.Faults {
		total += n
		fk = append(fk, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(fk)
	fmt.Fprintf(w, "faults: %d (%s)\n", total, strings.Join(fk, " "))
	for _, k := range sortedKeys(r.FaultsFailed) {
		fmt.Fprintf(w, "NOT APPLIED: %d %s faults, their injection failed (not counted above): %s\n", r.FaultsFailed[k], k, r.FaultErrors[k])
	}
	for _, g := range sortedKeys(r.Deliveries) {
		fmt.Fprintf(w, "  group %-26s required %6d  deliveries %6d  duplicates %5d (replayed offsets %d, stored twice %d)\n",
			g, r.Required[g], r.Deliveries[g], r.Duplicates[g], r.Replays[g], r.Duplicates[g]-r.Replays[g])
	}
	var rw []string
	for _, g := range sortedKeys(r.OffsetRewinds) {
		rw = append(rw, fmt.Sprintf("%s=%d", g, r.OffsetRewinds[g]))
	}
	fmt.Fprintf(w, "committed offsets: %d changes read, rewinds across master restarts: %d (%s)\n",
		r.OffsetReadings, sum(r.OffsetRewinds), strings.Join(rw, " "))
	if r.OffsetResets > 0 {
		fmt.Fprintf(w, "offset resets by the operator: %d queues reset back in time\n", r.OffsetResets)
	}
	if r.EarlyBySkew > 0 {
		fmt.Fprintf(w, "delayed/timer messages early by no more than a broker's clock step (by design, not violations): %d\n", r.EarlyBySkew)
	}
	if n := sum(r.OffsetMovedBack); n > 0 {
		var mb []string
		for _, g := range sortedKeys(r.OffsetMovedBack) {
			mb = append(mb, fmt.Sprintf("%s=%d", g, r.OffsetMovedBack[g]))
		}
		fmt.Fprintf(w, "committed offsets moved back by a broker's PULL_OFFSET_MOVED (redelivered, not violations): %d (%s)\n", n, strings.Join(mb, " "))
	}
	for _, u := range r.Unchecked {
		fmt.Fprintf(w, "NOT CHECKED: %s\n", u)
	}
	if r.OK() {
		fmt.Fprintf(w, "violations: 0\n")
		return
	}
	var vk []string
	for k, n := range r.ViolByKind {
		vk = append(vk, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(vk)
	fmt.Fprintf(w, "violations: %d (%s)\n", len(r.Violations), strings.Join(vk, " "))
	for i, v := range r.Violations {
		if maxViolations > 0 && i == maxViolations {
			fmt.Fprintf(w, "... %d more\n", len(r.Violations)-i)
			break
		}
		fmt.Fprintf(w, "VIOLATION %s group=%s id=%s: %s\n", v.Kind, v.Group, v.ID, v.What)
		for _, e := range v.Events {
			fmt.Fprintf(w, "    %s\n", oneLine(e))
		}
	}
}

func oneLine(e Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s %s %s %s", e.Index, e.Time.UTC().Format("15:04:05.000000"), e.Process, e.Type, e.Op)
	add := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, " %s=%s", k, v)
		}
	}
	add("topic", e.Topic)
	add("ids", strings.Join(e.IDs, ","))
	add("intent", e.Intent)
	add("status", e.Status)
	add("group", e.Group)
	add("queue", e.Queue)
	add("msg_id", e.MsgID)
	add("detail", e.Detail)
	add("error", e.Error)
	if e.NotBefore != nil {
		add("not_before", e.NotBefore.UTC().Format("15:04:05.000000"))
	}
	if e.StoreTime != nil {
		add("store_time", e.StoreTime.UTC().Format("15:04:05.000"))
	}
	return b.String()
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
