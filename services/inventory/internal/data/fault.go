package data

import (
	"log/slog"

	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/kit/fault"
)

// Fault switch names of the inventory service (contract.md).
const (
	FaultCrashAfterEffect = fault.CrashAfterEffect
	FaultDeliverTwice     = fault.DeliverTwice
)

// NewFaults returns the service's fault switches, with those the config
// enables armed for every shot. messaging.duplicate_delivery is an older
// name of fault.deliver_twice.
func NewFaults(c *conf.Fault, m *conf.Messaging, l *slog.Logger) *fault.Set {
	s := fault.New(c.GetAdmin(), l.With("module", "inventory/fault"), FaultCrashAfterEffect, FaultDeliverTwice)
	if c.GetCrashAfterEffect() {
		_ = s.Arm(FaultCrashAfterEffect, 0, 0)
	}
	if c.GetDeliverTwice() || m.GetDuplicateDelivery() {
		_ = s.Arm(FaultDeliverTwice, 0, 0)
	}
	return s
}
