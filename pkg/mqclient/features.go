package mqclient

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// BrokerFeatures says what one broker offers beyond the RocketMQ 4.x
// protocol, as its runtime info (GET_BROKER_RUNTIME_INFO) tells: a Tide
// broker lists its extensions (protocol.RuntimeTideExtensions), a RocketMQ
// broker only its version. A Tide broker run with tideExtensions=false
// answers as RocketMQ 4.9.7 and has none of them.
type BrokerFeatures struct {
	BrokerName string // set by MasterFeatures
	Addr       string
	// VersionDesc is the broker's brokerVersionDesc ("V4_9_7", "V5_1_4",
	// or Tide's "Tide (RocketMQ 4.x protocol)").
	VersionDesc string
	// Extensions are the Tide extensions served (protocol.Ext* names).
	Extensions []string
	// Timers: Message.DeliverAt is honoured (Tide's timers, or a
	// RocketMQ 5 broker's timer wheel). Without it a broker stores the
	// message and delivers it at once.
	Timers bool
	// TimerRecall: Admin.RecallTimer is answered (Tide only); a RocketMQ 5
	// broker takes Producer.Recall instead.
	TimerRecall bool
	// HalfMessages: Admin.HalfMessages, ResumeHalfCheck and EndHalfMessage
	// are answered (Tide only).
	HalfMessages bool
	// HAStatus: Admin.HAStatus is answered (Tide only).
	HAStatus bool
	// IdempotentSend: the broker stores a producer's retried message once
	// (Tide only; idempotence.go).
	IdempotentSend bool
}

// Has reports whether the broker serves the Tide extension ext.
func (f BrokerFeatures) Has(ext string) bool { return slices.Contains(f.Extensions, ext) }

// Major returns the RocketMQ major version of VersionDesc ("V5_1_4": 5),
// 4 for a Tide broker (it speaks the 4.x protocol), 0 when unknown.
func (f BrokerFeatures) Major() int {
	if len(f.Extensions) > 0 || strings.HasPrefix(f.VersionDesc, "Tide") {
		return 4
	}
	v, ok := strings.CutPrefix(f.VersionDesc, "V")
	if !ok {
		return 0
	}
	major, _, _ := strings.Cut(v, "_")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0
	}
	return n
}

// featuresOf derives BrokerFeatures from a runtime info table.
func featuresOf(addr string, kv map[string]string) BrokerFeatures {
	f := BrokerFeatures{Addr: addr, VersionDesc: kv[protocol.RuntimeVersionDesc],
		Extensions: protocol.ParseExtensions(kv[protocol.RuntimeTideExtensions])}
	f.Timers = f.Has(protocol.ExtTimers) || f.Major() >= 5
	f.TimerRecall = f.Has(protocol.ExtTimerRecall)
	f.HalfMessages = f.Has(protocol.ExtHalfMessages)
	f.HAStatus = f.Has(protocol.ExtHAStatus)
	f.IdempotentSend = f.Has(protocol.ExtIdempotentSend)
	return f
}

// Features asks the broker at addr what it offers (one runtime info
// request, bounded by the Admin's request timeout and ctx).
func (a *Admin) Features(ctx context.Context, addr string) (BrokerFeatures, error) {
	kv, err := a.RuntimeInfo(ctx, addr)
	if err != nil {
		return BrokerFeatures{Addr: addr}, fmt.Errorf("mqclient: features of %s: %w", addr, err)
	}
	return featuresOf(addr, kv), nil
}

// MasterFeatures returns the features of every master broker the
// NameServers know, sorted by broker name. A pattern that needs an
// extension checks them all at start: a topic's queues may live on any
// master, and a new master may join later with other features.
func (a *Admin) MasterFeatures(ctx context.Context) ([]BrokerFeatures, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ci.BrokerAddrTable))
	for n := range ci.BrokerAddrTable {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]BrokerFeatures, 0, len(names))
	for _, n := range names {
		addr, ok := ci.BrokerAddrTable[n].BrokerAddrs[protocol.MasterID]
		if !ok {
			continue // no master now: nothing to send to
		}
		f, err := a.Features(ctx, addr)
		if err != nil {
			return nil, err
		}
		f.BrokerName = n
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mqclient: no master broker registered: %w", ErrBrokerNotFound)
	}
	return out, nil
}
