// Package fault names the payment service's fault switches (demos and
// end-to-end tests, see the service README) and builds them as a
// kit/fault Set from the configuration. Everything else (arming, shots,
// crash, the /v1/faults handler) is kit/fault's; this package only adds
// the payment API's conventions: the admin API is gated by mounting the
// handler (fault.admin) and a PUT without "enabled" arms the switch.
package fault

import (
	"log/slog"
	nethttp "net/http"
	"time"

	kit "github.com/tidemq/tide/services/kit/fault"
)

// Names of the switches.
const (
	// CrashAfterCommit: exit after the local debit committed, before
	// END_TRANSACTION.
	CrashAfterCommit = kit.CrashAfterCommit
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
	CrashAfterEffect = kit.CrashAfterEffect
	// DeliverTwice: every published message is sent a second time.
	DeliverTwice = kit.DeliverTwice
)

// Names lists every switch, in the order GET /v1/faults shows them.
var Names = []string{CrashAfterCommit, CrashBeforeCommit, SlowLocalTx, GatewayTimeoutAfterCapture,
	GatewayDuplicateCallback, CrashAfterEffect, DeliverTwice}

// Set, Status, ExitCode and ErrUnknown are kit/fault's.
type (
	Set    = kit.Set
	Status = kit.Status
)

// ExitCode is the status a crash fault ends the process with.
const ExitCode = kit.ExitCode

// ErrUnknown: no switch has that name.
var ErrUnknown = kit.ErrUnknown

// Spec arms a switch at start.
type Spec struct {
	Enabled bool
	// Count: 0 fires every time, N fires N times then disarms.
	Count int
	// Delay is the hold of slow_local_tx.
	Delay time.Duration
}

// New returns the switches Names, armed as in initial (the config);
// unknown names and specs not Enabled are ignored. exit ends the process
// on a crash fault (os.Exit when nil). The Set allows the admin API:
// the service mounts Handler only when fault.admin is on.
func New(initial map[string]Spec, exit func(code int), l *slog.Logger) *Set {
	s := kit.New(true, l, Names...)
	s.SetExit(exit)
	for n, sp := range initial {
		if sp.Enabled {
			_ = s.Arm(n, sp.Count, sp.Delay) // unknown names are ignored
		}
	}
	return s
}

// Handler serves /v1/faults with the payment API's conventions (see the
// package doc and kit/fault's Handler); encode is the server's error
// encoder (api.Input.EncodeError).
func Handler(s *Set, encode func(nethttp.ResponseWriter, *nethttp.Request, error)) nethttp.Handler {
	return s.Handler(kit.ArmWhenEnabledOmitted(), kit.Errors(encode))
}
