package broker

import (
	"github.com/tidemq/tide/broker/internal/ha"
	"github.com/tidemq/tide/broker/internal/schedule"
	"github.com/tidemq/tide/broker/internal/timer"
	"github.com/tidemq/tide/broker/internal/transaction"
)

// roleState is the broker's current role: brokerRole and the id it
// registers with the NameServers. Without controller mode it is the
// configured one for the process's life; in controller mode the
// controller changes it at runtime (controllermode.go), so every request
// path reads it through b.role, never from b.opts.
type roleState struct {
	role string // ASYNC_MASTER, SYNC_MASTER or SLAVE
	id   int64  // NameServer broker id: 0 for a master
}

func (b *Broker) setRole(role string, id int64) {
	prev := b.role.Swap(&roleState{role: role, id: id})
	if role != "SLAVE" && prev != nil && prev.role == "SLAVE" && b.idem != nil {
		b.idem.becameMaster(b.store.MaxPhyOffset()) // a promoted slave: apply its log first
	}
}

// isMaster reports whether the broker takes writes now.
func (b *Broker) isMaster() bool { return b.role.Load().role != "SLAVE" }

// brokerRole returns the current brokerRole.
func (b *Broker) brokerRole() string { return b.role.Load().role }

// brokerID returns the current NameServer broker id.
func (b *Broker) brokerID() int64 { return b.role.Load().id }

// haServer returns the HA server (a master), or nil.
func (b *Broker) haServer() *ha.Server { return b.haSrv.Load() }

// haClient returns the HA client (a slave), or nil.
func (b *Broker) haClient() *ha.Client { return b.haCli.Load() }

// sched returns the delay-level service (nil before Start).
func (b *Broker) sched() *schedule.Service { return b.schedP.Load() }

// timers returns the timer service (nil before Start).
func (b *Broker) timers() *timer.Service { return b.timersP.Load() }

// tx returns the transaction service (nil before Start).
func (b *Broker) tx() *transaction.Service { return b.txs.Load() }
