// Package consume holds the middleware the services put around their
// message handlers (pkg/mqclient.Middleware).
package consume

import (
	"context"
	"log/slog"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/kit/fault"
)

// LogOutcome logs every delivery once its handler returned: a failure
// at WARN ("handler failed, will retry"), a success at DEBUG, with
// topic, group, tag, msg id, the message key (the order id) and the
// reconsume count.
func LogOutcome(l *slog.Logger, group string) mqclient.Middleware {
	return func(h mqclient.Handler) mqclient.Handler {
		return func(ctx context.Context, m *mqclient.MessageExt) error {
			err := h(ctx, m)
			attrs := []any{"topic", m.Topic, "group", group, "tag", m.Tag, "msg_id", m.MsgID, "order_id", m.Key(),
				"reconsume", m.ReconsumeTimes}
			if err != nil {
				l.WarnContext(ctx, "handler failed, will retry", append(attrs, "err", err)...)
			} else {
				l.DebugContext(ctx, "handled", attrs...)
			}
			return err
		}
	}
}

// CrashAfterEffect is the crash fault named name (crash_after_effect):
// when the handler returned nil (its effect committed), the process ends
// before the acknowledgement, so the broker redelivers an applied
// message.
func CrashAfterEffect(faults *fault.Set, name string) mqclient.Middleware {
	return func(h mqclient.Handler) mqclient.Handler {
		return func(ctx context.Context, m *mqclient.MessageExt) error {
			err := h(ctx, m)
			if err == nil {
				faults.Crash(name, "topic", m.Topic, "msg_id", m.MsgID, "order_id", m.Key())
			}
			return err
		}
	}
}
