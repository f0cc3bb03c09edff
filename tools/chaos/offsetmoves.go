package chaos

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// movedMsg is the broker's log message for a PULL_OFFSET_MOVED answer
// (broker/pull.go); promotedMsg the one for a promotion to master in
// controller mode (broker/roleswitch.go).
const (
	movedMsg    = `msg="pull offset moved"`
	promotedMsg = `msg="controller mode: PROMOTED to master"`
)

// recordOffsetMoves appends to the history every PULL_OFFSET_MOVED answer
// the brokers logged (host/broker.log under dir), with the log's time: the
// checker tells a committed offset the broker moved back (the consumer
// obeys the answer and commits it) from one a client moved back by
// itself. It also appends every promotion to master the brokers logged
// (OpPromoted), so the checker knows when the master changed. It returns
// how many events it recorded.
func recordOffsetMoves(rec *Recorder, dir string) (int, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "*", "broker.log"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, path := range logs {
		host := filepath.Base(filepath.Dir(path))
		f, err := os.Open(path)
		if err != nil {
			return n, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if e, at, ok := parseOffsetMove(sc.Text()); ok {
				e.Process = host
				rec.RecordAt(e, at)
				n++
			} else if at, ok := parsePromotion(sc.Text()); ok {
				rec.RecordAt(Event{Process: host, Type: OK, Op: OpPromoted}, at)
				n++
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// parseOffsetMove reads a "pull offset moved" line of a broker log
// (slog's text format: time=... msg="pull offset moved" broker=B group=G
// topic=T queue=Q requested=R next=N status=S).
func parseOffsetMove(line string) (Event, time.Time, bool) {
	if !strings.Contains(line, movedMsg) {
		return Event{}, time.Time{}, false
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		}
	}
	at, err := time.Parse(time.RFC3339Nano, kv["time"])
	next, err1 := strconv.ParseInt(kv["next"], 10, 64)
	if err != nil || err1 != nil || kv["group"] == "" || kv["topic"] == "" {
		return Event{}, time.Time{}, false
	}
	return Event{Type: OK, Op: OpOffsetMoved, Group: kv["group"], Topic: kv["topic"],
		Queue:  kv["topic"] + "/" + kv["broker"] + "/" + kv["queue"],
		Offset: next, Detail: "requested " + kv["requested"]}, at, true
}

// parsePromotion reads the time of a "PROMOTED to master" line of a
// broker log.
func parsePromotion(line string) (time.Time, bool) {
	if !strings.Contains(line, promotedMsg) {
		return time.Time{}, false
	}
	v, ok := strings.CutPrefix(strings.Fields(line)[0], "time=")
	at, err := time.Parse(time.RFC3339Nano, v)
	return at, ok && err == nil
}
