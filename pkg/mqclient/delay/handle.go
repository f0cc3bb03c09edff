package delay

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Handle identifies a scheduled action for Recall. It is a plain string,
// safe to store in a VARCHAR(255) column next to the business row:
//
//	kind "/" broker "/" topic "/" queueId "/" atUnixMs "/" uniqKey
//	  t1 = broker timer (recallable), l1 = delay level (not recallable)
//
// Broker names, topics and message ids never contain "/".
type Handle string

type handleParts struct {
	timer  bool
	broker string
	topic  string
	queue  int
	at     time.Time
	id     string
}

func (p handleParts) String() string {
	kind := "l1"
	if p.timer {
		kind = "t1"
	}
	return strings.Join([]string{kind, p.broker, p.topic, strconv.Itoa(p.queue), strconv.FormatInt(p.at.UnixMilli(), 10), p.id}, "/")
}

// ParseHandle checks a stored handle.
func ParseHandle(s string) (Handle, error) {
	if _, err := parse(Handle(s)); err != nil {
		return "", err
	}
	return Handle(s), nil
}

func parse(h Handle) (handleParts, error) {
	f := strings.Split(string(h), "/")
	bad := func(why string) (handleParts, error) {
		return handleParts{}, fmt.Errorf("%w: %q: %s", ErrBadHandle, string(h), why)
	}
	if len(f) != 6 {
		return bad("want 6 fields")
	}
	var p handleParts
	switch f[0] {
	case "t1":
		p.timer = true
	case "l1":
	default:
		return bad("unknown kind")
	}
	q, err := strconv.Atoi(f[3])
	if err != nil || q < 0 {
		return bad("queue id")
	}
	ms, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil {
		return bad("time")
	}
	if f[1] == "" || f[2] == "" || f[5] == "" {
		return bad("empty field")
	}
	p.broker, p.topic, p.queue, p.at, p.id = f[1], f[2], q, time.UnixMilli(ms), f[5]
	return p, nil
}

// ID returns the message id (UNIQ_KEY) of the timer, "" if h is invalid.
func (h Handle) ID() string {
	p, err := parse(h)
	if err != nil {
		return ""
	}
	return p.id
}

// At returns the scheduled time (zero if h is invalid).
func (h Handle) At() time.Time {
	p, err := parse(h)
	if err != nil {
		return time.Time{}
	}
	return p.at
}
