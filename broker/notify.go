package broker

import (
	"errors"
	"sync"
	"time"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// NOTIFY_CONSUMER_IDS_CHANGED is a hint: a member that misses one still
// rebalances on its own timer (20 s in RocketMQ clients). So the broker
// bounds what notifications cost instead of insisting on each:
//
//   - Coalescing: a group's first membership change is notified at once
//     and opens a window of notifyWindow; changes within it are merged
//     into one notification when it closes (which opens the next window).
//     So a lone change costs no delay, and N members joining (or leaving)
//     in a burst cost about two notifications per member per window, not
//     N per member.
//   - No waiting on one member: each notification is written in a
//     goroutine of its own, bounded by notifyWriteTimeout
//     (remoting.Conn.TryInvokeOneway): a member that stops reading costs
//     at most that long, delays nobody else, and its notification is
//     dropped (and counted).
const (
	notifyWindow       = 200 * time.Millisecond
	notifyWriteTimeout = 3 * time.Second
)

// notifier coalesces and sends NOTIFY_CONSUMER_IDS_CHANGED per group.
type notifier struct {
	b       *Broker
	mu      sync.Mutex
	windows map[string]*notifyWindowState // groups with an open window
}

type notifyWindowState struct {
	timer *time.Timer
	dirty bool // a change arrived since the window opened
}

func newNotifier(b *Broker) *notifier {
	return &notifier{b: b, windows: map[string]*notifyWindowState{}}
}

// changed records a membership change of group: its members are told now
// if no window is open, else when the window closes.
func (n *notifier) changed(group string) {
	n.mu.Lock()
	if w, open := n.windows[group]; open {
		w.dirty = true
		n.mu.Unlock()
		return
	}
	n.open(group)
	n.mu.Unlock()
	n.b.notifyConsumerIDsChanged(group)
}

// open starts a window for group (n.mu held).
func (n *notifier) open(group string) {
	w := &notifyWindowState{}
	w.timer = time.AfterFunc(notifyWindow, func() {
		n.mu.Lock()
		if n.windows[group] != w {
			n.mu.Unlock()
			return // stopped
		}
		delete(n.windows, group)
		if !w.dirty {
			n.mu.Unlock()
			return
		}
		n.open(group) // changes keep coming: one notification per window
		n.mu.Unlock()
		n.b.notifyConsumerIDsChanged(group)
	})
	n.windows[group] = w
}

// stop cancels the open windows (Shutdown: the members are about to lose
// the broker anyway).
func (n *notifier) stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for g, w := range n.windows {
		w.timer.Stop()
		delete(n.windows, g)
	}
}

// notifyConsumerIDsChanged tells every member of group to rebalance, each
// in a goroutine of its own bounded by notifyWriteTimeout, unless the
// group turned notifications off or Shutdown has begun.
func (b *Broker) notifyConsumerIDsChanged(group string) {
	if cfg, ok := b.groups.Get(group); ok && !cfg.NotifyConsumerIDsChangedEnable {
		return
	}
	if b.stopping() {
		return
	}
	h := protocol.ConsumerGroupHeader{ConsumerGroup: group}
	hdr := h.Encode() // shared read-only by the senders
	for _, ch := range b.clients.ConsumerChannels(group) {
		c, ok := ch.(*remoting.Conn)
		if !ok {
			continue
		}
		go func() {
			err := c.TryInvokeOneway(protocol.NewRequest(protocol.NotifyConsumerIDsChanged, hdr, nil), notifyWriteTimeout)
			switch {
			case err == nil:
				b.metrics.notifications.WithLabelValues("sent").Inc()
			case errors.Is(err, remoting.ErrWriteBusy), errors.Is(err, remoting.ErrTimeout):
				b.metrics.notifications.WithLabelValues("dropped").Inc()
				b.log.Info("consumer did not take a NOTIFY_CONSUMER_IDS_CHANGED in time; dropped (it rebalances on its own timer)",
					"group", group, "conn", c.RemoteAddr(), "err", err)
			default:
				b.metrics.notifications.WithLabelValues("failed").Inc()
				b.log.Debug("notify consumer ids changed", "group", group, "conn", c.RemoteAddr(), "err", err)
			}
		}()
	}
}
