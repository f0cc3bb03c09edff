package protocol

import (
	"slices"
	"strings"
)

// Runtime info keys (GET_BROKER_RUNTIME_INFO body) that say what a broker
// is and which Tide extensions it serves. RocketMQ brokers fill
// brokerVersionDesc ("V4_9_7", "V5_1_4") and brokerVersion (the MQVersion
// ordinal); Tide adds tideExtensions, a comma-separated list of the
// Ext* names it serves. A Tide broker with tideExtensions=false answers
// as RocketMQ 4.9.7 does and sends no tideExtensions key.
const (
	RuntimeVersionDesc    = "brokerVersionDesc"
	RuntimeVersion        = "brokerVersion"
	RuntimeTideExtensions = "tideExtensions"
)

// Tide extension names in RuntimeTideExtensions.
const (
	// ExtTimers: arbitrary delivery times (RocketMQ 5's TIMER_DELIVER_MS,
	// TIMER_DELAY_SEC, TIMER_DELAY_MS and TIMER_DEL_UNIQKEY).
	ExtTimers = "timers"
	// ExtTimerRecall: TideRecallTimer (10004).
	ExtTimerRecall = "timerRecall"
	// ExtHalfMessages: TideListHalfMessages, TideResumeHalfCheck and
	// TideForceEndTransaction (10001-10003).
	ExtHalfMessages = "halfMessages"
	// ExtHAStatus: TideHAStatus (10006).
	ExtHAStatus = "haStatus"
	// ExtIdempotentSend: TideInitProducerID (10007) and the PropProducerStamp
	// check on sends (idempotent.go).
	ExtIdempotentSend = "idempotentSend"
)

// TideExtensions lists every extension a Tide broker serves with
// tideExtensions=true, in the order RuntimeTideExtensions carries them.
func TideExtensions() []string {
	return []string{ExtTimers, ExtTimerRecall, ExtHalfMessages, ExtHAStatus, ExtIdempotentSend}
}

// ParseExtensions splits a RuntimeTideExtensions value; empty gives none.
func ParseExtensions(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}
