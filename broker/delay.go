package broker

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/tidemq/tide/broker/internal/clock"
	"github.com/tidemq/tide/broker/internal/schedule"
	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/broker/internal/timer"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// visibilityCoders are the store hooks that make the consume-queue tags
// code of a delayed or timer message its delivery time, which the
// schedule and timer services wait for: this file owns when a message
// becomes visible (divertDelayed parks it, the services deliver it).
func visibilityCoders(levels []time.Duration) []store.Option {
	return []store.Option{
		store.WithTagsCoder(schedule.Topic, schedule.TagsCoder(levels)),
		store.WithTagsCoder(timer.Topic, timer.TagsCode),
	}
}

// startDelays builds the delay-level service (SCHEDULE_TOPIC_XXXX) and
// the timer service (arbitrary delivery times), starts them on a master,
// and routes the store's dispatch notifications to them and to held
// pulls.
func (b *Broker) startDelays() error {
	sched, timers, err := b.newDelays()
	if err != nil {
		return err
	}
	b.schedP.Store(sched)
	b.timersP.Store(timers)
	b.store.SetDispatchListener(func(t string, q int32, qo, tags int64, props []byte) {
		switch t {
		case schedule.Topic:
			b.sched().Notify(int(q) + 1)
		case timer.Topic:
			b.timers().Notify()
		default:
			b.polls.Notify(t, q, qo+1, tags, props)
		}
	})
	if b.opts.IsMaster() { // a slave receives the delivered copies through replication
		sched.Start()
		timers.Start()
	}
	return nil
}

// newDelays builds (does not start) the delay-level and timer services
// from the persisted progress, as a broker start does.
func (b *Broker) newDelays() (*schedule.Service, *timer.Service, error) {
	o := b.opts
	levels, err := store.ParseDelayLevels(o.Store.MessageDelayLevel)
	if err != nil {
		return nil, nil, err
	}
	cfgDir := filepath.Join(o.Store.StorePathRootDir, "config")
	sched, err := schedule.New(schedule.Options{Store: b.store, Levels: levels, OffsetPath: filepath.Join(cfgDir, "delayOffset.json"),
		FlushInterval: time.Duration(o.FlushDelayOffsetInterval) * time.Millisecond, Logger: b.log,
		Replicated: b.replicatedOffset})
	if err != nil {
		return nil, nil, fmt.Errorf("delay levels: %w", err)
	}
	timers, err := timer.New(timer.Options{Store: b.store, CheckpointPath: b.timerCheckpointPath(),
		MaxDelay: time.Duration(o.TimerMaxDelaySec) * time.Second, StoreHost: b.storeHost,
		BeforeRestore: b.hooks.beforeRestore, Logger: b.log, Replicated: b.replicatedOffset})
	if err != nil {
		return nil, nil, fmt.Errorf("timers: %w", err)
	}
	return sched, timers, nil
}

// divertDelayed routes a message about to be stored: a timer message
// (TIMER_DELIVER_MS / TIMER_DELAY_MS / TIMER_DELAY_SEC) or a timer recall
// (TIMER_DEL_UNIQKEY) goes to the timer topic, a message with a DELAY
// level to SCHEDULE_TOPIC_XXXX; anything else is left alone. It fails for
// a timer beyond timerMaxDelaySec or a malformed timer property. Without
// Tide extensions the timer properties are left alone (RocketMQ 4.9).
func (b *Broker) divertDelayed(m *protocol.MessageExt) error {
	if b.opts.TideExtensions {
		if _, diverted, err := b.timers().Accept(m, clock.Now()); err != nil || diverted {
			return err
		}
	}
	schedule.Divert(m, b.delayLevels)
	return nil
}

// divertCommitted is divertDelayed for a committed transactional message,
// whose timer was validated when it was prepared.
func (b *Broker) divertCommitted(m *protocol.MessageExt) {
	if err := b.divertDelayed(m); err != nil {
		b.log.Error("committed message with a bad timer delivered at once", "topic", m.Topic, "msgId", m.Property(protocol.PropUniqKey), "err", err)
	}
}

// validateTimer checks the timer properties of a message without changing
// it (a transactional message's timer applies at commit).
func (b *Broker) validateTimer(m *protocol.MessageExt) error {
	if !b.opts.TideExtensions {
		return nil
	}
	cp := *m
	cp.SysFlag &^= protocol.SysFlagTxMask
	cp.Properties = make(map[string]string, len(m.Properties))
	for k, v := range m.Properties {
		cp.Properties[k] = v
	}
	_, _, err := b.timers().Accept(&cp, clock.Now())
	return err
}

// timerCheckpointPath is the timer service's progress file; a slave's
// metadata sync writes its master's checkpoint there.
func (b *Broker) timerCheckpointPath() string {
	return filepath.Join(b.opts.Store.StorePathRootDir, "config", "timerCheckpoint")
}

// replicatedOffset is the commit log offset below which records survive a
// failover: the confirm offset in controller mode (a promoted replica has
// everything below it), the end of the log otherwise (no failover
// truncates a master/slave master's log). The delay-level service holds
// its persisted and replicated progress to it, so a promoted replica never
// resumes past a delivered copy it does not have (chaos finding 4).
func (b *Broker) replicatedOffset() int64 {
	if cm := b.ctl; cm != nil {
		return b.confirmOffset(cm)
	}
	return b.store.MaxPhyOffset()
}
